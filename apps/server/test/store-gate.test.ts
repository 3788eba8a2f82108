import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createEngineStore, createMongoStore, forwardStore, isSvcError, NOW_METHODS, PROMISED_METHODS, STORE_METHODS } from '@svc/core';
import type { Store, StoredTexts } from '@svc/core';
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

// Issue 39: wrappers forward through one helper (core's forwardStore/forwardCollection), so that
// none drops a method: the feed dropped insertMany (imports went one object at a time) and
// listCollections before it did. Both stores: each offers its own set of optional methods.
describe.each(['embedded', ...(process.env.SVC_TEST_MONGODB_URL ? ['mongodb'] : [])])('store wrappers forward every method (%s)', (kind) => {
  let mongo: Store | undefined;
  afterEach(async () => {
    await mongo?.close();
    mongo = undefined;
  });
  const make = async (): Promise<Store> => {
    if (kind === 'embedded') return open();
    const url = process.env.SVC_TEST_MONGODB_URL as string;
    mongo = await createMongoStore({ url: `${url.replace(/\/$/, '')}/svc_wrap_${randomBytes(4).toString('hex')}` });
    return mongo;
  };

  it('the gate around the feed, and a store kept open for its caller, have each method the store has, and only those', async () => {
    const inner = await make();
    const feed = new Feed();
    for (const [label, wrapped] of [['gate(feed)', gateStore(feedStore(inner, feed)).store], ['feed', feedStore(inner, feed)], ['kept open', forwardStore(inner, { close: () => Promise.resolve() })]] as const) {
      expect(STORE_METHODS.map((m) => `${m} ${typeof inner[m]}`), label).toEqual(STORE_METHODS.map((m) => `${m} ${typeof wrapped[m]}`));
      for (const name of ['todos', '_sessions']) {
        const [raw, mine] = [inner.collection(name), wrapped.collection(name)];
        const methods = [...PROMISED_METHODS, ...NOW_METHODS];
        expect(methods.map((m) => `${m} ${typeof raw[m]}`), `${label} ${name}`).toEqual(methods.map((m) => `${m} ${typeof mine[m]}`));
      }
    }
  });

  it('the feed tells every insert, those of insertMany included, through the gate', async () => {
    const feed = new Feed();
    const seen: string[] = [];
    feed.subscribe((event) => {
      if (event.kind === 'change') seen.push(`${event.op} ${event.id}`);
    });
    const inner = await make();
    const wrapped = gateStore(feedStore(inner, feed)).store.collection('todos');
    await wrapped.insert({ id: 'one' });
    // MongoDB's insertMany (the embedded store has none): the wrapped collection has it too.
    expect(typeof wrapped.insertMany).toBe(typeof inner.collection('todos').insertMany);
    if (wrapped.insertMany) await wrapped.insertMany([{ id: 'two' }, { id: 'three' }]);
    else for (const id of ['two', 'three']) await wrapped.insert({ id });
    expect(await wrapped.count({})).toBe(3);
    expect(seen).toEqual(['insert one', 'insert two', 'insert three']);
  });
});

describe('store gate', () => {
  it('the store as the app gets it (gate around feed) keeps every read of the store: the kept texts, its own aggregation', async () => {
    const inner = await open();
    const wrapped = gateStore(feedStore(inner, new Feed())).store.collection('events');
    const raw = inner.collection('events');
    for (let i = 0; i < 30; i++) await wrapped.insert({ id: `e${i}`, kind: `k${i % 3}`, amount: i });
    const reads = ['find', 'findOne', 'count', 'findJson', 'findWithJson', 'findTexts', 'findTextsOfIdsNow', 'findOneJson', 'findOneJsonNow', 'findOneWithJsonNow', 'aggregate', 'keptList', 'generationNow'] as const;
    expect(reads.filter((name) => typeof raw[name] === 'function' && typeof wrapped[name] !== 'function')).toEqual([]);
    const spec = { group: ['kind'], count: true, sum: ['amount'], avg: [], min: [], max: [], limit: 10, timeoutMs: 5000, maxScanned: 100 };
    expect(await wrapped.aggregate?.({}, spec)).toEqual(await raw.aggregate?.({}, spec));
    // The texts alike (each query its own kept list); the list of a query the same object either way.
    const texts = (found: StoredTexts | undefined): StoredTexts | undefined => (found === undefined ? undefined : { ...found, list: undefined });
    expect(texts(await wrapped.findTexts?.({ id: { $in: ['e2', 'e1'] } }, {}, ['id', 'kind']))).toEqual(texts(await raw.findTexts?.({ id: { $in: ['e1', 'e2'] } }, {}, ['id', 'kind'])));
    const listed = await wrapped.findTexts?.({ kind: 'k1' }, { sort: { amount: 1 } }, ['id']);
    expect(listed?.list).toBeDefined();
    expect(await raw.keptList?.({ kind: 'k1' }, { sort: { amount: 1 } })).toBe(listed?.list);
    expect(await wrapped.keptList?.({ kind: 'k1' }, { sort: { amount: 1 } })).toBe(listed?.list);
    expect(wrapped.generationNow?.()).toBe(raw.generationNow?.());
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
    expect(todos.generationNow?.()).toBeUndefined();
    const refusedList = await todos.keptList?.({}, {}).catch((err: unknown) => err);
    expect(isSvcError(refusedList) && refusedList.status).toBe(503);
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
