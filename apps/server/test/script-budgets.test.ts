import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, memoryLogger, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issues 21 (item 3) and 22 (item 1): one request must not keep the script processes busy.
// Assertions are on outcomes and order, never on times.

type Obj = Record<string, unknown>;
const ROOT = { 'svc-ssh-key': 'test-root-key' };

const spin = (ms: number) => `var t0 = Date.now(); while (Date.now() - t0 < ${ms}) {}`;

describe.each(appStores())('recursion is counted per request, as Deployd counts it (%s store)', (store) => {
  let h: AppHandle;
  beforeAll(async () => {
    h = await runApp(
      {
        'app.json': { passwordCost: 4 },
        '.svc/keys.json': { 'test-root-key': true },
        'resources/rec/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
        // Issue 22: On Get reads its own collection; counted as a depth, 3 objects fan out 3^9 times.
        'resources/rec/get.js': `svc.rec.get(function (r, err) { this.more = r; if (err) this.err = err; });`,
        'resources/chain/config.json': { type: 'Collection', properties: { level: { type: 'number' } } },
        'resources/chain/get.js': `
          var kids = await svc.chain.get({ level: this.level + 1 });
          this.reached = kids && kids[0] ? kids[0].reached : this.level;
        `,
      },
      { store },
    );
    for (let n = 0; n < 3; n++) await h.request('POST', '/rec', { n });
    for (let level = 0; level <= 30; level++) await h.request('POST', '/chain', { level });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it('GET /rec?$limitRecursion=9 makes 9 calls of GET /rec in all; the 10th gets "Recursive call to GET /rec detected" in its callback', async () => {
    const res = await h.request('GET', '/rec?$limitRecursion=9');
    expect(res.status).toBe(200);
    // Walk the tree: count the calls that were made (a `more` list) and those refused (`err`).
    let made = 0;
    const errors = new Set<unknown>();
    const walk = (list: unknown): void => {
      if (!Array.isArray(list)) return;
      for (const o of list as Obj[]) {
        if (Array.isArray(o.more)) {
          made++;
          walk(o.more);
        }
        if (o.err !== undefined) errors.add(o.err);
      }
    };
    walk(res.body);
    expect(made).toBe(9);
    expect([...errors]).toEqual(['Recursive call to GET /rec detected']);
  });

  it('$limitRecursion of an anonymous request is capped at 10; root may ask for more', async () => {
    const reached = async (query: string, headers?: Record<string, string>) =>
      ((await h.request('GET', `/chain?level=0${query}`, undefined, headers)).body as Obj[])[0]!.reached;
    expect(await reached('&$limitRecursion=1000000')).toBe(10);
    expect(await reached('&$limitRecursion=7')).toBe(7);
    expect(await reached('&$limitRecursion=20', ROOT)).toBe(20);
  });
});

describe('a request has one CPU budget for all its scripts', () => {
  let h: AppHandle;
  let spinId: string;
  beforeAll(async () => {
    h = await runApp({
      'app.json': { passwordCost: 4, scripts: { requestCpuMs: 400, timeoutMs: 2000 } },
      'resources/plain/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
      'resources/spin/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
      // Issue 21 (b): each stretch stays under the time limit, the whole takes 20 x 100 ms.
      'resources/spin/get.js': `for (var i = 0; i < 20; i++) { ${spin(100)} await svc.plain.get(); } this.done = true;`,
    });
    spinId = ((await h.request('POST', '/spin', { n: 1 })).body as Obj).id as string;
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it('a script that spins and awaits in a loop is stopped once the request used its CPU budget, with a clear error', async () => {
    const res = await h.request('GET', `/spin/${spinId}`);
    expect(res.status).toBe(500);
    expect((res.body as Obj).message).toMatch(/CPU budget of 400 ms/);
    // The server goes on serving.
    expect((await h.request('GET', '/plain')).status).toBe(200);
  });
});

describe('the script queue', () => {
  let h: AppHandle;
  const logger = memoryLogger();
  const ids: Record<string, string> = {};
  const slow: Record<number, string> = {};
  beforeAll(async () => {
    h = await runApp(
      {
        // requestWallMs 80 s (default 30 s): the script processes run at nice 19, and beside busy
        // processes at load 15-20 they were runnable but got under 1 s of CPU in 40 s, so queued
        // requests passed 30 s and were dropped (500); these cases are about order, not time.
        'app.json': { passwordCost: 4, scripts: { isolates: 2, timeoutMs: 3000, queueLimit: 40, requestWallMs: 80_000 } },
        'resources/slow/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
        'resources/slow/get.js': `${spin(250)} console.log('slow ran ' + this.n);`,
        'resources/cheap/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
        // Not a static plan (the var): it must wait for a script process like any script.
        'resources/cheap/get.js': `var cheap = true; this.cheap = cheap;`,
        'resources/noisy/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
        'resources/noisy/get.js': `for (var i = 0; i < 50; i++) console.log('the same line');`,
      },
      { logger },
    );
    for (const name of ['cheap', 'noisy']) ids[name] = ((await h.request('POST', `/${name}`, { n: 1 })).body as Obj).id as string;
    // Slow objects by n: the script logs which one ran.
    for (const n of [0, 1, 2, 3, 4, 5, 6, 7, 100, 101, 102, 103, 104, 105, 200, 300]) slow[n] = ((await h.request('POST', '/slow', { n })).body as Obj).id as string;
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it('while one client floods a slow On Get, a cheap script of another resource is answered first', async () => {
    // The cheap script's cost is known once it ran.
    expect((await h.request('GET', `/cheap/${ids.cheap}`)).status).toBe(200);
    let slowDone = 0;
    const flood = Array.from({ length: 8 }, (_, n) =>
      h.request('GET', `/slow/${slow[n]}`).then((r) => {
        slowDone++;
        return r.status;
      }),
    );
    // Once the flood has started running.
    while (!logger.lines.some((l) => l.includes('slow ran'))) await new Promise((r) => setTimeout(r, 20));
    const cheap = await h.request('GET', `/cheap/${ids.cheap}`);
    const slowBeforeCheap = slowDone;
    expect(cheap.body).toMatchObject({ cheap: true });
    expect(await Promise.all(flood)).toEqual(Array(8).fill(200));
    // A slow run or two may finish meanwhile (three once, on a loaded 2-core machine running two
    // test files at a time); before the fix the cheap run waited behind half of them (4 of 8).
    expect(slowBeforeCheap).toBeLessThan(4);
    // 90 s: the script processes run at the lowest priority; beside two busy loops (load 10 to
    // 14) the eight slow runs took over 30 s in 4 runs of 12, and left the next case behind them.
  }, 90_000);

  it('a client that goes away has its queued script runs dropped', async () => {
    const gone = (l: string) => /slow ran 10\d$/.test(l);
    const controllers = Array.from({ length: 6 }, () => new AbortController());
    const statuses: (number | string)[] = [];
    const sent = controllers.map((c, n) =>
      fetch(`${h.url}/slow/${slow[100 + n]}`, { signal: c.signal }).then(
        (r) => void statuses.push(r.status),
        (err: Error) => void statuses.push(err.name),
      ),
    );
    // Until one of them ran; all of them answered before that is a failure worth its own message
    // (once, on a machine loaded by other runs, this wait outlasted the test's 30 s).
    while (!logger.lines.some(gone)) {
      if (statuses.length === controllers.length) throw new Error(`all answered before any ran: ${statuses.join(', ')}; last lines: ${logger.lines.slice(-5).join(' | ')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const c of controllers) c.abort();
    await Promise.all(sent);
    // The slow runs of one client and resource run one at a time, in order: once this one ran,
    // every earlier one that was not dropped has run too.
    expect((await h.request('GET', `/slow/${slow[200]}`)).status).toBe(200);
    const ran = logger.lines.filter(gone).length;
    expect(ran).toBeLessThan(6);
    // 90 s: in CI (2 cores, two files at a time, the script-heavy files side by side) the first
    // run of the six once came after more than 30 s; nothing here measures time.
  }, 90_000);

  it('past the queue limit, requests are answered 503 with Retry-After', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, () => h.request('GET', `/slow/${slow[300]}`)));
    const refused = answers.filter((a) => a.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.headers.get('retry-after')).toBe('1');
    expect(answers.every((a) => a.status === 200 || a.status === 503)).toBe(true);
  }, 60_000);

  it('a line repeated by a script is logged at most 10 times in a row', async () => {
    expect((await h.request('GET', `/noisy/${ids.noisy}`)).status).toBe(200);
    // Console lines cross with the run's outcome or just after it.
    await new Promise((r) => setTimeout(r, 200));
    expect(logger.lines.filter((l) => l.endsWith('the same line')).length).toBe(10);
  });
});
