import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordingRealtime } from '@svc/core';
import { startApp } from '@svc/server';
import { appStores, memoryLogger, runApp, writeApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 12: behaviours of Deployd 1.2 that apps rely on, on both stores.

type Obj = Record<string, unknown> & { id: string };

const files = {
  'app.json': { passwordCost: 4 },
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'resources/items/config.json': { type: 'Collection', properties: { name: { type: 'string' }, n: { type: 'number' }, tags: { type: 'array' } } },
  'resources/guarded/config.json': { type: 'Collection', properties: { name: { type: 'string' } } },
  'resources/guarded/delete.js': "cancelIf(this.name === 'keep', 'cannot delete ' + this.name, 403);\n",
  'resources/parents/config.json': { type: 'Collection', properties: { name: { type: 'string' } } },
  'resources/parents/get.js': `
    svc.items.get({ name: 'child' })
      .then(function (data) { this.children = data.map(function (c) { return c.n; }).sort(); return data.length; })
      .then(function (count) { this.count = count; if (count > 99) throw new Error('never'); })
      .catch(function (e) { this.caught = String(e); })
      .finally(function () { this.finallyRan = true; });
  `,
  'resources/notes/config.json': { type: 'Collection', properties: { message: { type: 'string' }, other: { type: 'string' } } },
  'resources/notes/put.js': "protect('message');\nthis.other = 'saw ' + this.message;\n",
  'resources/guests/config.json': { type: 'UserCollection', properties: { banned: { type: 'boolean' }, logins: { type: 'number' }, lastTry: { type: 'string' } } },
  'resources/guests/login.js': `
    if (success && this.banned) cancel('banned', 403);
    if (success) { this.logins = (this.logins || 0) + 1; this.password = 'nope'; this.username = 'renamed'; }
    emit('login-attempt', { success: success, known: !!this.id });
  `,
  'resources/members/config.json': { type: 'UserCollection', properties: { note: { type: 'string' }, seen: { type: 'string' }, secretNote: { type: 'string', private: true } } },
  'resources/members/put.js': "this.seen = 'put ' + this.note;\n",
  'resources/members/aftercommit.js': "emit('member-committed', { event: event, id: this.id, note: this.note });\n",
  'resources/members/beforerequest.js': "if (event === 'GET' && query.deny) cancel('denied', 401);\n",
  'resources/members/get.js': "hide('seen');\nif (query.cancelMe) cancel('no', 403);\nif (query.tag) this.note = 'got ' + query.tag;\n",
  'resources/whoami/config.json': { type: 'Collection', properties: { mode: { type: 'string' }, result: { type: 'string' } } },
  'resources/whoami/post.js': `
    if (this.mode === 'fn') svc.members.me(function (u) { this.result = u ? u.username : 'none'; });
    if (this.mode === 'query-fn') svc.members.me({ tag: 'q' }, function (u) { this.result = u ? u.note : 'none'; });
    if (this.mode === 'promise') this.result = (await svc.members.me({ tag: 'p' })).note;
  `,
  // Issue 22, 12c: a failed svc.* call's error carries statusCode beside status, as in Deployd.
  'resources/lookups/config.json': { type: 'Collection', properties: { err: { type: 'object' }, caught: { type: 'object' }, invalid: { type: 'object' } } },
  'resources/lookups/post.js': `
    svc.items.get('0123456789abcdef', function (r, err) { this.err = err; });
    try { await svc.items.get('0123456789abcdef'); } catch (e) { this.caught = e; }
    try { await svc.members.post({ password: 'pw' }); } catch (e) { this.invalid = e; }
  `,
  'resources/tries/config.json': { type: 'UserCollection', properties: { fails: { type: 'number' }, lastTry: { type: 'string' }, locked: { type: 'boolean' } } },
  'resources/tries/login.js': `
    this.$NOCASCADE = true;
    this.stray = 'x';
    if (!this.id) this.fails = 99;
    if (this.id && !success) {
      this.fails = (this.fails || 0) + 1;
      this.username = 'hacked'; this.password = 'hacked'; this.id = 'other';
      if (this.fails >= 2) cancel('locked out', 423);
    }
    if (success) { this.lastTry = 'ok'; if (this.locked) cancel('locked', 403); }
  `,
  'resources/tries/put.js': "this.lastTry = 'put ran';\n",
  'resources/tries/aftercommit.js': "emit('tries-committed', { id: this.id });\n",
  'resources/resets/config.json': { type: 'Collection', properties: { target: { type: 'string' }, newName: { type: 'string' } } },
  'resources/resets/post.js': "await svc.members.put(this.target, { username: this.newName, password: 'reset' });\n",
  'resources/guarded2/config.json': { type: 'Collection', properties: { name: { type: 'string' }, owner: { type: 'string' }, tag: { type: 'string' } } },
  'resources/guarded2/beforerequest.js': `
    if (event === 'DELETE' && !isRoot) cancel('no deletes here', 403);
    if (event === 'GET' && query.mine) { query.owner = 'me-' + query.mine; delete query.mine; }
    if (event === 'POST') this.tag = 'set before request';
  `,
  'resources/guarded2/post.js': "this.sawTag = this.tag;\n",
  'resources/guarded2/aftercommit.js': `
    emit('committed', { event: event, id: this.id, name: this.name, stored: true });
    if (this.name === 'boom') throw new Error('after commit failed');
  `,
  'resources/typed/config.json': { type: 'Collection', properties: { title: { type: 'string' }, done: { type: 'boolean' } } },
  'resources/typed/post.js': "if (this.title === 'make it a number') this.title = 5;\n",
  'resources/depth/config.json': { type: 'Collection', properties: { level: { type: 'number' } } },
  'resources/depth/get.js': `
    var kids = await svc.depth.get({ level: this.level + 1 });
    this.reached = kids && kids[0] ? kids[0].reached : this.level;
  `,
  'resources/rejects/config.json': { type: 'Collection', properties: { kind: { type: 'string' } } },
  'resources/rejects/post.js': `
    if (this.kind === 'string') throw 'fail';
    if (this.kind === 'object') throw { message: 'no way', statusCode: 401 };
    if (this.kind === 'after-await') { await svc.items.get({ name: 'none' }); throw 'after await'; }
    if (this.kind === 'then') svc.items.get({}).then(function () { throw 'then fail'; });
    if (this.kind === 'callback') svc.items.get({}, function () { throw 'callback fail'; });
    if (this.kind === 'caught') svc.items.get({}).then(function () { throw 'handled'; }).catch(function (e) { this.caught = e; });
    if (this.kind === 'type') null.boom;
    if (this.kind === 'type-in-then') svc.items.get({}).then(function () { null.boom; });
  `,
};

describe.each(appStores())('Deployd 1.2 compatibility (%s store)', { concurrent: true }, (store) => {
  // The stores side by side (their apps are apart); each store's tests one at a time, in order.
  describe('one test at a time', { concurrent: false }, () => {
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

    async function post(path: string, body: object): Promise<Obj> {
      const res = await t.request('POST', path, body);
      expect(res.status).toBe(200);
      return res.body as Obj;
    }
    const q = (query: object) => `?${encodeURIComponent(JSON.stringify(query))}`;

    it("a failed svc.* call's error has status and statusCode (Deployd's); a validation error no message", async () => {
      const res = await t.request('POST', '/lookups', {});
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const notFound = { status: 404, statusCode: 404, message: 'not found' };
      expect(res.body).toMatchObject({ err: notFound, caught: notFound, invalid: { status: 400, statusCode: 400, errors: { username: 'is required' } } });
      expect((res.body as { invalid: object }).invalid).not.toHaveProperty('message');
    });

    it('GET filters with an operator on id ($in, $ne, $nin)', async () => {
      const [a, b, c] = [await post('/items', { name: 'a' }), await post('/items', { name: 'b' }), await post('/items', { name: 'c' })];
      const names = (res: { body: unknown }) => (res.body as Obj[]).map((o) => o.name).sort();
      expect(names(await t.request('GET', `/items${q({ id: { $in: [a.id, c.id] } })}`))).toEqual(['a', 'c']);
      expect(names(await t.request('GET', `/items${q({ id: { $ne: b.id }, name: { $in: ['a', 'b', 'c'] } })}`))).toEqual(['a', 'c']);
      expect(names(await t.request('GET', `/items${q({ id: { $nin: [a.id, b.id] }, name: { $in: ['a', 'b', 'c'] } })}`))).toEqual(['c']);
      // A plain id still answers the object itself, and a non-string id in a write is still refused.
      expect((await t.request('GET', `/items${q({ id: a.id })}`)).body).toMatchObject({ name: 'a' });
      expect((await t.request('PUT', '/items', { id: { $ne: null }, name: 'x' })).status).toBe(400);
    });

    it('DELETE with an operator on id deletes every match', async () => {
      const made = [await post('/items', { name: 'del', n: 1 }), await post('/items', { name: 'del', n: 2 }), await post('/items', { name: 'stay', n: 3 })];
      const res = await t.request('DELETE', `/items${q({ id: { $in: [made[0]!.id, made[1]!.id] } })}`);
      expect(res.status).toBe(204);
      expect(((await t.request('GET', `/items${q({ name: { $in: ['del', 'stay'] } })}`)).body as Obj[]).map((o) => o.name)).toEqual(['stay']);
      expect((await t.request('DELETE', `/items${q({ id: { $in: ['nope'] } })}`)).status).toBe(404);
    });

    it('DELETE with {"id": {"$ne": null}} runs On Delete per object; a cancel keeps only its own object', async () => {
      for (const name of ['keep', 'go1', 'go2']) await post('/guarded', { name });
      const res = await t.request('DELETE', `/guarded${q({ id: { $ne: null } })}`);
      expect(res.status).toBe(204);
      expect(((await t.request('GET', '/guarded')).body as Obj[]).map((o) => o.name)).toEqual(['keep']);
      // Only the cancelled object left: its error is the answer.
      const again = await t.request('DELETE', `/guarded${q({ id: { $ne: null } })}`);
      expect(again.status).toBe(403);
      expect(again.body).toMatchObject({ message: 'cannot delete keep' });
      // Root skipping events deletes it.
      expect((await t.request('DELETE', `/guarded${q({ id: { $ne: null }, $skipEvents: true })}`, undefined, root)).status).toBe(204);
      expect((await t.request('GET', '/guarded')).body).toEqual([]);
    });

    it('then/catch/finally handlers of svc calls in a script run with the object as this', async () => {
      await post('/items', { name: 'child', n: 2 });
      await post('/items', { name: 'child', n: 1 });
      const parent = await post('/parents', { name: 'p' });
      const got = (await t.request('GET', `/parents/${parent.id}`)).body as Obj;
      expect(got).toMatchObject({ children: [1, 2], count: 2, finallyRan: true });
      expect(got.caught).toBeUndefined();
    });

    it('a thrown string or plain object answers 400 (or its statusCode) with its message; engine errors stay 500', async () => {
      const expectRejected = async (kind: string, status: number, message: string) => {
        const res = await t.request('POST', '/rejects', { kind });
        expect({ kind, status: res.status, body: res.body }).toEqual({ kind, status, body: { status, statusCode: status, message } });
      };
      await expectRejected('string', 400, 'fail');
      await expectRejected('object', 401, 'no way');
      await expectRejected('after-await', 400, 'after await');
      await expectRejected('then', 400, 'then fail');
      await expectRejected('callback', 400, 'callback fail');
      const caught = await t.request('POST', '/rejects', { kind: 'caught' });
      expect(caught.status).toBe(200);
      expect(caught.body).toMatchObject({ caught: 'handled' });
      for (const kind of ['type', 'type-in-then']) {
        const res = await t.request('POST', '/rejects', { kind });
        expect(res.status).toBe(500);
        expect((res.body as { message: string }).message).toMatch(/rejects\/post\.js/);
      }
      // Nothing was stored by the rejected requests, and the server keeps serving.
      expect(((await t.request('GET', '/rejects')).body as Obj[]).map((o) => o.kind)).toEqual(['caught']);
    });

    it('after protect() in On Put, this reads the stored value and the stored value stays', async () => {
      const note = await post('/notes', { message: 'first' });
      const res = await t.request('PUT', `/notes/${note.id}`, { message: 'changed' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ message: 'first', other: 'saw first' });
      expect((await t.request('GET', `/notes/${note.id}`)).body).toMatchObject({ message: 'first', other: 'saw first' });
    });

    it('On BeforeRequest runs before the other events: cancel, a changed query, a changed body', async () => {
      expect((await post('/guarded2', { name: 'a', owner: 'me-ann' })).sawTag).toBe('set before request');
      await post('/guarded2', { name: 'b', owner: 'me-bob' });
      const mine = await t.request('GET', `/guarded2?mine=ann`);
      expect((mine.body as Obj[]).map((o) => o.name)).toEqual(['a']);
      const all = (await t.request('GET', '/guarded2')).body as Obj[];
      expect(all.map((o) => o.tag)).toEqual(['set before request', 'set before request']);
      const del = await t.request('DELETE', `/guarded2/${all[0]!.id}`);
      expect(del).toMatchObject({ status: 403, body: { message: 'no deletes here' } });
      expect((await t.request('DELETE', `/guarded2/${all[0]!.id}`, undefined, root)).status).toBe(204);
    });

    it('On AfterCommit runs after the write is stored (emits); its failure does not undo the write', async () => {
      const committed = () => realtime.messages.filter((m) => m.message === 'committed').map((m) => m.data as Obj);
      const before = committed().length;
      const made = await post('/guarded2', { name: 'c' });
      await t.request('PUT', `/guarded2/${made.id}`, { name: 'c2' });
      await t.request('DELETE', `/guarded2/${made.id}`, undefined, root);
      expect(committed().slice(before)).toEqual([
        { event: 'POST', id: made.id, name: 'c', stored: true },
        { event: 'PUT', id: made.id, name: 'c2', stored: true },
        { event: 'DELETE', id: made.id, name: 'c2', stored: true },
      ]);
      const count = ((await t.request('GET', '/guarded2')).body as Obj[]).length;
      const boom = await t.request('POST', '/guarded2', { name: 'boom' });
      expect(boom.status).toBe(200);
      expect(((await t.request('GET', '/guarded2')).body as Obj[]).length).toBe(count + 1);
      expect(logger.lines.some((l) => l.includes('On AfterCommit') && l.includes('after commit failed'))).toBe(true);
    });

    it('On Login sees every attempt (user or {}, success); cancel refuses it; changes to the user are stored', async () => {
      const guest = await post('/guests', { username: 'gina', password: 'pw' });
      await post('/guests', { username: 'bert', password: 'pw', banned: true });
      const ok = await t.request('POST', '/guests/login', { username: 'gina', password: 'pw' });
      expect(ok.status).toBe(200);
      const stored = (await t.request('GET', `/guests/${guest.id}`)).body as Obj;
      expect(stored).toMatchObject({ username: 'gina', logins: 1 });
      // The script's this.password and this.username were not stored: the old password still works.
      expect((await t.request('POST', '/guests/login', { username: 'gina', password: 'pw' })).status).toBe(200);
      expect(((await t.request('GET', `/guests/${guest.id}`)).body as Obj).logins).toBe(2);
      expect((await t.request('POST', '/guests/login', { username: 'bert', password: 'pw' }))).toMatchObject({ status: 403, body: { message: 'banned' } });
      expect((await t.request('POST', '/guests/login', { username: 'gina', password: 'wrong' })).status).toBe(401);
      expect((await t.request('POST', '/guests/login', { username: 'nobody', password: 'pw' })).status).toBe(401);
      const attempts = realtime.messages.filter((m) => m.message === 'login-attempt').map((m) => m.data);
      // bert's run was cancelled before its emit.
      expect(attempts).toEqual([
        { success: true, known: true },
        { success: true, known: true },
        { success: false, known: true },
        { success: false, known: false },
      ]);
    });

    it("another user's username/password in a PUT or POST with an id are dropped; the rest is saved, events run", async () => {
      const target = await post('/members', { username: 'mia', password: 'pw' });
      await post('/members', { username: 'max', password: 'pw' });
      const max = t.client();
      expect((await max('POST', '/members/login', { username: 'max', password: 'pw' })).status).toBe(200);
      const mia = t.client();
      expect((await mia('POST', '/members/login', { username: 'mia', password: 'pw' })).status).toBe(200);
      const committed = () => realtime.messages.filter((m) => m.message === 'member-committed').map((m) => m.data);
      const before = committed().length;
      const put = await max('PUT', `/members/${target.id}`, { username: 'owned', password: 'owned', note: 'n1' });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      expect(put.body).toMatchObject({ id: target.id, username: 'mia', note: 'n1', seen: 'put n1' });
      const viaPost = await max('POST', '/members', { id: target.id, password: 'owned2', note: 'n2' });
      expect(viaPost.body).toMatchObject({ id: target.id, username: 'mia', note: 'n2', seen: 'put n2' });
      expect(committed().slice(before)).toEqual([
        { event: 'PUT', id: target.id, note: 'n1' },
        { event: 'POST', id: target.id, note: 'n2' },
      ]);
      // The dropped passwords were neither stored nor ended mia's session.
      expect((await t.request('POST', '/members/login', { username: 'mia', password: 'owned' })).status).toBe(401);
      expect((await t.request('POST', '/members/login', { username: 'mia', password: 'owned2' })).status).toBe(401);
      expect((await mia('GET', '/members/me')).body).toMatchObject({ id: target.id, username: 'mia' });
    });

    it("svc.* from a script (an internal request) may change any user's username and password, as root", async () => {
      const target = await post('/members', { username: 'ned', password: 'pw' });
      const ned = t.client();
      expect((await ned('POST', '/members/login', { username: 'ned', password: 'pw' })).status).toBe(200);
      // An anonymous request whose script resets another user's credentials (they were dropped before).
      const reset = await t.client()('POST', '/resets', { target: target.id, newName: 'ned2' });
      expect(reset.status, JSON.stringify(reset.body)).toBe(200);
      expect((await t.request('GET', `/members/${target.id}`)).body).toMatchObject({ username: 'ned2' });
      expect((await t.request('POST', '/members/login', { username: 'ned2', password: 'reset' })).status).toBe(200);
      // The changed credentials ended ned's session, as any change of them does.
      expect((await ned('GET', '/members/me')).status).toBe(204);
    });

    it('svc.users.me takes the arguments of get; GET /users/me runs On BeforeRequest and On Get with the query', async () => {
      const user = await post('/members', { username: 'uma', password: 'pw' });
      const uma = t.client();
      const login = await uma('POST', '/members/login', { username: 'uma', password: 'pw' });
      await uma('PUT', `/members/${user.id}`, { note: 'x' });
      await t.request('PUT', `/members/${user.id}`, { secretNote: 's' }, root);
      const whoami = async (mode: string) => ((await uma('POST', '/whoami', { mode })).body as Obj).result;
      expect(await whoami('fn')).toBe('uma');
      expect(await whoami('query-fn')).toBe('got q');
      expect(await whoami('promise')).toBe('got p');
      // Over HTTP: the query reaches On Get, whose hide() applies; a cancel in either event is 204.
      const me = await uma('GET', '/members/me?tag=h');
      // The user's own private properties come back from /me (not from GET /members/<id>).
      expect(me.body).toMatchObject({ id: user.id, username: 'uma', note: 'got h', secretNote: 's' });
      expect((await uma('GET', `/members/${user.id}`)).body).not.toHaveProperty('secretNote');
      expect(me.body).not.toHaveProperty('seen');
      expect(me.body).not.toHaveProperty('password');
      expect((await uma('GET', '/members/me?deny=1')).status).toBe(204);
      expect((await uma('GET', '/members/me?cancelMe=1')).status).toBe(204);
      expect((await t.client()('GET', '/members/me?tag=h')).status).toBe(204);
      // A bearer token gets no sid cookie, whether it names a session or not.
      const sid = (login.body as Obj).id;
      const bearer = await fetch(`${t.url}/members/me`, { headers: { authorization: `Bearer ${sid}` } });
      expect(bearer.status).toBe(200);
      expect(bearer.headers.getSetCookie()).toEqual([]);
      const unknown = await fetch(`${t.url}/members/me`, { headers: { authorization: 'Bearer nope' } });
      expect(unknown.status).toBe(204);
      expect(unknown.headers.getSetCookie()).toEqual([]);
    });

    it("On Login: a failed login stores what the script changed, even when it cancels; only declared properties, no other event", async () => {
      const tina = await post('/tries', { username: 'tina', password: 'pw' });
      const lou = await post('/tries', { username: 'lou', password: 'pw', locked: true });
      const stored = async (id: string) => (await t.request('GET', `/tries/${id}`, undefined, root)).body as Obj;
      const login = (username: string, password: string) => t.client()('POST', '/tries/login', { username, password });
      expect(await login('tina', 'wrong')).toMatchObject({ status: 401, body: { message: 'bad credentials' } });
      const once = await stored(tina.id);
      expect(once).toMatchObject({ id: tina.id, username: 'tina', fails: 1 });
      // Undeclared keys ($NOCASCADE was a 500 before), username, password and id are not written.
      expect(once).not.toHaveProperty('stray');
      expect(once).not.toHaveProperty('$NOCASCADE');
      // A cancel on a failed login answers its message; the changes are stored all the same.
      expect(await login('tina', 'wrong')).toMatchObject({ status: 423, body: { message: 'locked out' } });
      expect((await stored(tina.id)).fails).toBe(2);
      expect((await login('tina', 'pw')).status).toBe(200);
      expect(await stored(tina.id)).toMatchObject({ username: 'tina', fails: 2, lastTry: 'ok' });
      expect((await login('hacked', 'hacked')).status).toBe(401);
      // A cancelled successful login stores nothing; an unknown username stores nothing.
      expect(await login('lou', 'pw')).toMatchObject({ status: 403, body: { message: 'locked' } });
      expect(await stored(lou.id)).not.toHaveProperty('lastTry');
      expect((await login('nobody', 'pw')).status).toBe(401);
      expect((await t.request('GET', `/tries${q({ fails: 99 })}`, undefined, root)).body).toEqual([]);
      // No other event ran for these saves (On Put would set lastTry, On AfterCommit would emit).
      expect(realtime.messages.filter((m) => m.message === 'tries-committed')).toHaveLength(2);
    });

    it('$limitRecursion in the request bounds the whole chain of internal calls', async () => {
      for (let level = 0; level <= 12; level++) await post('/depth', { level });
      const reached = async (query: string) => ((await t.request('GET', `/depth?level=0${query}`)).body as Obj[])[0]!.reached;
      expect(await reached('')).toBe(2);
      expect(await reached('&$limitRecursion=5')).toBe(5);
      expect(await reached('&$limitRecursion=9')).toBe(9);
      expect(await reached('&$limitRecursion=0')).toBe(0);
    });

    it('a numeric string for a number property is read with parseFloat, as Deployd did', async () => {
      expect(await post('/items', { name: 'num1', n: '5' })).toMatchObject({ n: 5 });
      expect(await post('/items', { name: 'num2', n: '2.5kg' })).toMatchObject({ n: 2.5 });
      const none = await post('/items', { name: 'num3', n: 'many' });
      expect(none.n).toBeUndefined();
      const put = await t.request('PUT', `/items/${none.id}`, { n: ' -7 ' });
      expect(put.body).toMatchObject({ n: -7 });
    });

    // Issue 38 item 13: Deployd 1.2 checks the merged object of a PUT (before On Validate).
    it('a PUT over a value a script stored with the wrong type answers 400 "must be a string"', async () => {
      const typed = await post('/typed', { title: 'make it a number' });
      expect(typed.title).toBe(5);
      for (const headers of [{}, root]) {
        const res = await t.request('PUT', `/typed/${typed.id}`, { done: true }, headers);
        expect([res.status, res.body]).toEqual([400, { status: 400, statusCode: 400, errors: { title: 'must be a string' } }]);
      }
      expect((await t.request('PUT', `/typed/${typed.id}`, { done: true, title: 'a string' })).body).toEqual({ id: typed.id, title: 'a string', done: true });
    });

    it('POST /users {} reports both username and password', async () => {
      const res = await t.request('POST', '/users', {});
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ errors: { username: 'is required', password: 'is required' } });
      const onlyPassword = await t.request('POST', '/users', { username: 'ann' });
      expect((onlyPassword.body as { errors: object }).errors).toEqual({ password: 'is required' });
    });

    it('$addUnique adds one value or each of an array, only when missing', async () => {
      const item = await post('/items', { name: 'tagged', tags: ['a'] });
      expect((await t.request('PUT', `/items/${item.id}`, { tags: { $addUnique: 'a' } })).body).toMatchObject({ tags: ['a'] });
      expect((await t.request('PUT', `/items/${item.id}`, { tags: { $addUnique: 'b' } })).body).toMatchObject({ tags: ['a', 'b'] });
      expect((await t.request('PUT', `/items/${item.id}`, { tags: { $addUnique: ['b', 'c', 'c', 'd'] } })).body).toMatchObject({ tags: ['a', 'b', 'c', 'd'] });
      expect((await t.request('GET', `/items/${item.id}`)).body).toMatchObject({ tags: ['a', 'b', 'c', 'd'] });
      const both = await t.request('PUT', `/items/${item.id}`, { tags: { $push: 'e', $addUnique: 'f' } });
      expect(both.status).toBe(400);
    });

    it('a session is also found by Authorization: Bearer <session id>', async () => {
      await post('/users', { username: 'bearer-user', password: 'pw' });
      const login = await fetch(`${t.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'bearer-user', password: 'pw' }) });
      const { id } = (await login.json()) as { id: string };
      const me = await fetch(`${t.url}/users/me`, { headers: { authorization: `Bearer ${id}` } });
      expect(me.status).toBe(200);
      expect(await me.json()).toMatchObject({ username: 'bearer-user' });
      expect(me.headers.getSetCookie()).toEqual([]);
      const forged = await fetch(`${t.url}/users/me`, { headers: { authorization: `Bearer ${'0'.repeat(128)}` } });
      expect(forged.status).toBe(204);
      expect((await fetch(`${t.url}/users/me`, { headers: { authorization: `Basic ${id}` } })).status).toBe(204);
      const logout = await fetch(`${t.url}/users/logout`, { method: 'POST', headers: { authorization: `Bearer ${id}` } });
      expect(logout.status).toBe(204);
      expect((await fetch(`${t.url}/users/me`, { headers: { authorization: `Bearer ${id}` } })).status).toBe(204);
    });

    it('session ids are 128 hex characters (64 random bytes), anonymous and logged in', async () => {
      const anon = await fetch(`${t.url}/items`);
      expect(anon.headers.getSetCookie()[0]).toMatch(/^sid=[0-9a-f]{128};/);
      await post('/users', { username: 'sid-user', password: 'pw' });
      const login = await t.request('POST', '/users/login', { username: 'sid-user', password: 'pw' });
      expect(login.status).toBe(200);
      expect((login.body as { id: string }).id).toMatch(/^[0-9a-f]{128}$/);
    });
  });
});

describe.each(appStores())('config.json written by Deployd (%s store)', { concurrent: true }, (store) => {
  // The stores side by side (their apps are apart); each store's tests one at a time, in order.
  describe('one test at a time', { concurrent: false }, () => {
    it('$renameFrom renames the field in every stored object once (a migration file, development) and leaves config.json; dashboard keys pass without warnings', async () => {
      const dashboardKeys = { typeLabel: 'string', id: 'title', name: 'title', order: 0 };
      const dir = await writeApp({ 'resources/things/config.json': { type: 'Collection', properties: { title: { type: 'string', ...dashboardKeys }, n: { type: 'number' } } } });
      const mongo = process.env.SVC_TEST_MONGODB_URL;
      const db = store === 'mongodb' && mongo ? { db: `${mongo.replace(/\/$/, '')}/svc_rename_${randomBytes(5).toString('hex')}` } : {};
      const start = async () => {
        const logger = memoryLogger();
        const app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger, ...db });
        return { app, logger };
      };
      try {
        const first = await start();
        for (let i = 0; i < 3; i++) {
          const res = await fetch(`${first.app.url}/things`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: `t${i}`, n: i }) });
          expect(res.status).toBe(200);
        }
        expect(first.logger.lines.filter((l) => l.includes('ignoring'))).toEqual([]);
        await first.app.close();

        const file = join(dir, 'resources', 'things', 'config.json');
        await writeFile(file, JSON.stringify({ type: 'Collection', properties: { headline: { type: 'string', $renameFrom: 'title', ...dashboardKeys, id: 'headline', name: 'headline' }, n: { type: 'number' } } }));
        const second = await start();
        const things = (await (await fetch(`${second.app.url}/things?$sort={"n":1}`)).json()) as Record<string, unknown>[];
        expect(things.map((t) => [t.headline, t.title])).toEqual([['t0', undefined], ['t1', undefined], ['t2', undefined]]);
        expect(second.logger.lines.some((l) => /migration \S+-things-rename-title-headline: step 1\/1 rename title -> headline: 3 objects changed/.test(l))).toBe(true);
        expect((await readdir(join(dir, 'migrations'))).filter((f) => f.endsWith('.json'))).toHaveLength(1);
        const config = JSON.parse(await readFile(file, 'utf8')) as { properties: Record<string, Record<string, unknown>> };
        expect(config.properties.headline).toEqual({ type: 'string', ...dashboardKeys, id: 'headline', name: 'headline' });
        await second.app.close();

        const third = await start();
        expect(third.logger.lines.some((l) => l.includes('rename'))).toBe(false);
        expect(((await (await fetch(`${third.app.url}/things`)).json()) as unknown[]).length).toBe(3);
        await third.app.close();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, 30_000);
  });
});
