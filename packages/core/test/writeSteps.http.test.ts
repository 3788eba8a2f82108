import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection } from '@svc/core';
import type { CollectionEvent, CollectionEventRunner, EventInput, EventOutcome, PropertyDef } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// A create or an update awaits each of its steps only when there is one (On Validate / On Post /
// On Put, change listeners, On AfterCommit): these pin what each step sees and their order, with
// every step present and with none, so that skipping the absent ones changes no answer.

const properties: Record<string, PropertyDef> = { title: { type: 'string' }, done: { type: 'boolean' }, n: { type: 'number' } };

/** Event scripts written as functions: each records its call; On Post/Put adds a property, On Validate hides one. */
function recordingEvents(log: string[]): CollectionEventRunner {
  const run = (event: CollectionEvent, input: EventInput): Promise<EventOutcome> => {
    log.push(`${event}:${JSON.stringify(input.object)}`);
    if (event === 'validate') return Promise.resolve({ object: input.object, hidden: ['n'], protectedProps: input.protectedProps ?? [] });
    if (event === 'post' || event === 'put') return Promise.resolve({ object: { ...input.object, title: `${String(input.object.title)}!` }, hidden: input.hidden ?? [], protectedProps: input.protectedProps ?? [] });
    return Promise.resolve({ object: input.object, hidden: [], protectedProps: [] });
  };
  return {
    has: (event) => event === 'validate' || event === 'post' || event === 'put' || event === 'aftercommit',
    run,
    runGetBatch: (_ctx, objects) => Promise.resolve(objects.map((object) => ({ object, hidden: [], protectedProps: [] }))),
  };
}

describe.each(storeKinds())('write steps of a create and an update ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  const log: string[] = [];
  let watched: Collection;

  beforeAll(async () => {
    store = await kind.make();
    watched = new Collection({ path: '/watched', properties, store: store.store.collection('watched'), events: recordingEvents(log) });
    watched.watchChanges((change) => {
      if (change.kind !== 'resync') log.push(`change ${change.kind}:${String(change.object.title)}`);
    });
    const plain = new Collection({ path: '/plain', properties, store: store.store.collection('plain') });
    t = await startTestServer(store.store, [watched, plain]);
  });
  afterAll(async () => {
    await t.close();
    await store.dispose();
  });

  it('with no event and no listener: the stored object, booleans false, id given', async () => {
    const res = await t.request('POST', '/plain', { body: { title: 'a', n: 1 } });
    expect(res.status).toBe(200);
    const created = res.body as Record<string, unknown>;
    expect(created).toEqual({ id: expect.stringMatching(/^[0-9a-f]{16}$/), title: 'a', n: 1, done: false });
    const read = await t.request('GET', `/plain/${String(created.id)}`);
    expect(read.body).toEqual(created);
    const put = await t.request('PUT', `/plain/${String(created.id)}`, { body: { title: 'b' } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ ...created, title: 'b' });
  });

  it('a create answers `id` first, the same bytes as a GET of it (with and without event scripts)', async () => {
    for (const path of ['/plain', '/watched']) {
      const res = await t.request('POST', path, { body: { title: 'order', n: 2 } });
      expect(res.status).toBe(200);
      expect(res.text.startsWith('{"id":"')).toBe(true);
      const read = await t.request('GET', `${path}/${String((res.body as { id: string }).id)}`);
      expect(read.text.startsWith('{"id":"')).toBe(true);
      // /watched's On Validate hides `n` from the create's answer (hide() is for that answer only).
      if (path === '/plain') expect(read.text).toBe(res.text);
    }
  });

  it('every step, in order: On Validate, On Post (with the id), the store, the change listener, On AfterCommit', async () => {
    log.length = 0;
    const res = await t.request('POST', '/watched', { body: { title: 'a', n: 1 } });
    expect(res.status).toBe(200);
    const created = res.body as Record<string, unknown>;
    // On Validate hid n from the answer; On Post's change is stored.
    expect(created).toEqual({ id: expect.stringMatching(/^[0-9a-f]{16}$/), title: 'a!', done: false });
    const id = String(created.id);
    // Objects compared as objects: a store may answer its properties in another order.
    const seen = log.map((line) => {
      const at = line.indexOf(':');
      return [line.slice(0, at), line.startsWith('change') ? line.slice(at + 1) : JSON.parse(line.slice(at + 1))];
    });
    expect(seen).toEqual([
      ['validate', { title: 'a', n: 1, done: false }],
      ['post', { title: 'a', n: 1, done: false, id }],
      ['change create', 'a!'],
      ['aftercommit', { id, title: 'a!', n: 1, done: false }],
    ]);
    log.length = 0;
    const put = await t.request('PUT', `/watched/${id}`, { body: { title: 'b' } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ id, title: 'b!', done: false });
    expect(log.map((line) => line.split(':')[0])).toEqual(['validate', 'put', 'change update', 'aftercommit']);
  });
});
