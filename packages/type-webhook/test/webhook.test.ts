import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { verifySignature } from '@svc/type-webhook';
import type { WebhookPayload } from '@svc/type-webhook';
import { ok, startReceiver } from './helpers/receiver.js';
import type { Receiver } from './helpers/receiver.js';
import { SECRET, TODOS, eventually, startWebhookApp } from './helpers/webhookApp.js';
import type { WebhookApp } from './helpers/webhookApp.js';

// Real servers only: the app on the embedded store, or on MongoDB (FerretDB) when
// SVC_TEST_MONGODB_URL is set, and a receiver on 127.0.0.1 that app.json outbound.allow opens.
const mongo = process.env.SVC_TEST_MONGODB_URL;
const stores: { name: string; db: () => string | undefined; appJson?: Record<string, unknown> }[] = [
  { name: 'embedded store', db: () => undefined },
  // The SQLite engine behind the same store contract (app.json embeddedStore.engine).
  { name: 'embedded store (SQLite engine)', db: () => undefined, appJson: { embeddedStore: { engine: 'sqlite' } } },
  ...(mongo ? [{ name: 'MongoDB', db: () => `${mongo.replace(/\/[^/?]*(\?|$)/, `/svc_webhook_${Date.now()}_${Math.random().toString(36).slice(2, 8)}$1`)}` }] : []),
];
if (!mongo) console.log('webhook.test: the MongoDB runs skip (SVC_TEST_MONGODB_URL is unset)');

const payloadOf = (r: { body: string }): WebhookPayload => JSON.parse(r.body) as WebhookPayload;
const USERS = { users: { type: 'UserCollection', properties: { username: { type: 'string' }, role: { type: 'string' } } } };

