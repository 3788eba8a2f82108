import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io-client';
import { Collection } from '@svc/core';
import { HttpClient, login, settle, signUpAndLogin, until } from './helpers.js';
import type { RtServer } from './helpers.js';
import { LIVE_STORES, WriteGate, rootRequest, startLiveServer, subscribe, summary, unsubscribe } from './liveHelpers.js';
import type { LiveStore } from './liveHelpers.js';
import { clearRedisKeys } from './redisKeys.js';

// Writes are published to the live change log only while some process's live queries hold the
// collection. These tests check that nothing a subscription needs is lost on the way: a write in
// flight while the first subscription starts, a resume across a stretch nobody held, and (over
// Redis) the same between two servers that each decide for themselves whether to publish.

const redisUrl = process.env.SVC_TEST_REDIS_URL;
if (!redisUrl) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_REDIS_URL is not set: the live-query Redis tests cannot run');
  process.stderr.write('SKIPPED the two-server cases of live-interest.test.ts: set SVC_TEST_REDIS_URL=redis://127.0.0.1:<port> to run them\n');
}

/** Idle hold of these tests: a collection is let go this long after its last subscription. */
const IDLE_MS = 100;

function todosOf(server: RtServer): Collection {
  const found = server.server.resources.find((r) => r.path === '/todos');
  if (!(found instanceof Collection)) throw new Error('no /todos');
  return found;
}

describe.each(LIVE_STORES)('live queries publish only while held: one server ($name store)', (kind) => {
  let store: LiveStore;
  let a: RtServer;
  const gate = new WriteGate();
  const sockets: Socket[] = [];

  beforeAll(async () => {
    store = await kind.make();
    a = await startLiveServer(store.store, { live: { idleHoldMs: IDLE_MS } }, gate);
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await a?.close();
    await store?.dispose();
  });

  async function userSocket(name: string): Promise<{ socket: Socket; id: string }> {
    const client = new HttpClient(a.url);
    const id = await signUpAndLogin(client, `${name}-${kind.name}`);
    const socket = await client.socket();
    sockets.push(socket);
    return { socket, id };
  }

  it('a collection is wanted from its first subscription until a while after its last', async () => {
    const todos = todosOf(a);
    expect(todos.wantsChanges()).toBe(false);
    const { socket, id } = await userSocket('held');
    const { answer } = await subscribe(socket, { id: 'h', path: '/todos', query: { owner: id } });
    expect(answer.ok).toBe(true);
    expect(todos.wantsChanges()).toBe(true);
    await unsubscribe(socket, 'h');
    expect(todos.wantsChanges()).toBe(true);
    await until(() => !todos.wantsChanges());
  });

  it('a resume across a stretch when nobody held the collection gets a fresh snapshot, not an empty replay', async () => {
    const { socket, id } = await userSocket('resume');
    const first = await subscribe(socket, { id: 'r', path: '/todos', query: { owner: id } });
    await rootRequest(a.url, 'POST', '/todos', { title: 'r1', owner: id });
    await until(() => first.messages.length === 1);
    const last = (first.messages[0] as { seq: number }).seq;
    await unsubscribe(socket, 'r');
    await until(() => !todosOf(a).wantsChanges());
    // Not published: nobody holds /todos.
    await rootRequest(a.url, 'POST', '/todos', { title: 'r2', owner: id });
    const again = await subscribe(socket, { id: 'r2', path: '/todos', query: { owner: id, $sort: { title: 1 } }, since: last });
    expect(again.answer.ok).toBe(true);
    // The numbering went on: the new stretch is after everything told before it.
    expect((again.answer as { seq: number }).seq).toBeGreaterThan(last);
    await until(() => again.messages.length === 1);
    expect(summary(again.messages)).toEqual(['snapshot:r1,r2']);
    await unsubscribe(socket, 'r2');
    await until(() => !todosOf(a).wantsChanges());
  });

  it('a create in flight while the first subscription starts reaches it', async () => {
    const { socket, id } = await userSocket('create');
    const held = gate.hold('insert');
    const writing = rootRequest(a.url, 'POST', '/todos', { title: 'in-flight', owner: id });
    await held.reached;
    const { messages } = await subscribe(socket, { id: 'c', path: '/todos', query: { owner: id }, snapshot: true });
    held.release();
    expect((await writing).status).toBe(200);
    await until(() => messages.length === 2);
    await settle();
    expect(summary(messages)).toEqual(['snapshot:', 'create:in-flight']);
    await unsubscribe(socket, 'c');
    await until(() => !todosOf(a).wantsChanges());
  });

  it('a delete in flight (its object not read: nobody listened) while the first subscription starts makes it resync', async () => {
    const { socket, id } = await userSocket('delete');
    const made = (await rootRequest(a.url, 'POST', '/todos', { title: 'doomed', owner: id })).body as { id: string };
    const other = await userSocket('bystander');
    expect(todosOf(a).wantsChanges()).toBe(false);
    const held = gate.hold('remove');
    const deleting = rootRequest(a.url, 'DELETE', `/todos/${made.id}`);
    await held.reached;
    const { messages } = await subscribe(socket, { id: 'd', path: '/todos', query: { owner: id }, snapshot: true });
    const bystander = await subscribe(other.socket, { id: 'b', path: '/todos', query: { owner: other.id }, snapshot: true });
    held.release();
    expect((await deleting).status).toBe(204);
    await until(() => messages.length === 2 && bystander.messages.length === 2);
    await settle();
    // The snapshot had it; a fresh one (what GET shows now) replaces it.
    expect(summary(messages)).toEqual(['snapshot:doomed', 'snapshot:']);
    // Another user's subscription learns no object, no id: a fresh snapshot of its own (empty) query.
    expect(summary(bystander.messages)).toEqual(['snapshot:', 'snapshot:']);
    expect(JSON.stringify(bystander.messages)).not.toContain(made.id);
  });
});

