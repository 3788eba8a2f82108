import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection } from '@svc/core';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 38 item 13: a PUT did not check the merged object, so a value a script stored with the
// wrong type (or one stored before the property's type changed) was accepted where Deployd 1.2
// answers 400 {"errors": {"title": "must be a string"}, "status": 400}. Deployd's check
// (lib/resources/collection/index.js, Collection.validate on PUT, with validation@0.0.1): each
// property holding a value (not undefined, null, '', false or NaN) must be of its type, numbers
// and dates read with Number() and new Date().

const ROOT = { 'svc-ssh-key': 'dev' };

describe.each(storeKinds())('PUT checks the merged object as Deployd 1.2 ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;

  beforeAll(async () => {
    store = await kind.make();
    const items = new Collection({
      path: '/items',
      store: store.store.collection('items'),
      properties: {
        title: { type: 'string' },
        n: { type: 'number' },
        flag: { type: 'boolean' },
        obj: { type: 'object' },
        arr: { type: 'array' },
        when: { type: 'date' },
        secret: { type: 'string', read: false },
        note: { type: 'string' },
      },
    });
    t = await startTestServer(store.store, [items]);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await store?.dispose();
  });

  let next = 0;
  /** An object stored as a script or an older config left it, then a PUT changing only `note`. */
  const putOver = async (stored: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const id = `legacy${++next}`;
    await store.store.collection('items').insert({ id, ...stored });
    return t.request('PUT', `/items/${id}`, { body: { note: 'x' }, headers });
  };

  it('a stored value of the wrong type answers 400 "must be a <type>", as Deployd', async () => {
    const cases: [Record<string, unknown>, Record<string, string>][] = [
      [{ title: 5 }, { title: 'must be a string' }],
      [{ title: { a: 1 } }, { title: 'must be a string' }],
      [{ n: 'abc' }, { n: 'must be a number' }],
      [{ n: { a: 1 } }, { n: 'must be a number' }],
      [{ flag: 'yes' }, { flag: 'must be a boolean' }],
      [{ flag: 1 }, { flag: 'must be a boolean' }],
      [{ obj: [1] }, { obj: 'must be a object' }],
      [{ obj: 'text' }, { obj: 'must be a object' }],
      [{ arr: 'x' }, { arr: 'must be a array' }],
      [{ arr: { 0: 'x' } }, { arr: 'must be a array' }],
      [{ when: 'not a date' }, { when: 'must be a date' }],
      [{ title: 7, n: 'x' }, { title: 'must be a string', n: 'must be a number' }],
    ];
    for (const [stored, errors] of cases) {
      const res = await putOver(stored);
      expect([res.status, res.body], JSON.stringify(stored)).toEqual([400, { status: 400, statusCode: 400, errors }]);
      // Root too: Deployd checked every PUT.
      expect((await putOver(stored, ROOT)).status, JSON.stringify(stored)).toBe(400);
    }
    // Nothing was written.
    expect((await t.request('GET', `/items/legacy1`)).body).toEqual({ id: 'legacy1', title: 5 });
  });

  it("what Deployd let pass passes: no value, numbers and dates as Number() and new Date() read them", async () => {
    for (const stored of [{}, { title: '' }, { title: null }, { flag: false }, { n: 0 }, { n: '5' }, { n: true }, { when: 0 }, { when: '2024-01-02' }, { when: 1700000000000 }, { obj: {} }, { arr: [] }, { flag: true, title: 's', n: -1.5 }]) {
      const res = await putOver(stored);
      expect(res.status, JSON.stringify(stored)).toBe(200);
    }
  });

  it('a PUT that sends a right value for the property is stored', async () => {
    const id = `legacy${++next}`;
    await store.store.collection('items').insert({ id, title: 5, n: 'abc' });
    expect((await t.request('PUT', `/items/${id}`, { body: { title: 'fixed' } })).body).toMatchObject({ errors: { n: 'must be a number' } });
    const fixed = await t.request('PUT', `/items/${id}`, { body: { title: 'fixed', n: 2 } });
    expect([fixed.status, fixed.body]).toEqual([200, { id, title: 'fixed', n: 2 }]);
  });

  it('a property the caller may not read is not checked unless sent (no answer tells its type); root checks it', async () => {
    expect((await putOver({ secret: 5 })).status).toBe(200);
    expect((await putOver({ secret: 5 }, ROOT)).body).toMatchObject({ errors: { secret: 'must be a string' } });
  });
});