describe.each(stores)('Webhook on the $name', { concurrent: true }, ({ db, appJson }) => {
  // The stores side by side (their apps are apart); each store's tests one at a time, in order.
  describe('one test at a time', { concurrent: false }, () => {
    let receiver: Receiver;
    let app: WebhookApp | undefined;
    /** This test's database (MongoDB), the same for a restart. */
    let dbUrl: string | undefined;
    beforeEach(async () => {
      receiver = await startReceiver();
      dbUrl = db();
    });
    afterEach(async () => {
      await app?.close();
      app = undefined;
      await receiver.close();
    });
    const start = async (options: Parameters<typeof startWebhookApp>[2] = {}) => {
      app = await startWebhookApp(receiver.url, [`127.0.0.1:${receiver.port}`], { ...options, ...(appJson ? { appJson: { ...appJson, ...options.appJson } } : {}), ...(dbUrl ? { db: dbUrl } : {}) });
      return app;
    };

    test("relations' onDelete upkeep is delivered as the collection's own writes: a setNull's update to a webhook on updates only", async () => {
      const a = await start({
        todos: { ...TODOS, properties: { ...TODOS.properties, list: { type: 'relation', collection: '/lists', onDelete: 'setNull' } } },
        hook: { events: ['update'] },
        resources: { lists: { type: 'Collection', properties: { name: { type: 'string' } } } },
      });
      const list = ((await a.call('POST', '/lists', { name: 'l' })).body as { id: string }).id;
      const kept = ((await a.call('POST', '/todos', { title: 'kept', list })).body as { id: string }).id;
      expect((await a.call('DELETE', `/lists/${list}`)).status).toBe(204);
      const [got] = (await receiver.waitFor(1)).map(payloadOf);
      expect(got).toMatchObject({ event: 'update', object: { id: kept, title: 'kept', list: null }, previous: { id: kept, title: 'kept', list } });
    });

    test('creates, updates and deletes are POSTed, signed, with the object as anonymous may read it', async () => {
      const a = await start();
      const created = await a.call('POST', '/todos', { title: 'one', note: 'secret note' });
      expect(created.status).toBe(200);
      const id = (created.body as { id: string }).id;
      expect((await a.call('PUT', `/todos/${id}`, { done: true })).status).toBe(200);
      expect((await a.call('DELETE', `/todos/${id}`)).status).toBe(204);
      const got = await receiver.waitFor(3);
      const payloads = got.map(payloadOf);
      expect(payloads.map((p) => p.event).sort()).toEqual(['create', 'delete', 'update']);
      const byEvent = Object.fromEntries(payloads.map((p) => [p.event, p]));
      expect(byEvent.create).toMatchObject({ webhook: 'hooks', collection: 'todos', object: { id, title: 'one', done: false } });
      expect(byEvent.update).toMatchObject({ object: { id, done: true }, previous: { id, done: false } });
      expect(byEvent.delete).toMatchObject({ object: { id, title: 'one', done: true } });
      // The private property never leaves the server for an anonymous principal.
      for (const r of got) expect(r.body).not.toContain('secret note');
      for (const r of got) {
        expect(r.method).toBe('POST');
        expect(r.headers['content-type']).toBe('application/json');
        expect(r.headers['svc-webhook-id']).toBe(payloadOf(r).id);
        expect(r.headers['svc-webhook-event']).toBe(payloadOf(r).event);
        expect(r.headers['svc-webhook-attempt']).toBe('1');
        expect(verifySignature({ secret: SECRET, header: r.headers['svc-signature'] as string, body: r.body })).toBe(true);
        // Another secret, another body or an old timestamp: refused.
        expect(verifySignature({ secret: `${SECRET}x`, header: r.headers['svc-signature'] as string, body: r.body })).toBe(false);
        expect(verifySignature({ secret: SECRET, header: r.headers['svc-signature'] as string, body: `${r.body} ` })).toBe(false);
        expect(verifySignature({ secret: SECRET, header: r.headers['svc-signature'] as string, body: r.body, now: Math.floor(Date.now() / 1000) + 301 })).toBe(false);
      }
      await eventually(async () => (await a.deliveries()).counts.delivered === 3, 10_000, 'three delivered');
      const view = await a.deliveries();
      expect(view.deliveries[0]).toMatchObject({ status: 'delivered', lastStatus: 200, excerpt: 'ok', attempts: 1 });
      expect(view.deliveries[0]).not.toHaveProperty('object');
    });

    test('objects the read rule hides are skipped, not sent; "as": "root" sees private properties', async () => {
      const a = await start({
        todos: { ...TODOS, properties: { ...TODOS.properties, published: { type: 'boolean' } }, rules: { read: { published: true }, list: { published: true } } },
        resources: { rootHook: { type: 'Webhook', collection: 'todos', url: receiver.url, secret: SECRET, as: 'root' } },
      });
      await a.call('POST', '/todos', { title: 'hidden', note: 'n1', published: false });
      await a.call('POST', '/todos', { title: 'shown', note: 'n2', published: true });
      const got = await receiver.waitFor(3);
      const anonymous = got.map(payloadOf).filter((p) => p.webhook === 'hooks');
      const root = got.map(payloadOf).filter((p) => p.webhook === 'rootHook');
      await eventually(async () => (await a.deliveries()).counts.skipped === 1, 10_000, 'one skipped');
      expect(anonymous.map((p) => p.object.title)).toEqual(['shown']);
      expect(anonymous[0]?.object).not.toHaveProperty('note');
      expect(root.map((p) => p.object.title).sort()).toEqual(['hidden', 'shown']);
      expect(root.find((p) => p.object.title === 'hidden')?.object.note).toBe('n1');
      const skipped = (await a.deliveries('?status=skipped')).deliveries[0];
      expect(skipped).toMatchObject({ status: 'skipped', event: 'create' });
      expect(String(skipped?.lastError)).toContain('not one anonymous may read');
      // Nothing of the hidden object reached the receiver through the anonymous webhook.
      expect(got.filter((r) => payloadOf(r).webhook === 'hooks').every((r) => !r.body.includes('hidden'))).toBe(true);
    });

    test('a property read rule and On Get apply as for a GET by the principal', async () => {
      const a = await start({
        todos: { ...TODOS, properties: { ...TODOS.properties, score: { type: 'number', read: { '@me.role': 'judge' } } } },
        resources: USERS,
        files: { 'todos/get.js': "if (this.title === 'cancelled') cancel('no', 404); this.shownBy = 'On Get'; hide('done');" },
      });
      await a.call('POST', '/todos', { title: 'rated', score: 9 });
      await a.call('POST', '/todos', { title: 'cancelled', score: 1 });
      const [r] = await receiver.waitFor(1).catch(async (err: unknown) => {
        throw new Error(`${String(err)}: ${JSON.stringify(await a.deliveries())}`);
      });
      expect(payloadOf(r as { body: string }).object).toMatchObject({ title: 'rated', shownBy: 'On Get' });
      expect(payloadOf(r as { body: string }).object).not.toHaveProperty('score');
      expect(payloadOf(r as { body: string }).object).not.toHaveProperty('done');
      // On Get cancelled the other one for this caller: skipped, as a GET would not find it.
      await eventually(async () => (await a.deliveries()).counts.skipped === 1, 10_000, 'one skipped');
      expect(receiver.received).toHaveLength(1);
    });

    test('"as": a user id: the objects pass through the rules as that user reads them', async () => {
      const first = await start({ todos: { ...TODOS, properties: { ...TODOS.properties, score: { type: 'number', read: { '@me.role': 'judge' } } } }, resources: USERS });
      const judge = (await first.call('POST', '/users', { username: 'judge', password: 'a long password 1', role: 'judge' })).body as { id: string };
      const viewer = (await first.call('POST', '/users', { username: 'viewer', password: 'a long password 2', role: 'viewer' })).body as { id: string };
      await first.close({ keepDir: true });
      app = undefined;
      const { writeFile } = await import('node:fs/promises');
      const hook = (name: string, as: string) => writeFile(`${first.dir}/resources/${name}/config.json`, JSON.stringify({ type: 'Webhook', collection: 'todos', url: receiver.url, secret: SECRET, as }));
      const { mkdir } = await import('node:fs/promises');
      await mkdir(`${first.dir}/resources/judgeHook`, { recursive: true });
      await hook('hooks', viewer.id);
      await hook('judgeHook', judge.id);
      app = await startWebhookApp(receiver.url, [], { dir: first.dir, ...(dbUrl ? { db: dbUrl } : {}) });
      await app.call('POST', '/todos', { title: 'scored', score: 7, note: 'private' });
      const got = (await receiver.waitFor(2)).map(payloadOf);
      const byHook = Object.fromEntries(got.map((p) => [p.webhook, p.object]));
      expect(byHook.judgeHook).toMatchObject({ title: 'scored', score: 7 });
      expect(byHook.hooks).toMatchObject({ title: 'scored' });
      expect(byHook.hooks).not.toHaveProperty('score');
      for (const object of Object.values(byHook)) expect(object).not.toHaveProperty('note');
    });

    test('after a reload (the dashboard saved the config) the new webhook hears the new collection', async () => {
      const a = await start();
      await a.call('POST', '/todos', { title: 'before' });
      await receiver.waitFor(1);
      const saved = await a.call('PUT', '/dashboard/api/resources/hooks', { config: { type: 'Webhook', collection: 'todos', url: receiver.url, secret: SECRET, retryBaseMs: 100, events: ['create', 'update'] } }, { 'svc-ssh-key': 'development' });
      expect(saved.status).toBe(200);
      const created = (await a.call('POST', '/todos', { title: 'after' })).body as { id: string };
      await a.call('DELETE', `/todos/${created.id}`);
      const [after] = await receiver.waitFor(1, (r) => payloadOf(r).object.title === 'after');
      expect(payloadOf(after as { body: string }).event).toBe('create');
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The new config's events: no delete.
      expect(receiver.received.map((r) => payloadOf(r).event)).toEqual(['create', 'create']);
    });

    test('a webhook on a user collection never sends the password hash, even as root', async () => {
      const a = await start({ resources: { ...USERS, userHook: { type: 'Webhook', collection: 'users', url: receiver.url, secret: SECRET, as: 'root' } } });
      expect((await a.call('POST', '/users', { username: 'ada', password: 'a long password 3', role: 'x' })).status).toBe(200);
      const [got] = await receiver.waitFor(1);
      expect(payloadOf(got as { body: string }).object).toMatchObject({ username: 'ada', role: 'x' });
      expect((got as { body: string }).body).not.toMatch(/password|\$2[aby]\$|scrypt/);
    });

    test('a query limits which writes are sent; a query on a private property is refused at start', async () => {
      const a = await start({ hook: { query: { done: true }, events: ['create', 'update'] } });
      const one = (await a.call('POST', '/todos', { title: 'not yet' })).body as { id: string };
      await a.call('POST', '/todos', { title: 'done at once', done: true });
      await a.call('PUT', `/todos/${one.id}`, { done: true });
      await a.call('DELETE', `/todos/${one.id}`);
      const got = await receiver.waitFor(2);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.received.map((r) => `${payloadOf(r).event}:${String(payloadOf(r).object.title)}`).sort()).toEqual(['create:done at once', 'update:not yet']);
      expect(got).toHaveLength(2);
      await a.close();
      app = undefined;
      await expect(start({ hook: { query: { note: 'x' } } })).rejects.toThrow(/resource hooks: setting query: .*note/);
    });

    test('the write is answered while the receiver hangs; the attempt times out and is tried again', async () => {
      const held: ServerResponse[] = [];
      receiver.behave((_req, res) => held.push(res));
      const a = await start({ hook: { timeoutMs: 300 } });
      const started = Date.now();
      const created = await a.call('POST', '/todos', { title: 'hang' });
      expect(created.status).toBe(200);
      await receiver.waitFor(2, undefined, 15_000);
      // The write did not wait for the first attempt (300 ms of hanging) to end.
      expect(held.length).toBeGreaterThanOrEqual(2);
      expect(Date.now() - started).toBeGreaterThan(0);
      const view = await a.deliveries();
      const record = view.deliveries[0] as Record<string, unknown>;
      expect(record.status).toBe('pending');
      expect(Number(record.attempts)).toBeGreaterThanOrEqual(1);
      expect(String(record.lastError)).toMatch(/within 300 ms|did not answer/);
      expect(typeof record.nextAt).toBe('number');
      receiver.behave(ok);
      for (const res of held) res.destroy();
      await eventually(async () => (await a.deliveries()).counts.delivered === 1, 15_000, 'delivered after the hang');
    });

    test('500s are retried with backoff until the dead letters; a manual retry sends it again', async () => {
      receiver.behave((_req, res) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('receiver broke: '.padEnd(5000, 'x'));
      });
      const a = await start({ hook: { maxAttempts: 3, retryBaseMs: 200, retryMaxMs: 400 } });
      await a.call('POST', '/todos', { title: 'doomed' });
      const got = await receiver.waitFor(3);
      // Backed off: the second attempt waited at least half of retryBaseMs, the third half of twice it.
      expect((got[1] as { at: number }).at - (got[0] as { at: number }).at).toBeGreaterThanOrEqual(90);
      expect((got[2] as { at: number }).at - (got[1] as { at: number }).at).toBeGreaterThanOrEqual(190);
      expect(got.map((r) => r.headers['svc-webhook-attempt'])).toEqual(['1', '2', '3']);
      expect(new Set(got.map((r) => r.body)).size).toBe(1);
      await eventually(async () => (await a.deliveries()).counts.dead === 1, 10_000, 'dead');
      const dead = (await a.deliveries('?status=dead')).deliveries[0] as Record<string, unknown>;
      expect(dead).toMatchObject({ status: 'dead', attempts: 3, lastStatus: 500 });
      // A bounded excerpt of the answer.
      expect(String(dead.excerpt).length).toBeLessThanOrEqual(1024);
      expect(String(dead.excerpt)).toMatch(/^receiver broke/);
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(receiver.received).toHaveLength(3);
      receiver.behave(ok);
      const retried = await a.call('POST', `/dashboard/api/resources/hooks/-/deliveries/${String(dead.id)}/retry`, {}, { 'svc-ssh-key': 'development' });
      expect(retried.status).toBe(200);
      const again = await receiver.waitFor(4);
      expect(again[3]?.headers['svc-webhook-attempt']).toBe('4');
      expect(again[3]?.headers['svc-webhook-id']).toBe(dead.id);
      await eventually(async () => (await a.deliveries()).counts.delivered === 1, 10_000, 'delivered after the retry');
      // Retrying a delivery that is not dead or delivered: 409; an unknown one: 409 too; no root key from elsewhere: refused.
      expect((await a.call('POST', '/dashboard/api/resources/hooks/-/deliveries/nope/retry', {}, { 'svc-ssh-key': 'development' })).status).toBe(409);
      expect((await a.call('GET', '/dashboard/api/resources/hooks/-/deliveries')).status).toBe(401);
      expect((await a.call('GET', '/hooks')).status).toBe(404);
    });

    test('a redirect to a private address is refused before connecting; 302 is a failure; 307 to an allowed address is followed', async () => {
      const other = await startReceiver();
      try {
        const targets = [`http://127.0.0.1:${other.port}/x`, 'http://169.254.169.254/latest/meta-data/', `http://[::ffff:127.0.0.1]:${other.port}/`, 'http://[::1]:9/', 'http://localhost:9/'];
        let n = 0;
        receiver.behave((req, res) => {
          if (req.url.startsWith('/final')) return ok(req, res, undefined as never);
          const to = targets[n++ % targets.length] as string;
          res.writeHead(307, { location: to });
          res.end();
        });
        const a = await start({ hook: { maxAttempts: 5, retryBaseMs: 20, retryMaxMs: 40 } });
        // The receiver answers `status` to /final, which it then serves.
        const redirectToFinal = (status: number): void =>
          receiver.behave((req, res) => {
            if (req.url.startsWith('/final')) return ok(req, res, undefined as never);
            res.writeHead(status, { location: '/final' });
            res.end();
          });
        await a.call('POST', '/todos', { title: 'redirected' });
        await eventually(async () => (await a.deliveries()).counts.dead === 1, 15_000, 'dead after refused redirects');
        expect(other.received).toHaveLength(0);
        const dead = (await a.deliveries('?status=dead')).deliveries[0] as Record<string, unknown>;
        expect(String(dead.lastError)).toMatch(/refused/);
        // 302 would make the POST a GET without the payload: a failure, not followed.
        receiver.received.length = 0;
        redirectToFinal(302);
        await a.call('POST', '/todos', { title: 'moved' });
        await eventually(async () => (await a.deliveries()).counts.dead === 2, 15_000, 'dead after 302s');
        expect(receiver.received.every((r) => !r.url.startsWith('/final'))).toBe(true);
        // 307 to an allowed address keeps the POST and its body.
        receiver.received.length = 0;
        redirectToFinal(307);
        await a.call('POST', '/todos', { title: 'followed' });
        const [final] = await receiver.waitFor(1, (r) => r.url === '/final');
        expect(final?.method).toBe('POST');
        expect(payloadOf(final as { body: string }).object.title).toBe('followed');
        expect(verifySignature({ secret: SECRET, header: final?.headers['svc-signature'] as string, body: (final as { body: string }).body })).toBe(true);
      } finally {
        await other.close();
      }
    });

    test('a receiver the app.json allow list does not name is refused (loopback by default)', async () => {
      const a = await startWebhookApp(receiver.url, [], { hook: { maxAttempts: 1 }, ...(appJson ? { appJson } : {}), ...(dbUrl ? { db: dbUrl } : {}) });
      app = a;
      await a.call('POST', '/todos', { title: 'local' });
      await eventually(async () => (await a.deliveries()).counts.dead === 1, 10_000, 'dead');
      const dead = (await a.deliveries()).deliveries[0] as Record<string, unknown>;
      expect(String(dead.lastError)).toMatch(/127\.0\.0\.1 is a loopback address; app\.json outbound\.allow may name it/);
      expect(receiver.received).toHaveLength(0);
    });

    test('a slow answer within the time is a delivery; a huge body is read no further than the excerpt', async () => {
      let bytesSent = 0;
      receiver.behave((req, res) => {
        const title = payloadOf(req).object.title;
        if (title === 'slow') {
          setTimeout(() => {
            res.writeHead(200);
            res.end('slow but fine');
          }, 700);
          return;
        }
        // 64 MB, written as the socket drains: the sender stops reading after the excerpt.
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(64 * 1024 * 1024) });
        const chunk = Buffer.alloc(64 * 1024, 'y');
        const pump = (): void => {
          while (bytesSent < 64 * 1024 * 1024) {
            bytesSent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('close', () => undefined);
        pump();
      });
      const a = await start({ hook: { timeoutMs: 5000 } });
      await a.call('POST', '/todos', { title: 'slow' });
      await a.call('POST', '/todos', { title: 'huge' });
      await eventually(async () => (await a.deliveries()).counts.delivered === 2, 15_000, 'both delivered');
      const view = await a.deliveries();
      const byExcerpt = view.deliveries.map((d) => String(d.excerpt));
      expect(byExcerpt).toContain('slow but fine');
      const huge = byExcerpt.find((e) => e.startsWith('y')) as string;
      expect(huge.length).toBe(1024);
      expect(bytesSent).toBeLessThan(64 * 1024 * 1024);
    });
  });
});

