import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io-client';
import { HttpClient, settle, until } from './helpers.js';
import type { RtServer } from './helpers.js';
import { LIVE_STORES, rootRequest, startLiveServer, subscribe, unsubscribe } from './liveHelpers.js';
import type { LiveStore } from './liveHelpers.js';

// What is tested is the socket's buffer, not the store: the embedded store only.
const embedded = LIVE_STORES.filter((s) => s.name === 'embedded');

describe.each(embedded)('a live-query socket that does not read ($name store)', (kind) => {
  let store: LiveStore;
  let rt: RtServer;
  let socket: Socket;

  beforeAll(async () => {
    store = await kind.make();
    rt = await startLiveServer(store.store, { live: { maxBuffered: 4, catchUpWaitMs: 300 } });
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

  it('resumes with every missed change even when they are more than the buffer holds at once (a reading socket)', async () => {
    // The replay of a resume is sent in one go: before the socket has written any of it, more
    // packets wait in its buffer than `maxBuffered` (4 here). A socket that reads must still get
    // each change, not a fresh snapshot on top of part of them (bench/offline.js, issue 42).
    const reader = await new HttpClient(rt.url).socket();
    try {
      const first = await subscribe(reader, { id: 'resume-1', path: '/todos', query: { owner: 'resumer' } });
      expect(first.answer.ok).toBe(true);
      const since = (first.answer as { seq: number }).seq;
      await unsubscribe(reader, 'resume-1');
      const missed = 12;
      for (let i = 0; i < missed; i++) await rootRequest(rt.url, 'POST', '/todos', { title: `missed${i}`, owner: 'resumer' });
      const resumed = await subscribe(reader, { id: 'resume-2', path: '/todos', query: { owner: 'resumer' }, since });
      expect(resumed.answer.ok).toBe(true);
      await until(() => resumed.messages.length >= missed || resumed.messages.some((m) => m.type === 'snapshot'), 10_000);
      await settle(300);
      expect(resumed.messages.map((m) => m.type)).toEqual(Array.from({ length: missed }, () => 'create'));
      expect(resumed.messages.map((m) => ('object' in m ? m.object.title : m.type))).toEqual(Array.from({ length: missed }, (_, i) => `missed${i}`));
    } finally {
      reader.close();
    }
  });

  it('a resuming socket that does not read holds its replay only catchUpWaitMs, then gets a fresh snapshot once it reads', async () => {
    const stalled = await new HttpClient(rt.url).socket();
    try {
      const first = await subscribe(stalled, { id: 'stall-1', path: '/todos', query: { owner: 'stall' } });
      const since = (first.answer as { seq: number }).seq;
      await unsubscribe(stalled, 'stall-1');
      const missed = 60;
      const big = 'y'.repeat(200_000);
      for (let i = 0; i < missed; i++) await rootRequest(rt.url, 'POST', '/todos', { title: `stall${i}-${big}`, owner: 'stall' });
      const raw = (stalled.io.engine.transport as unknown as { ws: { _socket: { pause(): void; resume(): void } } }).ws._socket;
      raw.pause();
      const resumed = subscribe(stalled, { id: 'stall-2', path: '/todos', query: { owner: 'stall' }, since });
      // Well past catchUpWaitMs (300 ms): the server stopped waiting and dropped the rest of the replay.
      await settle(1200);
      expect((await rootRequest(rt.url, 'GET', '/todos?owner=nobody')).status).toBe(200);
      raw.resume();
      const { answer, messages } = await resumed;
      expect(answer.ok).toBe(true);
      await until(() => messages.some((m) => m.type === 'snapshot'), 20_000);
      expect(messages.filter((m) => m.type === 'create').length).toBeLessThan(missed);
      expect((messages.find((m) => m.type === 'snapshot') as { objects: unknown[] }).objects).toHaveLength(missed);
    } finally {
      stalled.close();
    }
  });
});
