import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io-client';
import { HttpClient, login, settle, signUpAndLogin, until } from './helpers.js';
import type { RtServer } from './helpers.js';
import { LIVE_STORES, rootRequest, startLiveServer, subscribe, summary } from './liveHelpers.js';
import type { LiveStore } from './liveHelpers.js';
import { clearRedisKeys } from './redisKeys.js';

const redisUrl = process.env.SVC_TEST_REDIS_URL;
if (!redisUrl) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_REDIS_URL is not set: the live-query Redis tests cannot run');
  process.stderr.write('SKIPPED @svc/realtime live queries across servers: set SVC_TEST_REDIS_URL=redis://127.0.0.1:<port> to run them\n');
}

describe.skipIf(!redisUrl).each(LIVE_STORES)('live queries across two servers over Redis ($name store)', (kind) => {
  let store: LiveStore;
  let a: RtServer;
  let b: RtServer;
  const sockets: Socket[] = [];
  // A fresh key prefix per run: sequences, rings and channels of parallel runs never meet.
  const redisKey = `svc-live-test-${process.pid}-${Date.now()}-${kind.name}`;

  beforeAll(async () => {
    store = await kind.make();
    a = await startLiveServer(store.store, { redisUrl: redisUrl!, redisKey, live: { ringSize: 5 } });
    b = await startLiveServer(store.store, { redisUrl: redisUrl!, redisKey, live: { ringSize: 5 } });
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await a?.close();
    await b?.close();
    await store?.dispose();
    // The sequences and rings this run left in the shared Redis.
    await clearRedisKeys(redisUrl!, redisKey);
  });

  async function socketOf(client: HttpClient, url?: string): Promise<Socket> {
    const socket = await client.socket(url);
    sockets.push(socket);
    return socket;
  }

  it('writes on B reach a subscriber on A in order, as that subscriber may see them', async () => {
    const ann = new HttpClient(a.url);
    const annId = await signUpAndLogin(ann, `ann-${kind.name}`);
    const socket = await socketOf(ann);
    const { answer, messages } = await subscribe(socket, { id: 'n', path: '/todos', query: { owner: annId } });
    expect(answer.ok).toBe(true);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(((await rootRequest(b.url, 'POST', '/todos', { title: `t${i}`, owner: annId, secret: 'hidden' })).body as { id: string }).id);
    // Ten updates of one object, from both servers in turn: told in the order they were stored.
    for (let i = 0; i < 10; i++) await rootRequest(i % 2 === 0 ? a.url : b.url, 'PUT', `/todos/${ids[0]}`, { rank: i });
    await until(() => messages.length === 15, 8000);
    await settle();
    expect(summary(messages).slice(0, 5)).toEqual(['create:t0', 'create:t1', 'create:t2', 'create:t3', 'create:t4']);
    const ranks = messages.slice(5).map((m) => ('object' in m ? m.object.rank : undefined));
    expect(ranks).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const seqs = messages.map((m) => (m as { seq: number }).seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    for (const m of messages) if ('object' in m) expect(m.object).not.toHaveProperty('secret');
  });

  it('a client that reconnects to the other server resumes from its last sequence, or gets a snapshot when too far behind', async () => {
    const bo = new HttpClient(a.url);
    const boId = await signUpAndLogin(bo, `bo-${kind.name}`);
    const onA = await socketOf(bo);
    const first = await subscribe(onA, { id: 'r', path: '/todos', query: { owner: boId } });
    await rootRequest(a.url, 'POST', '/todos', { title: 'r1', owner: boId });
    await until(() => first.messages.length === 1);
    const last = (first.messages[0] as { seq: number }).seq;
    onA.close();
    // Missed while away: two writes (the ring keeps five).
    await rootRequest(a.url, 'POST', '/todos', { title: 'r2', owner: boId });
    await rootRequest(b.url, 'POST', '/todos', { title: 'r3', owner: boId });
    const onB = await socketOf(bo, b.url);
    const resumed = await subscribe(onB, { id: 'r', path: '/todos', query: { owner: boId }, since: last });
    expect(resumed.answer.ok).toBe(true);
    await until(() => resumed.messages.length === 2);
    await settle();
    expect(summary(resumed.messages)).toEqual(['create:r2', 'create:r3']);

    // Away for more writes than the ring keeps: a fresh snapshot instead of a partial replay.
    const lastB = (resumed.messages[1] as { seq: number }).seq;
    onB.close();
    for (let i = 0; i < 7; i++) await rootRequest(a.url, 'POST', '/todos', { title: `x${i}`, owner: 'someone-else' });
    const again = await socketOf(bo, a.url);
    const fresh = await subscribe(again, { id: 'r', path: '/todos', query: { owner: boId, $sort: { title: 1 } }, since: lastB });
    await until(() => fresh.messages.length === 1);
    expect(summary(fresh.messages)).toEqual(['snapshot:r1,r2,r3']);
  });

  it('a session ended on B (password change) ends its subscriptions on A at once', async () => {
    const cy = new HttpClient(a.url);
    const cyId = await signUpAndLogin(cy, `cy-${kind.name}`);
    const socket = await socketOf(cy);
    const { messages } = await subscribe(socket, { id: 'c', path: '/todos', query: { owner: cyId } });
    // Another login of the same user, on B, changes the password: every other session ends.
    const other = new HttpClient(b.url);
    await login(other, `cy-${kind.name}`);
    const changed = await other.request('PUT', `/users/${cyId}`, { password: 'new-password' });
    expect(changed.status).toBe(200);
    await until(() => messages.length === 1);
    expect(summary(messages)).toEqual(['ended:session-ended']);
    await rootRequest(b.url, 'POST', '/todos', { title: 'after', owner: cyId });
    await settle(300);
    expect(messages).toHaveLength(1);
  });
});
