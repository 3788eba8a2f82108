import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordingRealtime } from '@svc/core';
import { appStores, memoryLogger, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 22: Deployd 1.2 behaviour of event scripts (protect(), the id on create, ctx.query,
// undeclared names), on both stores.

type Obj = Record<string, unknown> & { id: string };

const files = {
  'app.json': { passwordCost: 4 },
  'resources/accounts/config.json': {
    type: 'Collection',
    properties: { name: { type: 'string' }, role: { type: 'string' }, secret: { type: 'string' }, note: { type: 'string' } },
  },
  // As in Deployd apps: no id in On Validate tells a create (sign-up) from an update.
  'resources/accounts/validate.js': `
    this.sawCreate = !this.id;
    if (this.name !== 'free-all') { protect('role'); hide('secret'); }
  `,
  'resources/accounts/post.js': "this.postSawId = typeof this.id === 'string' && this.id.length > 0;\n",
  'resources/accounts/put.js': `
    this.readRole = this.role;
    try { this.id = 'hijacked'; } catch (e) { this.idError = e.message; }
    try { this.role = 'admin'; } catch (e) { this.roleError = (e instanceof TypeError) + ': ' + e.message; }
    if (this.name === 'sneak') {
      Object.defineProperty(this, 'role', { value: 'admin', enumerable: true, writable: true, configurable: true });
      Object.defineProperty(this, 'id', { value: 'hijacked', enumerable: true, writable: true, configurable: true });
      try { Object.assign(this, { role: 'admin' }); } catch (e) {}
      Object.setPrototypeOf(this, { role: 'admin' });
      this.sneaked = this.role;
    }
    if (this.name === 'sneak-delete') { delete this.role; delete this.id; }
    if (this.name === 'free') { unprotect('role'); unhide('secret'); this.role = 'editor'; }
    if (this.name === 'uncaught') this.role = 'admin';
  `,
  'resources/accounts/aftercommit.js': "emit('account-committed', { event: event, id: this.id, role: this.role });\n",
  'resources/people/config.json': { type: 'UserCollection', properties: { signup: { type: 'boolean' } } },
  'resources/people/validate.js': 'this.signup = !this.id;\n',
  'resources/refs/config.json': { type: 'Collection', properties: { kind: { type: 'string' } } },
  'resources/refs/post.js': `
    if (this.kind === 'typeof') this.t = typeof coordinate;
    if (this.kind === 'read') { if (coordinate) { this.kind = 'never'; } }
    if (this.kind === 'implicit') { total = 1; total += 1; this.t = String(total); }
  `,
  'resources/pages/config.json': { type: 'Collection', properties: { n: { type: 'number' }, level: { type: 'number' }, reached: { type: 'number' } } },
  'resources/pages/beforerequest.js': `
    if (event === 'GET' && query.one) { ctx.query.$limit = 1; delete ctx.query.one; ctx.query.$sort = { n: 1 }; }
    if (event === 'GET' && query.huge) { ctx.query.$limit = 1e300; delete query.huge; }
    if (event === 'GET' && query.evil) { ctx.query.$where = 'sleep(1000)'; delete ctx.query.evil; }
    if (event === 'GET' && query.deep) { ctx.query.$limitRecursion = 1000; delete ctx.query.deep; }
    if (event === 'GET') this.sameObject = ctx.query === query;
  `,
  'resources/pages/get.js': `
    if (typeof this.level === 'number') {
      var kids = await svc.pages.get({ level: this.level + 1, deep: true });
      this.reached = kids && kids[0] ? kids[0].reached : this.level;
    }
  `,
};

describe.each(appStores())('Deployd 1.2 event scripts, issue 22 (%s store)', (store) => {
  let t: AppHandle;
  const root = { 'svc-ssh-key': 'any' };
  const realtime = new RecordingRealtime();
  const logger = memoryLogger();

  beforeAll(async () => {
    t = await runApp(files, { store, realtime, logger });
  }, 30_000);
  afterAll(async () => {
    await t?.close();
  });

  const q = (query: object) => `?${encodeURIComponent(JSON.stringify(query))}`;
  async function post(path: string, body: object): Promise<Obj> {
    const res = await t.request('POST', path, body);
    expect(res.status).toBe(200);
    return res.body as Obj;
  }
  const stored = async (path: string, id: string) => (await t.request('GET', `${path}/${id}`, undefined, root)).body as Obj;

  it('a create has no id in On Validate, one in On Post and after; script-added properties are stored', async () => {
    const made = await post('/accounts', { name: 'ann', role: 'user' });
    expect(made).toMatchObject({ sawCreate: true, postSawId: true });
    // protect('role') on create: the client's value is not stored.
    expect(made.role).toBeUndefined();
    const saved = await stored('/accounts', made.id);
    expect(saved).toMatchObject({ id: made.id, name: 'ann', sawCreate: true, postSawId: true });
    expect(realtime.messages.filter((m) => m.message === 'account-committed').at(-1)?.data).toEqual({ event: 'POST', id: made.id });
    const updated = await t.request('PUT', `/accounts/${made.id}`, { note: 'x' });
    expect(updated.body).toMatchObject({ sawCreate: false });
  });

  it('a sign-up has no id in a UserCollection\'s On Validate; an update has one', async () => {
    const made = await post('/people', { username: `u${Date.now()}`, password: 'pw' });
    expect(made.signup).toBe(true);
    const updated = await t.request('PUT', `/people/${made.id}`, { signup: true }, root);
    expect(updated.body).toMatchObject({ id: made.id, signup: false });
  });

  it('after protect(), this.p reads the stored value and assigning it throws a catchable TypeError; id is protected on update', async () => {
    const made = await post('/accounts', { name: 'bob' });
    await t.request('PUT', `/accounts/${made.id}`, { role: 'user', $skipEvents: true }, root);
    const res = await t.request('PUT', `/accounts/${made.id}`, { role: 'admin', note: 'hi' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: made.id,
      role: 'user',
      note: 'hi',
      readRole: 'user',
      roleError: "true: Cannot modify protected property 'role'",
      idError: "Cannot modify protected property 'id'",
    });
    expect(await stored('/accounts', made.id)).toMatchObject({ id: made.id, role: 'user', note: 'hi', idError: "Cannot modify protected property 'id'" });
  });

  it.each(['sneak', 'sneak-delete'])('a script that goes around protect() (%s) changes nothing stored', async (name) => {
    const made = await post('/accounts', { name });
    await t.request('PUT', `/accounts/${made.id}`, { role: 'user', $skipEvents: true }, root);
    const res = await t.request('PUT', `/accounts/${made.id}`, { role: 'admin' });
    expect(res.status).toBe(200);
    const saved = await stored('/accounts', made.id);
    expect(saved).toMatchObject({ id: made.id, role: 'user' });
    expect((await t.request('GET', `/accounts/hijacked`, undefined, root)).status).toBe(404);
  });

  it('hidden properties are stored, only left out of the answer; unhide() and unprotect() undo across events', async () => {
    const made = await post('/accounts', { name: 'carol', secret: 's1' });
    expect(made.secret).toBeUndefined();
    expect(await stored('/accounts', made.id)).toMatchObject({ secret: 's1' });
    const hidden = await t.request('PUT', `/accounts/${made.id}`, { secret: 's2' });
    expect((hidden.body as Obj).secret).toBeUndefined();
    expect(await stored('/accounts', made.id)).toMatchObject({ secret: 's2' });
    const freed = await post('/accounts', { name: 'free', secret: 's3' });
    const res = await t.request('PUT', `/accounts/${freed.id}`, { secret: 's4', role: 'ignored' });
    expect(res.body).toMatchObject({ secret: 's4', role: 'editor' });
    expect(await stored('/accounts', freed.id)).toMatchObject({ secret: 's4', role: 'editor' });
  });

  it('an uncaught assignment to a protected property fails the request and stores nothing', async () => {
    const made = await post('/accounts', { name: 'uncaught' });
    const res = await t.request('PUT', `/accounts/${made.id}`, { note: 'changed' });
    expect(res.status).toBe(500);
    expect((res.body as { message: string }).message).toMatch(/Cannot modify protected property 'role'/);
    expect((await stored('/accounts', made.id)).note).toBeUndefined();
  });

  it('reading a name declared nowhere fails the request (500) and stores nothing; typeof and implicit globals work', async () => {
    const res = await t.request('POST', '/refs', { kind: 'read' });
    expect(res.status).toBe(500);
    expect((res.body as { message: string }).message).toMatch(/coordinate is not defined/);
    expect((await post('/refs', { kind: 'typeof' })).t).toBe('undefined');
    expect((await post('/refs', { kind: 'implicit' })).t).toBe('2');
    const all = (await t.request('GET', '/refs', undefined, root)).body as Obj[];
    expect(all.map((o) => o.kind).sort()).toEqual(['implicit', 'typeof']);
  });

  it('ctx.query is query: a change through ctx.query in On BeforeRequest applies to the request', async () => {
    for (const n of [3, 1, 2]) await post('/pages', { n });
    const one = await t.request('GET', `/pages${q({ one: true, n: { $lt: 10 } })}`);
    expect(one.status).toBe(200);
    expect((one.body as Obj[]).map((o) => o.n)).toEqual([1]);
  });

  it('the query rules still apply after On BeforeRequest changed the query', async () => {
    expect((await t.request('GET', `/pages${q({ huge: true })}`)).status).toBe(400);
    const evil = await t.request('GET', `/pages${q({ evil: true })}`);
    expect(evil.status).toBe(400);
  });

  it('$limitRecursion set by On BeforeRequest does not lift the recursion limit or its cap', async () => {
    for (let level = 0; level < 15; level++) await post('/pages', { level });
    const reached = async (query: object) => ((await t.request('GET', `/pages${q({ level: 0, ...query })}`)).body as Obj[])[0]?.reached;
    // Default: 2 calls of GET /pages per request, whatever On BeforeRequest asked for.
    expect(await reached({ deep: true })).toBe(2);
    // A client asking for more gets at most the cap (10), also when On BeforeRequest asks for 1000.
    expect(await reached({ deep: true, $limitRecursion: 1000 })).toBe(10);
  });
});
