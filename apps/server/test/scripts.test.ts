import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordingRealtime } from '@svc/core';
import { appStores, memoryLogger, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

type Obj = Record<string, unknown> & { id: string };
const todo = { title: { type: 'string' }, owner: { type: 'string' }, secret: { type: 'string' }, score: { type: 'number' }, log: { type: 'array' }, locked: { type: 'string' } };

/** An app whose scripts exercise every Script API name; they record what they saw into the objects. */
const files = {
  'app.json': { passwordCost: 4 },
  'resources/users/config.json': { type: 'UserCollection', properties: { name: { type: 'string' } } },
  'resources/todos/config.json': { type: 'Collection', properties: todo },
  'resources/todos/validate.js': `
    this.log = (this.log || []).concat(['validate']);
    errorIf(this.title === 'bad', 'title', 'is bad');
    errorUnless(this.title !== 'worse', 'title', 'is worse');
    error('dummy', 'never') ; if (true) { /* error() then continue */ }
  `.replace("error('dummy', 'never') ;", "if (this.title === 'two-errors') { error('a', 'first'); error('b', 'second'); }"),
  'resources/todos/post.js': `
    this.log.push('post');
    cancelIf(this.title === 'cancel-me', 'cancelled on post', 409);
    cancelUnless(this.title !== 'cancel-401', 'not allowed', 401);
    if (me) this.owner = me.id;
    this.added = 'by script';
    this.previousWasEmpty = JSON.stringify(previous) === '{}';
    this.sawInternal = internal; this.sawRoot = isRoot; this.sawQueryFlag = query.flag || null;
    this.sawMethod = ctx.method;
    protect('locked');
    emit('todos:create', { id: this.id, title: this.title });
    if (me) emit('users', { id: me.id }, 'todos:mine', { title: this.title });
  `,
  'resources/todos/put.js': `
    this.log.push('put');
    this.titleChanged = changed('title');
    this.scoreChanged = changed('score');
    this.wasTitle = previous.title;
    protect('owner');
    hide('secret');
    cancelIf(this.title === 'no-put', 'put refused');
  `,
  'resources/todos/get.js': `
    if (this.title === 'hidden-in-list') cancel('not for you');
    hide('secret');
    this.isMine = isMe(this.owner);
    this.computed = (this.score || 0) * 2;
    if (query.leak) { leaked = 'from ' + this.id; }
    this.sawLeak = typeof leaked === 'undefined' ? null : 'leak';
  `,
  'resources/todos/delete.js': `
    cancelIf(this.title === 'keep', 'cannot delete', 403);
    console.log('deleting', this.title);
  `,
  'resources/counts/config.json': { type: 'Collection', properties: { n: { type: 'number' }, child: { type: 'object' }, depth: { type: 'number' }, all: { type: 'array' }, viaCallback: { type: 'number' } } },
  'resources/counts/post.js': `
    // svc client from a script: promise and callback both work; this is bound in callbacks.
    var self = this;
    var list = await svc.todos.get({ title: 'seen-by-script' });
    this.all = list.map(function (t) { return t.title; });
    svc.todos.get({ title: 'seen-by-script' }, function (result, err) { this.viaCallback = result.length; });
    var made = await svc.todos.post({ title: 'made by script' });
    this.child = { title: made.title, internal: made.sawInternal };
  `,
  'resources/tree/config.json': { type: 'Collection', properties: { name: { type: 'string' }, parent: { type: 'string' }, children: { type: 'array' } } },
  'resources/tree/get.js': `
    var self = this;
    var kids = await svc.tree.get({ parent: this.id });
    self.children = kids === null ? null : kids.map(function (k) { return { name: k.name, children: k.children }; });
  `,
  'resources/chain/config.json': { type: 'Collection', properties: { depth: { type: 'number' } } },
  'resources/chain/get.js': `
    if (this.depth < 10) {
      var next = await svc.chain.get({ depth: this.depth + 1, $limitRecursion: 20 });
      this.next = next && next[0] ? next[0].reached || next[0].depth : null;
      this.reached = this.next;
    } else { this.reached = this.depth; }
  `,
  'resources/loop/config.json': { type: 'Collection', properties: { kind: { type: 'string' } } },
  'resources/loop/post.js': `
    if (this.kind === 'loop') { while (true) {} }
    if (this.kind === 'memory') { var a = []; while (true) a.push(new Array(1e6).fill(1)); }
    if (this.kind === 'throw') { null.boom; }
    this.ok = true;
  `,
};

describe.each(appStores())('event scripts (%s store)', { concurrent: true }, (store) => {
  // The stores side by side (their apps are apart); each store's tests one at a time, in order.
  describe('one test at a time', { concurrent: false }, () => {
    let h: AppHandle;
    const realtime = new RecordingRealtime();
    const logger = memoryLogger();

    beforeAll(async () => {
      h = await runApp(files, { store, realtime, logger });
    });
    afterAll(async () => {
      await h.close();
    });

    const post = async (path: string, body: unknown, request = h.request) => request('POST', path, body);

    it('create runs On Validate then On Post; their changes to this are stored, added properties included; previous is {}', async () => {
      const res = await post('/todos?flag=yes', { title: 'first', locked: 'client value' });
      expect(res.status).toBe(200);
      const obj = res.body as Obj;
      expect(obj).toMatchObject({ log: ['validate', 'post'], added: 'by script', previousWasEmpty: true, sawInternal: false, sawRoot: false, sawQueryFlag: 'yes', sawMethod: 'POST' });
      expect(obj).not.toHaveProperty('locked');
      const stored = (await h.request('GET', `/todos/${obj.id}`)).body as Obj;
      expect(stored.added).toBe('by script');
    });

    it('update runs On Validate then On Put; changed(), previous, protect() and hide()', async () => {
      const obj = (await post('/todos', { title: 'upd', owner: 'someone', secret: 's', score: 1 })).body as Obj;
      const res = await h.request('PUT', `/todos/${obj.id}`, { title: 'upd2', owner: 'hijack' });
      expect(res.status).toBe(200);
      const body = res.body as Obj;
      expect(body.log).toEqual(['validate', 'post', 'validate', 'put']);
      expect(body).toMatchObject({ titleChanged: true, scoreChanged: false, wasTitle: 'upd' });
      expect(body).not.toHaveProperty('secret');
      const raw = (await h.request('GET', `/todos/${obj.id}?$skipEvents=true`, undefined, { 'svc-ssh-key': 'dev' })).body as Obj;
      expect(raw.owner).toBe('someone'); // protect('owner') in On Put kept the client's 'hijack' out
      expect(raw.secret).toBe('s');
    });

    it('error() collects every error under errors and the script goes on; neither On Post nor On Put runs after it', async () => {
      const bad = await post('/todos', { title: 'two-errors' });
      expect(bad.status).toBe(400);
      // Deployd's {errors, status} with statusCode: no "validation failed" message.
      expect(bad.body).toEqual({ status: 400, statusCode: 400, errors: { a: 'first', b: 'second' } });
      const errIf = await post('/todos', { title: 'bad' });
      expect(errIf.body).toEqual({ status: 400, statusCode: 400, errors: { title: 'is bad' } });
      const errUnless = await post('/todos', { title: 'worse' });
      expect(errUnless.body).toMatchObject({ errors: { title: 'is worse' } });
      const before = realtime.messages.length;
      expect(realtime.messages.slice(before)).toEqual([]);
    });

    it('cancel(), cancelIf() and cancelUnless() stop with their status (default 400)', async () => {
      expect((await post('/todos', { title: 'cancel-me' })).body).toEqual({ status: 409, statusCode: 409, message: 'cancelled on post' });
      expect((await post('/todos', { title: 'cancel-401' })).body).toEqual({ status: 401, statusCode: 401, message: 'not allowed' });
      const obj = (await post('/todos', { title: 'put-me' })).body as Obj;
      expect((await h.request('PUT', `/todos/${obj.id}`, { title: 'no-put' })).body).toEqual({ status: 400, statusCode: 400, message: 'put refused' });
      expect(((await h.request('GET', `/todos/${obj.id}`)).body as Obj).title).toBe('put-me');
    });

    it('On Get runs per object; cancel() in a list drops the object silently, on one object it answers the error', async () => {
      const hidden = (await post('/todos', { title: 'hidden-in-list' })).body as Obj;
      const list = (await h.request('GET', '/todos')).body as Obj[];
      expect(list.find((o) => o.id === hidden.id)).toBeUndefined();
      expect(list.every((o) => o.computed !== undefined && !('secret' in o))).toBe(true);
      // get.js never names this.log or this.added: they are not sent to the script, yet answered.
      const made = (await post('/todos', { title: 'kept-props' })).body as Obj;
      const again = ((await h.request('GET', '/todos')).body as Obj[]).find((o) => o.id === made.id);
      expect(again).toMatchObject({ title: 'kept-props', log: ['validate', 'post'], added: 'by script', computed: 0 });
      const one = await h.request('GET', `/todos/${hidden.id}`);
      expect(one.body).toEqual({ status: 400, statusCode: 400, message: 'not for you' });
    });

    it('On Get does not run on the result of a POST or PUT', async () => {
      const obj = (await post('/todos', { title: 'no-get', score: 2 })).body as Obj;
      expect(obj).not.toHaveProperty('computed');
      const put = (await h.request('PUT', `/todos/${obj.id}`, { score: 3 })).body as Obj;
      expect(put).not.toHaveProperty('computed');
    });

    it('me, isMe() and a user-targeted emit', async () => {
      const alice = h.client();
      const user = (await alice('POST', '/users', { username: 'alice', password: 'pw' })).body as Obj;
      await alice('POST', '/users/login', { username: 'alice', password: 'pw' });
      const mine = (await alice('POST', '/todos', { title: 'alice todo' })).body as Obj;
      expect(mine.owner).toBe(user.id);
      const seen = (await alice('GET', `/todos/${mine.id}`)).body as Obj;
      expect(seen.isMine).toBe(true);
      expect(((await h.client()('GET', `/todos/${mine.id}`)).body as Obj).isMine).toBe(false);
      expect(realtime.messages).toContainEqual({ message: 'todos:mine', data: { title: 'alice todo' }, users: { path: '/users', query: { id: user.id } } });
      expect(realtime.messages).toContainEqual({ message: 'todos:create', data: { id: mine.id, title: 'alice todo' } });
    });

    it('On Delete runs and may cancel; console.log reaches the server log prefixed by resource and event', async () => {
      const keep = (await post('/todos', { title: 'keep' })).body as Obj;
      expect((await h.request('DELETE', `/todos/${keep.id}`)).body).toEqual({ status: 403, statusCode: 403, message: 'cannot delete' });
      const gone = (await post('/todos', { title: 'gone' })).body as Obj;
      expect((await h.request('DELETE', `/todos/${gone.id}`)).status).toBe(204);
      expect(logger.lines.some((l) => l.includes('todos On Delete') && l.includes('deleting gone'))).toBe(true);
    });

    it('$skipEvents skips scripts for root only', async () => {
      const asRoot = (await post('/todos?$skipEvents=true', { title: 'raw' }, (m, p, b) => h.request(m, p, b, { 'svc-ssh-key': 'k' }))).body as Obj;
      expect(asRoot).not.toHaveProperty('log');
      const notRoot = (await post('/todos?$skipEvents=true', { title: 'not raw' })).body as Obj;
      expect(notRoot.log).toEqual(['validate', 'post']);
      const bodyFlag = (await post('/todos', { title: 'not raw 2', $skipEvents: true })).body as Obj;
      expect(bodyFlag.log).toEqual(['validate', 'post']);
    });

    it('the svc client inside scripts: promises and callbacks, internal true, the same session', async () => {
      await post('/todos', { title: 'seen-by-script' });
      const res = await post('/counts', {});
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ all: ['seen-by-script'], viaCallback: 1, child: { title: 'made by script', internal: true } });
    });

    it('$limitRecursion: a recursive On Get builds a tree two levels deep by default', async () => {
      const root = (await post('/tree', { name: 'root' })).body as Obj;
      const a = (await post('/tree', { name: 'a', parent: root.id })).body as Obj;
      await post('/tree', { name: 'a1', parent: a.id });
      const got = (await h.request('GET', `/tree/${root.id}`)).body as Obj;
      expect(got.children).toEqual([{ name: 'a', children: [{ name: 'a1', children: null }] }]);
    });

    it('nested internal calls ten levels deep answer', async () => {
      for (let d = 0; d <= 10; d++) await post('/chain', { depth: d });
      const res = await h.request('GET', '/chain?depth=0');
      expect(((res.body as Obj[])[0] as Obj).reached).toBe(10);
    });

    it('no global scope is shared between runs', async () => {
      const obj = (await post('/todos', { title: 'leaky' })).body as Obj;
      const first = (await h.request('GET', `/todos/${obj.id}?leak=1`)).body as Obj;
      expect(first.sawLeak).toBe('leak');
      const second = (await h.request('GET', `/todos/${obj.id}`)).body as Obj;
      expect(second.sawLeak).toBeNull();
    });

    it('an endless loop, a memory bomb and a throwing script fail that request with 500 and a clear message; the server keeps serving', async () => {
      const loop = await post('/loop', { kind: 'loop' });
      expect(loop.status).toBe(500);
      expect((loop.body as { message: string }).message).toMatch(/resources\/loop\/post\.js.*(time|timed out)/i);
      expect((await post('/loop', { kind: 'ok' })).body).toMatchObject({ ok: true });
      const bomb = await post('/loop', { kind: 'memory' });
      expect(bomb.status).toBe(500);
      expect((bomb.body as { message: string }).message).toMatch(/memory/i);
      expect((await post('/loop', { kind: 'ok' })).body).toMatchObject({ ok: true });
      const thrown = await post('/loop', { kind: 'throw' });
      expect(thrown.status).toBe(500);
      expect((thrown.body as { message: string }).message).toMatch(/resources\/loop\/post\.js:4/);
      expect(logger.lines.some((l) => l.includes('resources/loop/post.js:4'))).toBe(true);
      expect((await h.request('GET', '/todos')).status).toBe(200);
    }, 30_000);

    it('100 concurrent requests running scripts all answer correctly', async () => {
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => post('/todos', { title: `c${i}`, score: i })));
      expect(results.every((r, i) => r.status === 200 && (r.body as Obj).title === `c${i}` && (r.body as Obj).added === 'by script')).toBe(true);
      const list = (await h.request('GET', `/todos?${encodeURIComponent(JSON.stringify({ title: { $regex: '^c\\d+$' } }))}`)).body as Obj[];
      expect(list).toHaveLength(100);
      expect(list.every((o) => o.computed === (o.score as number) * 2)).toBe(true);
    });
  });
});

describe('script errors at start', () => {
  const broken = {
    'resources/things/config.json': { type: 'Collection', properties: { a: { type: 'string' } } },
    'resources/things/post.js': 'var ok = 1;\nif (ok {\n',
  };

  it('development: the server starts, the file and line are logged, and that event answers 500 with the message', async () => {
    const logger = memoryLogger();
    const h = await runApp(broken, { logger });
    try {
      expect(logger.lines.some((l) => l.includes('resources/things/post.js:2'))).toBe(true);
      const res = await h.request('POST', '/things', { a: 'x' });
      expect(res.status).toBe(500);
      expect((res.body as { message: string }).message).toContain('resources/things/post.js:2');
      expect((await h.request('GET', '/things')).status).toBe(200);
    } finally {
      await h.close();
    }
  });

  it('production: the server refuses to start, naming file and line', async () => {
    await expect(runApp(broken, { env: 'production' })).rejects.toMatchObject({ filename: 'resources/things/post.js', line: 2 });
  });
});
