import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngineStore, isSvcError } from '@svc/core';
import type { Store } from '@svc/core';
import { createExclusive, gateStore } from '../src/storeGate.js';
import { Feed, feedStore } from '../src/dashboard/feed.js';

// Issue 23 (6): the gate a restore on a running server closes (503 with Retry-After to requests).

let dir: string | undefined;
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function open(): Promise<Store> {
  dir = await mkdtemp(join(tmpdir(), 'svc-gate-'));
  store = await createEngineStore({ dir });
  return store;
}

describe('store gate', () => {
  it('the store as the app gets it (gate around feed) keeps every read of the store: the kept texts, its own aggregation', async () => {
    const inner = await open();
    const wrapped = gateStore(feedStore(inner, new Feed())).store.collection('events');
    const raw = inner.collection('events');
    for (let i = 0; i < 30; i++) await wrapped.insert({ id: `e${i}`, kind: `k${i % 3}`, amount: i });
    const reads = ['find', 'findOne', 'count', 'findJson', 'findWithJson', 'findTexts', 'findTextsOfIdsNow', 'findOneJson', 'findOneJsonNow', 'findOneWithJsonNow', 'aggregate'] as const;
    expect(reads.filter((name) => typeof raw[name] === 'function' && typeof wrapped[name] !== 'function')).toEqual([]);
    const spec = { group: ['kind'], count: true, sum: ['amount'], avg: [], min: [], max: [], limit: 10, timeoutMs: 5000, maxScanned: 100 };
    expect(await wrapped.aggregate?.({}, spec)).toEqual(await raw.aggregate?.({}, spec));
    expect(await wrapped.findTexts?.({ id: { $in: ['e2', 'e1'] } }, {}, ['id', 'kind'])).toEqual(await raw.findTexts?.({ id: { $in: ['e1', 'e2'] } }, {}, ['id', 'kind']));
    expect(wrapped.findTextsOfIdsNow?.(['e2', 'e1', 'e2'], ['id', 'kind'])).toEqual(raw.findTextsOfIdsNow?.(['e2', 'e1', 'e2'], ['id', 'kind']));
    expect(wrapped.findTextsOfIdsNow?.(['e2'], ['id'])?.texts).toEqual([JSON.stringify(await raw.findOne({ id: 'e2' }))]);
  });

  it('closing waits for the calls under way; calls meanwhile answer 503 with Retry-After; open lets them through', async () => {
    const gate = gateStore(await open());
    const todos = gate.store.collection('todos');
    await todos.insert({ id: 'a', title: 'x' });
    const underWay = todos.insert({ id: 'b', title: 'y' });
    let closed = false;
    const closing = gate.close('restoring', 10_000).then(() => (closed = true));
    await underWay;
    await closing;
    expect(closed).toBe(true);
    const refused = await todos.find({}).catch((err: unknown) => err);
    expect(isSvcError(refused) && refused.status).toBe(503);
    expect(isSvcError(refused) && refused.headers?.['retry-after']).toBe('5');
    // The fast path answers nothing at once: the request goes the usual way, and gets the 503.
    expect(todos.findOneJsonNow?.('a')).toBeUndefined();
    expect(todos.findTextsOfIdsNow?.(['a'], ['id'])).toBeUndefined();
    // Readiness asks ping: not ready while closed.
    await expect(gate.store.ping?.()).rejects.toThrow('restoring');
    // What was under way when it closed is written.
    expect((await (store as Store).collection('todos').find({})).map((d) => d.id).sort()).toEqual(['a', 'b']);
    gate.open();
    expect(await todos.count({})).toBe(2);
    expect(todos.findOneJsonNow?.('a')).toContain('"id":"a"');
    expect(todos.findTextsOfIdsNow?.(['a'], ['id'])?.values).toEqual(['a']);
  });

  it('a call that does not end in time leaves the gate open and the close refused', async () => {
    const gate = gateStore(await open());
    const slow = gateStore({ kind: 'slow', close: async () => undefined, collection: () => ({ ...gate.store.collection('x'), find: () => new Promise(() => undefined) }) as never });
    void slow.store.collection('x').find({});
    await expect(slow.close('restoring', 50)).rejects.toThrow('did not finish');
    expect(slow.closed).toBe(false);
  });

  it('exclusive runs one piece of work at a time, in order, a failure not stopping the next', async () => {
    const exclusive = createExclusive();
    const order: string[] = [];
    const a = exclusive(async () => {
      order.push('a start');
      await new Promise((r) => setTimeout(r, 20));
      order.push('a end');
      throw new Error('a failed');
    });
    const b = exclusive(async () => {
      order.push('b');
      return 'b';
    });
    await expect(a).rejects.toThrow('a failed');
    expect(await b).toBe('b');
    expect(order).toEqual(['a start', 'a end', 'b']);
  });
});