describe.skipIf(!redisUrl).each(LIVE_STORES)('live queries publish only while held: two servers over Redis ($name store)', (kind) => {
  let store: LiveStore;
  let a: RtServer;
  let b: RtServer;
  const gate = new WriteGate();
  const sockets: Socket[] = [];
  const redisKey = `svc-live-interest-${process.pid}-${Date.now()}-${kind.name}`;

  beforeAll(async () => {
    store = await kind.make();
    // A writes (its todos' inserts and removes can be held in flight); B has the subscriptions.
    a = await startLiveServer(store.store, { redisUrl: redisUrl!, redisKey, live: { idleHoldMs: IDLE_MS } }, gate);
    b = await startLiveServer(store.store, { redisUrl: redisUrl!, redisKey, live: { idleHoldMs: IDLE_MS } });
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await a?.close();
    await b?.close();
    await store?.dispose();
    await clearRedisKeys(redisUrl!, redisKey);
  });

  async function userSocketOn(server: RtServer, name: string): Promise<{ socket: Socket; id: string }> {
    const client = new HttpClient(server.url);
    const id = await signUpAndLogin(client, `${name}-${kind.name}`);
    const socket = await client.socket();
    sockets.push(socket);
    return { socket, id };
  }

  /** Both servers let /todos go (and /users: subscribers hold their user collection too). */
  async function nobodyHolds(): Promise<void> {
    await until(() => !todosOf(a).wantsChanges() && !todosOf(b).wantsChanges(), 5000);
  }

  it("a subscription answered on B means A publishes its writes from then on; when B lets go, A stops", async () => {
    const { socket, id } = await userSocketOn(b, 'first');
    await nobodyHolds();
    const { answer, messages } = await subscribe(socket, { id: 'f', path: '/todos', query: { owner: id } });
    expect(answer.ok).toBe(true);
    // A heard of B's hold and confirmed before B answered.
    expect(todosOf(a).wantsChanges()).toBe(true);
    await rootRequest(a.url, 'POST', '/todos', { title: 'f1', owner: id });
    await until(() => messages.length === 1, 5000);
    expect(summary(messages)).toEqual(['create:f1']);
    await unsubscribe(socket, 'f');
    await nobodyHolds();
  });

  it('a create in flight on A while the first subscription starts on B reaches it', async () => {
    const { socket, id } = await userSocketOn(b, 'create');
    await nobodyHolds();
    const held = gate.hold('insert');
    const writing = rootRequest(a.url, 'POST', '/todos', { title: 'in-flight', owner: id });
    await held.reached;
    const { messages } = await subscribe(socket, { id: 'c', path: '/todos', query: { owner: id }, snapshot: true });
    held.release();
    expect((await writing).status).toBe(200);
    await until(() => messages.length === 2, 5000);
    await settle();
    expect(summary(messages)).toEqual(['snapshot:', 'create:in-flight']);
    await unsubscribe(socket, 'c');
    await nobodyHolds();
  });

  it('a delete in flight on A (its object not read) while the first subscription starts on B makes it resync', async () => {
    const { socket, id } = await userSocketOn(b, 'delete');
    const made = (await rootRequest(a.url, 'POST', '/todos', { title: 'doomed', owner: id })).body as { id: string };
    await nobodyHolds();
    const held = gate.hold('remove');
    const deleting = rootRequest(a.url, 'DELETE', `/todos/${made.id}`);
    await held.reached;
    const { messages } = await subscribe(socket, { id: 'd', path: '/todos', query: { owner: id }, snapshot: true });
    held.release();
    expect((await deleting).status).toBe(204);
    await until(() => messages.length === 2, 5000);
    await settle();
    expect(summary(messages)).toEqual(['snapshot:doomed', 'snapshot:']);
    await unsubscribe(socket, 'd');
    await nobodyHolds();
  });

  it('a resume on A after a stretch nobody held gets a fresh snapshot; numbers only grow', async () => {
    const { socket, id } = await userSocketOn(b, 'resume');
    const first = await subscribe(socket, { id: 'r', path: '/todos', query: { owner: id } });
    await rootRequest(a.url, 'POST', '/todos', { title: 'r1', owner: id });
    await until(() => first.messages.length === 1, 5000);
    const last = (first.messages[0] as { seq: number }).seq;
    await unsubscribe(socket, 'r');
    await nobodyHolds();
    await rootRequest(a.url, 'POST', '/todos', { title: 'r2', owner: id });
    // The same user's client comes back on the other server.
    const client = new HttpClient(a.url);
    await login(client, `resume-${kind.name}`);
    const again = await client.socket();
    sockets.push(again);
    const resumed = await subscribe(again, { id: 'r', path: '/todos', query: { owner: id, $sort: { title: 1 } }, since: last });
    expect(resumed.answer.ok).toBe(true);
    expect((resumed.answer as { seq: number }).seq).toBeGreaterThan(last);
    await until(() => resumed.messages.length === 1, 5000);
    expect(summary(resumed.messages)).toEqual(['snapshot:r1,r2']);
  });
});
