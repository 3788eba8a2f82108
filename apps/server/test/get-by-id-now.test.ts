import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

/** What the server tells answerNow of an anonymous visitor's plain GET. */
const plainGet = (): { plainAnonymous: boolean; plan: string | undefined } => ({ plainAnonymous: true, plan: undefined });

// Issue 14: GET /<c>/<id> from an anonymous visitor with no query and no script on the way is
// answered at once (Collection.answerNow: the stored JSON text, no context, no promise turns). It
// must answer exactly what the full path answers, and step aside whenever anything could differ:
// a script (On Get, On BeforeRequest), private properties, users, root, a query, a body.

type Obj = Record<string, unknown> & { id: string };

const files = {
  'app.json': { cors: { origins: ['https://app.example'] }, metrics: {} },
  'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' }, n: { type: 'number' } } },
  'resources/seen/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
  'resources/seen/get.js': "this.seen = true;\nif (this.title === 'secret') cancel('not for you', 403);\n",
  'resources/guarded/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
  'resources/guarded/beforerequest.js': "if (event === 'GET' && !me) cancel('log in first', 401);\n",
  'resources/notes/config.json': { type: 'Collection', properties: { title: { type: 'string' }, plans: { type: 'string', private: true } } },
  'resources/users/config.json': { type: 'UserCollection', properties: { name: { type: 'string' } } },
  // On Get that does the same whatever the request (a static plan that reads nothing): answered at once too.
  'resources/marked/config.json': { type: 'Collection', properties: { title: { type: 'string' }, seen: { type: 'boolean' }, secret: { type: 'string' } } },
  'resources/marked/get.js': "this.seen = true;\nthis.tags = ['a', {b: null}];\nhide('secret');\n",
  'resources/closed/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
  'resources/closed/get.js': "cancel('closed for now', 403);\n",
  'resources/dynamic/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
  'resources/dynamic/get.js': 'this.seen = String(this.title).length > 0;\n',
};

