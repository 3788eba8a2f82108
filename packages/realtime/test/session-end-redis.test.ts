import { afterAll, beforeAll, describe, it } from 'vitest';
import { makeStore, startRtServer } from './helpers.js';
import type { RtServer, SharedStore } from './helpers.js';
import { logoutEnds, passwordChangeEnds, sweepEnds, userDeletionEnds } from './sessionEnd.js';
import type { Handshake } from './sessionEnd.js';

const redisUrl = process.env.SVC_TEST_REDIS_URL;
if (!redisUrl) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_REDIS_URL is not set: the Redis session-end tests cannot run');
  process.stderr.write('SKIPPED @svc/realtime session-end tests across processes: set SVC_TEST_REDIS_URL=redis://127.0.0.1:<port> to run them\n');
}

describe.skipIf(!redisUrl)('@svc/realtime over Redis: a session ended through B unbinds its sockets on A before the answer', () => {
  let store: SharedStore;
  let a: RtServer;
  let b: RtServer;
  const sockets: { close(): void }[] = [];
  // A fresh channel prefix per run, so parallel runs on one Redis do not hear each other.
  const redisKey = `svc-test-end-${process.pid}-${Date.now()}`;

  beforeAll(async () => {
    store = await makeStore();
    a = await startRtServer(store.store, { redisUrl: redisUrl!, redisKey });
    b = await startRtServer(store.store, { redisUrl: redisUrl!, redisKey });
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await a?.close();
    await b?.close();
    await store?.store.close();
    await store?.dispose();
  });

  for (const handshake of ['cookie', 'bearer'] as Handshake[]) {
    const s = () => ({ sockets, a, b, handshake });
    it(`logout (${handshake} handshake)`, () => logoutEnds(s()));
    it(`a password change ends the other sessions (${handshake} handshake)`, () => passwordChangeEnds(s()));
    it(`deleting the user (${handshake} handshake)`, () => userDeletionEnds(s()));
    it(`the sweep of idle sessions (${handshake} handshake)`, () => sweepEnds(s()));
  }
});
