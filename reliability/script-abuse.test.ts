import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryLogger, runApp } from '../apps/server/test/helpers/app.js';
import type { AppHandle } from '../apps/server/test/helpers/app.js';

// Issue 21 (item 3), the slow cases: one request must not keep the script processes busy, even
// from root (which may ask for any $limitRecursion): the request's budget bounds everything, and
// once it has answered the script processes serve other requests again. Order, not times.

const ROOT = { 'svc-ssh-key': 'test-root-key' };
type Obj = Record<string, unknown>;

describe('one request cannot keep the script processes busy', () => {
  let h: AppHandle;
  const logger = memoryLogger();
  let cheapId: string;

  beforeAll(async () => {
    h = await runApp(
      {
        'app.json': { passwordCost: 4, scripts: { isolates: 2, requestCpuMs: 2000, requestWallMs: 10_000 } },
        '.svc/keys.json': { 'test-root-key': true },
        'resources/rec/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
        // Reads its own collection: with 3 objects, each call fans out into 3 more.
        'resources/rec/get.js': `svc.rec.get(function (r, err) { this.more = r; if (err) this.err = err; });`,
        'resources/cheap/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
        'resources/cheap/get.js': `this.cheap = true;`,
        'resources/spinner/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
        'resources/spinner/get.js': `for (var i = 0; i < 30; i++) { var t = Date.now(); while (Date.now() - t < 300) {} await svc.cheap.get(); }`,
      },
      { logger },
    );
    for (let n = 0; n < 3; n++) await h.request('POST', '/rec', { n });
    cheapId = ((await h.request('POST', '/cheap', { n: 1 })).body as Obj).id as string;
    await h.request('POST', '/spinner', { n: 1 });
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('root asking $limitRecursion=1000000 is stopped by the request budget; afterwards other scripts are served', async () => {
    const res = await h.request('GET', '/rec?$limitRecursion=1000000', undefined, ROOT);
    // Stopped by its CPU or time budget (500), or finished within it: never a runaway.
    expect([200, 500]).toContain(res.status);
    if (res.status === 500) expect((res.body as Obj).message).toMatch(/budget/);
    // The pool is not still busy with that tree: a cheap script answers, and so do later ones.
    for (let i = 0; i < 5; i++) expect(((await h.request('GET', `/cheap/${cheapId}`)).body as Obj).cheap).toBe(true);
  });

  it('an anonymous $limitRecursion=1000000 is capped: the tree is small and the answer complete', async () => {
    const res = await h.request('GET', '/rec?$limitRecursion=1000000');
    expect(res.status).toBe(200);
    let calls = 0;
    const walk = (list: unknown): void => {
      if (!Array.isArray(list)) return;
      for (const o of list as Obj[]) {
        if (Array.isArray(o.more)) {
          calls++;
          walk(o.more);
        }
      }
    };
    walk(res.body);
    expect(calls).toBe(10);
  });

  it('spinning between internal calls, 30 x 300 ms: stopped at the CPU budget; the log does not repeat one line without end', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, async () => (await h.request('GET', '/spinner')).status));
    expect(answers).toEqual(Array(6).fill(500));
    const same = new Map<string, number>();
    for (const line of logger.lines) same.set(line, (same.get(line) ?? 0) + 1);
    const top = [...same].sort((a, b) => b[1] - a[1])[0];
    expect(top?.[1] ?? 0, top?.[0]).toBeLessThanOrEqual(10);
    expect(((await h.request('GET', `/cheap/${cheapId}`)).body as Obj).cheap).toBe(true);
  });
});
