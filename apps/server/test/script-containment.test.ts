import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// The seven attacks of issue 10, each against a real server in production: the exploit fails,
// the server answers the next request, and the right request gets the error.

const ROOT = { 'svc-ssh-key': 'test-root-key' };

const files = {
  'app.json': { passwordCost: 4, scripts: { timeoutMs: 700, memoryLimitMb: 48, isolates: 2 } },
  '.svc/keys.json': { 'test-root-key': true },
  'resources/items/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
  'resources/attacks/config.json': { type: 'Collection', properties: { kind: { type: 'string' }, patch: { type: 'object' }, n: { type: 'number' } } },
  'resources/attacks/post.js': `
    if (this.kind === 'loop') { while (true) {} }
    if (this.kind === 'pollute') { Object.prototype.isAdmin = true; Math.evil = 1; JSON.evil = 1; Array.prototype.evil = 1; }
    if (this.kind === 'stringify') { JSON.stringify = function () { return 'broken'; }; }
    if (this.kind === 'dict-oom') { var o = {}, i = 0; while (true) o['k' + i++] = { a: i, b: 'v' + i }; }
    if (this.kind === 'wasm') { var m = []; for (var i = 0; i < 8; i++) m.push(new WebAssembly.Memory({ initial: 1024 })); }
    if (this.kind === 'chain') { await 1; Promise.resolve().then(function () { while (true) {} }); await 2; }
  `,
  'resources/attacks/put.js': `
    function merge(target, source) {
      for (var key in source) {
        if (source[key] && typeof source[key] === 'object') { if (!target[key]) target[key] = {}; merge(target[key], source[key]); }
        else target[key] = source[key];
      }
      return target;
    }
    if (ctx.body.extra) merge({}, ctx.body.extra);
  `,
  'resources/users/config.json': { type: 'UserCollection', properties: { isAdmin: { type: 'boolean' } } },
  'resources/secrets/config.json': { type: 'Collection', properties: { text: { type: 'string' } } },
  'resources/secrets/get.js': `if (!me || !me.isAdmin) cancel('admins only', 403);`,
  'resources/harmless/config.json': { type: 'Collection', properties: { n: { type: 'number' } } },
  'resources/harmless/post.js': 'this.n = (this.n || 0) + 1;',
};

let h: AppHandle;
let itemId: string;

beforeAll(async () => {
  h = await runApp(files, { env: 'production' });
  const item = await h.request('POST', '/items', { title: 'plain' }, ROOT);
  itemId = (item.body as { id: string }).id;
  await h.request('POST', '/secrets', { text: 'only for admins' }, ROOT);
}, 60_000);

afterAll(async () => {
  await h?.close();
});

// A non-property key: it is not stored, but the script sees it in ctx.body.
const pollute = (extra: unknown) => h.request('PUT', `/attacks/${attackId}`, { extra });
let attackId: string;

describe('issue 10: scripts cannot hurt the server', () => {
  it('1. an endless loop in one On Post does not hold up requests that run no script', async () => {
    let loopsAnswered = 0;
    const loops = Array.from({ length: 4 }, () => h.request('POST', '/attacks', { kind: 'loop' }).finally(() => loopsAnswered++));
    await new Promise((r) => setTimeout(r, 150));
    for (let i = 0; i < 20; i++) {
      const res = await h.request('GET', `/items/${itemId}`);
      expect(res.status).toBe(200);
    }
    // Before: each GET waited for a loop's time limit, so the loops answered first. Now all 20 are
    // answered while the loops still run (an order, not a clock: a loaded machine is slower).
    expect(loopsAnswered).toBe(0);
    const results = await Promise.all(loops);
    for (const res of results) expect(res).toMatchObject({ status: 500, body: { status: 500, message: 'script timed out' } });
    expect((await h.request('POST', '/harmless', {})).body).toMatchObject({ n: 1 });
  });

  it('2. prototype pollution, direct or through a deep merge of a request body, reaches no other run', async () => {
    const created = await h.request('POST', '/attacks', { kind: 'pollute' });
    expect(created.status).toBe(200);
    attackId = (created.body as { id: string }).id;
    expect((await pollute(JSON.parse('{"__proto__": {"isAdmin": true}}'))).status).toBe(200);
    // A logged-in user who is not an admin, behind a guard reading me.isAdmin: still refused.
    await h.request('POST', '/users', { username: 'mallory', password: 'pw-mallory' }, ROOT);
    const mallory = h.client();
    expect((await mallory('POST', '/users/login', { username: 'mallory', password: 'pw-mallory' })).status).toBe(200);
    expect(await mallory('GET', '/secrets')).toMatchObject({ status: 200, body: [] });
    expect(await mallory('GET', '/users/me')).toMatchObject({ status: 200, body: { username: 'mallory' } });
  });

  it('3. replacing JSON.stringify in a script does not kill the server', async () => {
    for (let i = 0; i < 3; i++) expect((await h.request('POST', '/attacks', { kind: 'stringify' })).status).toBe(200);
    expect((await h.request('POST', '/harmless', {})).body).toMatchObject({ n: 1 });
    expect((await h.request('GET', `/items/${itemId}`)).status).toBe(200);
  });

  it('4. a V8 fatal out-of-memory error in a script fails that request only; the server lives', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await h.request('POST', '/attacks', { kind: 'dict-oom' });
      // On a loaded machine the CPU time limit may stop the loop before the heap runs out: either
      // way that request fails and nothing else does.
      expect(res).toMatchObject({ status: 500, body: { status: 500, message: expect.stringMatching(/^(internal server error|script timed out)$/) } });
      expect((await h.request('POST', '/harmless', {})).body).toMatchObject({ n: 1 });
    }
  });

  it('5. WebAssembly memory cannot be allocated by a script', async () => {
    const before = process.memoryUsage().rss;
    const res = await h.request('POST', '/attacks', { kind: 'wasm' });
    expect(res.status).toBe(500);
    expect(process.memoryUsage().rss - before).toBeLessThan(100 * 1024 * 1024);
  });

  it('6. harmless requests sent in the same tick as a looping promise chain are all answered, and only the chain gets the timeout', async () => {
    const all = await Promise.all([
      h.request('POST', '/attacks', { kind: 'chain' }),
      ...Array.from({ length: 10 }, () => h.request('POST', '/harmless', {})),
    ]);
    expect(all[0]).toMatchObject({ status: 500, body: { message: 'script timed out' } });
    for (const res of all.slice(1)) expect(res).toMatchObject({ status: 200, body: { n: 1 } });
  });

  it('7. a 10,000-deep non-property key in a PUT body for a script that reads ctx is a 400', async () => {
    let deep = '{}';
    for (let i = 0; i < 10_000; i++) deep = `{"k":${deep}}`;
    const res = await fetch(`${h.url}/attacks/${attackId}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: `{"extra":${deep}}` });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ status: 400 });
    expect((await h.request('GET', `/items/${itemId}`)).status).toBe(200);
  });
});