describe.each(appStores())('GET by id answered at once (%s store)', { concurrent: true }, (store) => {
  // The stores side by side (their apps are apart); each store's tests one at a time, in order.
  describe('one test at a time', { concurrent: false }, () => {
    let t: AppHandle;
    let anon: string;
    const ids: Record<string, string> = {};
    const root = { 'svc-ssh-key': 'any' };

    /** A raw GET with the anonymous visitor's cookie (the path answered at once when it may be). */
    const asAnon = (path: string, init: RequestInit = {}) =>
      fetch(t.url + path, { ...init, headers: { cookie: `sid=${anon}`, ...((init.headers as Record<string, string>) ?? {}) } });
    /** The same GET without a cookie: a new session, so the full path. */
    const fresh = (path: string, init: RequestInit = {}) => fetch(t.url + path, init);
    const shape = async (res: Response) => ({ status: res.status, type: res.headers.get('content-type'), body: await res.text() });

    beforeAll(async () => {
      t = await runApp(files, { store, env: 'development' });
      const first = await fetch(`${t.url}/todos`);
      anon = /sid=([0-9a-f]+)/.exec(first.headers.getSetCookie().join(','))?.[1] as string;
      expect(anon).toMatch(/^[0-9a-f]{128}$/);
      for (const name of ['todos', 'seen', 'notes']) {
        ids[name] = ((await t.request('POST', `/${name}`, { title: `a ${name}`, plans: 'private plans' }, root)).body as Obj).id;
      }
      ids.secret = ((await t.request('POST', '/seen', { title: 'secret' }, root)).body as Obj).id;
      ids.guarded = ((await t.request('POST', '/guarded', { title: 'g' }, root)).body as Obj).id;
      ids.user = ((await t.request('POST', '/users', { username: 'ann', password: 'pw-ann', name: 'Ann' })).body as Obj).id;
    }, 30_000);
    afterAll(async () => {
      await t?.close();
    });

    it('answers what the full path answers: body bytes, status and content type, found or not', async () => {
      for (const path of [`/todos/${ids.todos}`, '/todos/nope', '/todos/count', '/todos/aggregate', '/todos/', `/todos/${ids.todos}/more`, '/todos/__proto__']) {
        const now = await shape(await asAnon(path));
        const full = await shape(await fresh(path));
        expect({ path, ...now }).toEqual({ path, ...full });
      }
      const res = await asAnon(`/todos/${ids.todos}`);
      expect(res.headers.getSetCookie()).toEqual([]);
      expect(await res.json()).toEqual({ id: ids.todos, title: 'a todos' });
    });

    it('runs On Get and On BeforeRequest: a script on the way is never skipped', async () => {
      expect(await (await asAnon(`/seen/${ids.seen}`)).json()).toEqual({ id: ids.seen, title: 'a seen', seen: true });
      expect(await shape(await asAnon(`/seen/${ids.secret}`))).toMatchObject({ status: 403, body: JSON.stringify({ status: 403, statusCode: 403, message: 'not for you' }) });
      expect((await asAnon(`/guarded/${ids.guarded}`)).status).toBe(401);
      const login = t.client();
      await login('POST', '/users/login', { username: 'ann', password: 'pw-ann' });
      expect((await login('GET', `/guarded/${ids.guarded}`)).body).toEqual({ id: ids.guarded, title: 'g' });
    });

    it('answers an On Get that reads nothing at once, with what the full path answers', async () => {
      const marked: string[] = [];
      for (const body of [{ title: 'new' }, { title: 'unseen', seen: false }, { title: 'seen', seen: true, secret: 's' }, { title: 'tagged', tags: ['a', { b: null }] }]) {
        marked.push(((await t.request('POST', '/marked', body, root)).body as Obj).id);
      }
      const resource = (path: string) => t.app.server.resources.find((r) => r.path === path) as { answerNow(parts: readonly string[], request: { plainAnonymous: boolean; plan: string | undefined }): string | undefined };
      for (const id of marked) {
        const full = await shape(await fresh(`/marked/${id}`));
        expect(await shape(await asAnon(`/marked/${id}`))).toEqual(full);
        // Answered without a context or a script process: the same bytes (a store that keeps texts).
        expect(resource('/marked').answerNow([id], plainGet())).toBe(store === 'embedded' ? full.body : undefined);
        const shown = JSON.parse(full.body) as Obj;
        expect(shown).toMatchObject({ seen: true, tags: ['a', { b: null }] });
        expect(shown).not.toHaveProperty('secret');
      }
      expect(resource('/marked').answerNow(['nope'], plainGet())).toBeUndefined();
      // A cancel, even one that always happens, and a script the plan cannot answer take the full path.
      const closed = ((await t.request('POST', '/closed', { title: 'c' }, root)).body as Obj).id;
      const dynamic = ((await t.request('POST', '/dynamic', { title: 'd' }, root)).body as Obj).id;
      expect(resource('/closed').answerNow([closed], plainGet())).toBeUndefined();
      expect(resource('/dynamic').answerNow([dynamic], plainGet())).toBeUndefined();
      expect(resource('/seen').answerNow([ids.seen as string], plainGet())).toBeUndefined();
      expect(await shape(await asAnon(`/closed/${closed}`))).toMatchObject({ status: 403, body: JSON.stringify({ status: 403, statusCode: 403, message: 'closed for now' }) });
      expect(await (await asAnon(`/dynamic/${dynamic}`)).json()).toEqual({ id: dynamic, title: 'd', seen: true });
    });

    it("keeps an On Get that reads nothing's answer per stored text: counted as a run, made anew when the object changes", async () => {
      const scriptCounts = async () => {
        const text = await (await fetch(`${t.url}/metrics`, { headers: root })).text();
        const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
        return { runs: value('svc_script_runs_total'), planned: value('svc_script_planned_total') };
      };
      const id = ((await t.request('POST', '/marked', { title: 'aaaa', secret: 's' }, root)).body as Obj).id;
      const read = async () => {
        const before = await scriptCounts();
        const answer = await shape(await asAnon(`/marked/${id}`));
        const after = await scriptCounts();
        // One run per request, kept answer or not (the metrics requests run no script).
        expect({ runs: after.runs - before.runs, planned: after.planned - before.planned }).toEqual({ runs: 1, planned: 1 });
        return answer;
      };
      const first = await read();
      expect(await read()).toEqual(first);
      expect(await read()).toEqual(await shape(await fresh(`/marked/${id}`)));
      // Changed: a text of the same length, then another property; each answered anew, then kept again.
      for (const change of [{ title: 'bbbb' }, { secret: 'other' }, { title: 'a longer title' }]) {
        await t.request('PUT', `/marked/${id}`, change, root);
        const full = await shape(await fresh(`/marked/${id}`));
        expect(await read()).toEqual(full);
        expect(await read()).toEqual(full);
      }
      expect(JSON.parse((await read()).body)).toEqual({ id, title: 'a longer title', seen: true, tags: ['a', { b: null }] });
      // Removed: not found, whatever was kept.
      await t.request('DELETE', `/marked/${id}`, undefined, root);
      expect((await asAnon(`/marked/${id}`)).status).toBe(404);
    });

    it('an On Get that always cancels counts one run per GET, however it is answered (issue 38 item 8)', async () => {
      const runs = async (): Promise<number> => {
        const text = await (await fetch(`${t.url}/metrics`, { headers: root })).text();
        return Number(/^svc_script_runs_total (\S+)$/m.exec(text)?.[1] ?? Number.NaN);
      };
      const id = ((await t.request('POST', '/closed', { title: 'counted' }, root)).body as Obj).id;
      for (const get of [() => asAnon(`/closed/${id}`), () => fresh(`/closed/${id}`), () => asAnon(`/closed?id=${id}`)]) {
        const before = await runs();
        expect((await get()).status).toBe(403);
        expect((await runs()) - before).toBe(1);
      }
    });

    it('private properties, users and root: each answered as before', async () => {
      expect(await (await asAnon(`/notes/${ids.notes}`)).json()).toEqual({ id: ids.notes, title: 'a notes' });
      expect(await (await asAnon(`/notes/${ids.notes}`, { headers: root })).json()).toEqual({ id: ids.notes, title: 'a notes', plans: 'private plans' });
      const user = (await (await asAnon(`/users/${ids.user}`)).json()) as Obj;
      expect(user).toEqual({ id: ids.user, username: 'ann', name: 'Ann' });
      expect(await (await asAnon(`/todos/${ids.todos}`, { headers: root })).json()).toEqual({ id: ids.todos, title: 'a todos' });
    });

    it('a query, a body or HEAD take their usual meaning', async () => {
      const fields = await asAnon(`/todos/${ids.todos}?${encodeURIComponent(JSON.stringify({ $fields: { title: 0 } }))}`);
      expect(await fields.json()).toEqual({ id: ids.todos });
      const head = await asAnon(`/todos/${ids.todos}`, { method: 'HEAD' });
      const get = await asAnon(`/todos/${ids.todos}`);
      const text = await get.text();
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
      expect(await head.text()).toBe('');
      // POST with _method=GET in the body: the body is read, so the usual path answers it.
      const overridden = await asAnon(`/todos/${ids.todos}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"_method":"GET"}' });
      expect(await overridden.json()).toEqual({ id: ids.todos, title: 'a todos' });
    });

    it('keeps CORS: an allowed origin gets its headers, another none', async () => {
      const ok = await asAnon(`/todos/${ids.todos}`, { headers: { origin: 'https://app.example' } });
      expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(ok.headers.get('access-control-allow-credentials')).toBe('true');
      const evil = await asAnon(`/todos/${ids.todos}`, { headers: { origin: 'https://evil.example' } });
      expect(evil.headers.get('access-control-allow-origin')).toBeNull();
      expect(evil.status).toBe(200);
    });

    it('reads during writes see each object whole, before or after its change, never an error', async () => {
      const writes: Promise<unknown>[] = [];
      const reads: Promise<{ status: number; body: Obj }>[] = [];
      for (let i = 1; i <= 100; i++) {
        writes.push(t.request('PUT', `/todos/${ids.todos}`, { n: i }, root));
        reads.push(asAnon(`/todos/${ids.todos}`).then(async (res) => ({ status: res.status, body: (await res.json()) as Obj })));
      }
      await Promise.all(writes);
      for (const { status, body } of await Promise.all(reads)) {
        expect(status).toBe(200);
        expect(body.id).toBe(ids.todos);
        expect(body.title).toBe('a todos');
        expect(body.n === undefined || (typeof body.n === 'number' && body.n >= 1 && body.n <= 100)).toBe(true);
      }
      expect(await (await asAnon(`/todos/${ids.todos}`)).json()).toMatchObject({ n: expect.any(Number) });
    });
  });
});
