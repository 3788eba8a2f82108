import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, forwardCollection } from '@svc/core';
import type { CollectionChange, Doc, ObjectChange, PropertyDef } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// A change listener told inside the store's write (a webhook's outbox): on a store that can
// (insertAtCommit), creates, updates and deletes reach it in the write, what it writes there is
// committed with the write or not at all, and the listener after the write is not called again
// for them; on any other store, everything reaches the listener after the write, as before.

const properties: Record<string, PropertyDef> = { title: { type: 'string' }, n: { type: 'number' } };

describe.each(storeKinds())('change listeners told inside the write ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let inCommit = false;
  const after: string[] = [];
  const inside: string[] = [];
  const copiedAfter: string[] = [];
  const copiedInside: string[] = [];
  const upkeepAfter: string[] = [];
  const upkeepInside: string[] = [];
  /** What the listener inside the write does: write an event, skip, or fail its event. */
  let mode: 'event' | 'skip' | 'fail' = 'event';

  beforeAll(async () => {
    store = await kind.make();
    const events = store.store.collection('events');
    inCommit = typeof events.insertAtCommit === 'function';
    const watched = new Collection({ path: '/watched', properties, store: store.store.collection('watched') });
    watched.watchChanges(
      (change: CollectionChange) => {
        if (change.kind === 'resync') return;
        after.push(`${change.kind}:${String(change.object.title)}${change.kind === 'update' ? `<-${String(change.previous.title)}` : ''}`);
      },
      () => true,
      (change: ObjectChange) => {
        inside.push(`${change.kind}:${String(change.object.title)}${change.kind === 'update' ? `<-${String(change.previous.title)}` : ''}`);
        if (mode === 'skip' || events.insertAtCommit === undefined) return undefined;
        const failing = mode === 'fail';
        const id = `${change.kind}-${String(change.object.id)}-${String(change.object.title)}`;
        return events
          .insertAtCommit(() => {
            if (failing) throw new Error('the event cannot be stored');
            return { id, object: change.object } as Doc;
          })
          .catch(() => undefined);
      },
    );
    // A wrapper answering copies of what the store answers: the write's change is still told once.
    const copying = forwardCollection(store.store.collection('copied'), { call: (method, run) => run().then((r) => ((method === 'insert' || method === 'update') && r !== null ? { ...(r as Doc) } : r)) });
    const copied = new Collection({ path: '/copied', properties, store: copying });
    copied.watchChanges(
      (change: CollectionChange) => {
        if (change.kind !== 'resync') copiedAfter.push(`${change.kind}:${String(change.object.title)}`);
      },
      () => true,
      (change: ObjectChange) => {
        copiedInside.push(`${change.kind}:${String(change.object.title)}`);
        return events.insertAtCommit?.(() => ({ id: `copied-${change.kind}-${String(change.object.id)}` }));
      },
    );
    // Relations' onDelete upkeep: a cascade removes kids, setNull updates pets, both watched alike.
    const owners = new Collection({ path: '/owners', properties: { title: { type: 'string' } }, store: store.store.collection('owners') });
    const related = (path: string, onDelete: 'cascade' | 'setNull'): Collection => {
      const c = new Collection({ path, properties: { ...properties, owner: { type: 'relation', collection: '/owners', onDelete } }, store: store.store.collection(path.slice(1)) });
      c.watchChanges(
        (change: CollectionChange) => {
          if (change.kind !== 'resync') upkeepAfter.push(`${path}:${change.kind}:${String(change.object.title)}`);
        },
        () => true,
        (change: ObjectChange) => {
          upkeepInside.push(`${path}:${change.kind}:${String(change.object.title)}`);
          return events.insertAtCommit?.(() => ({ id: `upkeep-${change.kind}-${String(change.object.id)}` }));
        },
      );
      return c;
    };
    t = await startTestServer(store.store, [watched, copied, owners, related('/kids', 'cascade'), related('/pets', 'setNull')]);
  });
  afterAll(async () => {
    await t.close();
    await store.dispose();
  });

  it('creates, updates and deletes: inside the write where the store can, after it otherwise', async () => {
    mode = 'event';
    after.length = 0;
    inside.length = 0;
    const created = (await t.request('POST', '/watched', { body: { title: 'a', n: 1 } })).body as { id: string };
    expect((await t.request('PUT', `/watched/${created.id}`, { body: { title: 'b' } })).status).toBe(200);
    expect((await t.request('DELETE', `/watched/${created.id}`)).status).toBeLessThan(300);
    // A delete by a list of ids, one of them unknown: the objects removed are told, once each.
    const two = await Promise.all(['p', 'q'].map(async (title) => ((await t.request('POST', '/watched', { body: { title } })).body as { id: string }).id));
    expect((await t.request('DELETE', `/watched?${encodeURIComponent(JSON.stringify({ id: { $in: [...two, 'nothing-here'] } }))}`)).status).toBeLessThan(300);
    if (inCommit) {
      expect(inside).toEqual(['create:a', 'update:b<-a', 'delete:b', 'create:p', 'create:q', 'delete:p', 'delete:q']);
      expect(after).toEqual([]);
      // Each event was committed with its write: there once the write answered.
      const events = await store.store.collection('events').find({ id: { $in: [`create-${created.id}-a`, `update-${created.id}-b`, `delete-${created.id}-b`, ...two.map((id) => `delete-${id}-${id === two[0] ? 'p' : 'q'}`)] } }, { sort: { id: 1 } });
      expect(events).toHaveLength(5);
    } else {
      expect(inside).toEqual([]);
      expect(after).toEqual(['create:a', 'update:b<-a', 'delete:b', 'create:p', 'create:q', 'delete:p', 'delete:q']);
    }
  });

  it('told once, through a store wrapper that answers copies of the stored objects', async () => {
    const created = (await t.request('POST', '/copied', { body: { title: 'x' } })).body as { id: string };
    expect((await t.request('PUT', `/copied/${created.id}`, { body: { title: 'y' } })).status).toBe(200);
    expect(copiedInside).toEqual(inCommit ? ['create:x', 'update:y'] : []);
    expect(copiedAfter).toEqual(inCommit ? [] : ['create:x', 'update:y']);
  });

  it("relations' onDelete upkeep: a cascade's deletes and a setNull's updates are told inside their writes too", async () => {
    const owner = ((await t.request('POST', '/owners', { body: { title: 'o' } })).body as { id: string }).id;
    expect((await t.request('POST', '/kids', { body: { title: 'kid', owner } })).status).toBe(200);
    expect((await t.request('POST', '/pets', { body: { title: 'pet', owner } })).status).toBe(200);
    upkeepAfter.length = 0;
    upkeepInside.length = 0;
    expect((await t.request('DELETE', `/owners/${owner}`)).status).toBeLessThan(300);
    expect((await t.request('GET', '/kids')).body).toEqual([]);
    if (inCommit) {
      expect(upkeepInside.sort()).toEqual(['/kids:delete:kid', '/pets:update:pet']);
      expect(upkeepAfter).toEqual([]);
    } else {
      expect(upkeepInside).toEqual([]);
      expect(upkeepAfter.sort()).toEqual(['/kids:delete:kid', '/pets:update:pet']);
    }
  });

  it('a listener inside the write that writes nothing is called after it as well', async () => {
    mode = 'skip';
    after.length = 0;
    inside.length = 0;
    const created = (await t.request('POST', '/watched', { body: { title: 'c' } })).body as { id: string };
    expect((await t.request('PUT', `/watched/${created.id}`, { body: { title: 'd' } })).status).toBe(200);
    expect((await t.request('DELETE', `/watched/${created.id}`)).status).toBeLessThan(300);
    expect(after).toEqual(['create:c', 'update:d<-c', 'delete:d']);
    expect(inside).toEqual(inCommit ? ['create:c', 'update:d<-c', 'delete:d'] : []);
  });

  // Only a store that commits the listener's write with the object (the embedded engine) can hold this.
  if (kind.name === 'embedded')
    it('an event that cannot be stored fails its write: the object is not stored either', async () => {
    mode = 'fail';
    after.length = 0;
    const res = await t.request('POST', '/watched', { body: { title: 'lost' } });
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(after).toEqual([]);
    const list = (await t.request('GET', '/watched?title=lost')).body as unknown[];
    expect(list).toEqual([]);
    // A delete likewise: the object stays.
    mode = 'event';
    const kept = (await t.request('POST', '/watched', { body: { title: 'kept' } })).body as { id: string };
    mode = 'fail';
    expect((await t.request('DELETE', `/watched/${kept.id}`)).status).toBeGreaterThanOrEqual(500);
    expect((await t.request('GET', `/watched/${kept.id}`)).status).toBe(200);
    expect(after).toEqual([]);
    mode = 'event';
  });
});
