import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io-client';
import type { LiveMessage } from '@svc/realtime';
import { HttpClient, settle, signUpAndLogin, until } from './helpers.js';
import type { RtServer } from './helpers.js';
import { LIVE_STORES, rootRequest, startLiveServer, subscribe, summary, unsubscribe } from './liveHelpers.js';
import type { LiveStore } from './liveHelpers.js';

describe.each(LIVE_STORES)('live queries on one server ($name store)', (kind) => {
  let store: LiveStore;
  let rt: RtServer;
  const sockets: Socket[] = [];
  let alice: HttpClient;
  let bob: HttpClient;
  let aliceId: string;
  let bobId: string;

  beforeAll(async () => {
    store = await kind.make();
    rt = await startLiveServer(store.store, { live: { maxPerSocket: 5 } });
    alice = new HttpClient(rt.url);
    bob = new HttpClient(rt.url);
    aliceId = await signUpAndLogin(alice, `alice-${kind.name}`);
    bobId = await signUpAndLogin(bob, `bob-${kind.name}`);
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await rt?.close();
    await store?.dispose();
  });

  async function socketOf(client: HttpClient): Promise<Socket> {
    const socket = await client.socket();
    sockets.push(socket);
    return socket;
  }

  const create = async (body: Record<string, unknown>): Promise<string> => ((await rootRequest(rt.url, 'POST', '/todos', body)).body as { id: string }).id;

  it('sends a snapshot, then create, update, enter, leave and delete, in order, each as a GET would show it', async () => {
    const first = await create({ title: 'a1', owner: aliceId, secret: 's1', rank: 1 });
    await create({ title: 'b1', owner: bobId, rank: 1 });
    const socket = await socketOf(alice);
    const { answer, messages } = await subscribe(socket, { id: 'mine', path: '/todos', query: { owner: aliceId, done: false }, snapshot: true });
    expect(answer.ok).toBe(true);
    await until(() => messages.length === 1);
    expect(summary(messages)).toEqual(['snapshot:a1']);

    const second = await create({ title: 'a2', owner: aliceId, secret: 's2' });
    await create({ title: 'b2', owner: bobId });
    await rootRequest(rt.url, 'PUT', `/todos/${first}`, { title: 'a1 renamed' });
    await rootRequest(rt.url, 'PUT', `/todos/${second}`, { done: true });
    await rootRequest(rt.url, 'PUT', `/todos/${second}`, { done: false });
    await rootRequest(rt.url, 'DELETE', `/todos/${first}`);
    await until(() => messages.length === 6);
    await settle();
    expect(summary(messages)).toEqual(['snapshot:a1', 'create:a2', 'update:a1 renamed', `leave:${second}`, 'enter:a2', `delete:${first}`]);
    // Sequence numbers grow; private properties never appear.
    const seqs = messages.map((m) => (m as { seq: number }).seq);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    for (const m of messages) {
      const objects = m.type === 'snapshot' ? m.objects : 'object' in m ? [m.object] : [];
      for (const o of objects) expect(o).not.toHaveProperty('secret');
    }
  });

  it('applies $fields to events as to the snapshot', async () => {
    const socket = await socketOf(bob);
    const { messages } = await subscribe(socket, { id: 'titles', path: '/todos', query: { owner: bobId, $fields: { title: 1 } }, snapshot: true });
    await until(() => messages.length === 1);
    await create({ title: 'b3', owner: bobId, rank: 5 });
    await until(() => messages.length === 2);
    const event = messages[1] as Extract<LiveMessage, { type: 'create' }>;
    expect(Object.keys(event.object).sort()).toEqual(['id', 'title']);
    const snap = messages[0] as Extract<LiveMessage, { type: 'snapshot' }>;
    for (const o of snap.objects) expect(Object.keys(o).sort()).toEqual(['id', 'title']);
  });

  it('a filter on a private property does not decide what is sent (no oracle)', async () => {
    const socket = await socketOf(bob);
    const secretId = await create({ title: 'oracle', owner: 'nobody', secret: 'guess-me' });
    const right = await subscribe(socket, { id: 'guess-right', path: '/todos', query: { secret: 'guess-me', owner: 'nobody' } });
    const wrong = await subscribe(socket, { id: 'guess-wrong', path: '/todos', query: { secret: 'not-it', owner: 'nobody' } });
    // Refused (400) or ignored: either way both answer alike and get the same events.
    expect(right.answer.ok).toBe(wrong.answer.ok);
    await rootRequest(rt.url, 'PUT', `/todos/${secretId}`, { title: 'oracle 2' });
    await settle(300);
    expect(summary(right.messages)).toEqual(summary(wrong.messages));
    for (const m of right.messages) if ('object' in m) expect(m.object).not.toHaveProperty('secret');
  });

  it('refuses bad requests with clear errors, and caps subscriptions per socket', async () => {
    const socket = await socketOf(bob);
    const bad = await subscribe(socket, { id: 'x', path: '/nothing' });
    expect(bad.answer).toEqual({ ok: false, error: { status: 404, message: 'no collection at /nothing' } });
    const forbidden = await subscribe(socket, { id: 'y', path: '/todos', query: { $where: 'true' } });
    expect(forbidden.answer.ok).toBe(false);
    expect((forbidden.answer as { error: { status: number } }).error.status).toBe(400);
    const malformed = (await socket.timeout(5000).emitWithAck('svc:subscribe', 'nonsense')) as { ok: boolean; error: { status: number } };
    expect(malformed).toMatchObject({ ok: false, error: { status: 400 } });
    for (let i = 0; i < 5; i++) expect((await subscribe(socket, { id: `s${i}`, path: '/todos' })).answer.ok).toBe(true);
    const dup = await subscribe(socket, { id: 's0', path: '/todos' });
    expect(dup.answer).toMatchObject({ ok: false, error: { status: 409 } });
    const over = await subscribe(socket, { id: 's5', path: '/todos' });
    expect(over.answer).toEqual({ ok: false, error: { status: 429, message: 'too many subscriptions on this socket (at most 5)' } });
    expect(await unsubscribe(socket, 's0')).toEqual({ ok: true });
    expect((await subscribe(socket, { id: 's5', path: '/todos' })).answer.ok).toBe(true);
  });

  it('resumes after a sequence number without duplicates, and with a snapshot when too far behind', async () => {
    const socket = await socketOf(alice);
    const { answer, messages } = await subscribe(socket, { id: 'r1', path: '/todos', query: { owner: aliceId } });
    expect(answer.ok).toBe(true);
    await create({ title: 'r-a', owner: aliceId });
    await until(() => messages.length === 1);
    const last = (messages[0] as { seq: number }).seq;
    await unsubscribe(socket, 'r1');
    await create({ title: 'r-b', owner: aliceId });
    await create({ title: 'r-c', owner: bobId });
    await create({ title: 'r-d', owner: aliceId });
    const resumed = await subscribe(socket, { id: 'r2', path: '/todos', query: { owner: aliceId }, since: last });
    expect(resumed.answer.ok).toBe(true);
    await until(() => resumed.messages.length === 2);
    await create({ title: 'r-e', owner: aliceId });
    await until(() => resumed.messages.length === 3);
    await settle();
    expect(summary(resumed.messages)).toEqual(['create:r-b', 'create:r-d', 'create:r-e']);
  });

  it('ends the subscriptions of a session that ends (logout from another tab)', async () => {
    const carol = new HttpClient(rt.url);
    const carolId = await signUpAndLogin(carol, `carol-${kind.name}`);
    const socket = await socketOf(carol);
    const { answer, messages } = await subscribe(socket, { id: 'c', path: '/todos', query: { owner: carolId } });
    expect(answer.ok).toBe(true);
    await carol.request('POST', '/users/logout');
    await until(() => messages.length === 1);
    expect(summary(messages)).toEqual(['ended:session-ended']);
    await create({ title: 'after logout', owner: carolId });
    await settle(300);
    expect(messages).toHaveLength(1);
  });
});