describe('Webhook deliveries at once (embedded store)', () => {
  let receiver: Receiver;
  let app: WebhookApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await receiver.close();
  });

  test('deliveries at once grow from one to `concurrency` while records wait, never past it; each delivered once', async () => {
    // The receiver holds every request until released: the deliveries under way are its held answers.
    // The deliverer starts at one slot; the slots grow by samples of its event loop (or take the
    // setting once no writes come), so the three come from that, not from a fixed width.
    const held: ServerResponse[] = [];
    receiver = await startReceiver((_req, res) => void held.push(res));
    app = await startWebhookApp(receiver.url, [`127.0.0.1:${receiver.port}`], { hook: { concurrency: 3, timeoutMs: 60_000 } });
    for (let i = 0; i < 12; i++) expect((await app.call('POST', '/todos', { title: `t${i}` })).status).toBe(200);
    await eventually(() => held.length === 3, 20_000, 'three deliveries under way');
    // Several of the deliverer's samples later (200 ms each), still three, with nine due.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(held.length).toBe(3);
    receiver.behave(ok);
    for (const res of held.splice(0)) res.end('ok');
    await receiver.waitFor(12);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ids = receiver.received.map((r) => payloadOf(r).id);
    expect(new Set(ids).size).toBe(12);
    expect(ids.length).toBe(12);
    await eventually(async () => (await app?.deliveries())?.counts.delivered === 12, 20_000, 'twelve delivered');
  });
});
