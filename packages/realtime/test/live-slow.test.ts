import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io-client';
import { HttpClient, until } from './helpers.js';
import type { RtServer } from './helpers.js';
import { LIVE_STORES, rootRequest, startLiveServer, subscribe } from './liveHelpers.js';
import type { LiveStore } from './liveHelpers.js';

// What is tested is the socket's buffer, not the store: the embedded store only.
const embedded = LIVE_STORES.filter((s) => s.name === 'embedded');

describe.each(embedded)('a live-query socket that does not read ($name store)', (kind) => {
  let store: LiveStore;
  let rt: RtServer;
  let socket: Socket;

  beforeAll(async () => {
    store = await kind.make();
    rt = await startLiveServer(store.store, { live: { maxBuffered: 4 } });
    socket = await new HttpClient(rt.url).socket();
  });
  afterAll(async () => {
    socket?.close();
    await rt?.close();
    await store?.dispose();
  });

  it('is bounded: it drops events while its buffer is full and gets a fresh snapshot once it drains', async () => {
    const { answer, messages } = await subscribe(socket, { id: 'slow', path: '/todos', query: { owner: 'slow' } });
    expect(answer.ok).toBe(true);
    // The client stops reading: the server's writes to it pile up in the kernel, then in Socket.IO.
    const raw = (socket.io.engine.transport as unknown as { ws: { _socket: { pause(): void; resume(): void } } }).ws._socket;
    raw.pause();
    const big = 'x'.repeat(200_000);
    const writes = 60;
    for (let i = 0; i < writes; i++) await rootRequest(rt.url, 'POST', '/todos', { title: `big${i}`, owner: 'slow', secret: big });
    // Public payloads must be big too (the secret never leaves): the title carries the bulk.
    for (let i = 0; i < writes; i++) await rootRequest(rt.url, 'POST', '/todos', { title: `bulk${i}-${big}`, owner: 'slow' });
    raw.resume();
    await until(() => messages.some((m) => m.type === 'snapshot'), 20_000);
    const snapshot = messages.find((m) => m.type === 'snapshot') as { objects: unknown[]; seq: number };
    // Some events were never sent (dropped, not buffered), and the snapshot has every object.
    expect(messages.filter((m) => m.type === 'create').length).toBeLessThan(writes * 2);
    expect(snapshot.objects).toHaveLength(writes * 2);
    // Live again afterwards.
    await rootRequest(rt.url, 'POST', '/todos', { title: 'after', owner: 'slow' });
    await until(() => messages.some((m) => m.type === 'create' && m.object.title === 'after'), 10_000);
  });
});
