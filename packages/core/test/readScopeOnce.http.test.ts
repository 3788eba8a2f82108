import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Collection } from '@svc/core';
import { Visibility } from '../src/access/Visibility.js';
import { storeKinds } from './helpers/stores.js';
import type { StoreKind, TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 39: a request's read scope (refusals, the rules' filters, the property read plan, what is
// hidden) is made once and taken by every read of that request: a write's pre-read, its checks
// of unreadable properties and the net on its answer; a GET's count, list or object and the net.

const ROOT = { 'svc-ssh-key': 'dev' };

describe('one read scope per request', () => {
  let store: TestStore;
  let t: TestServer;
  let id: string;

  beforeAll(async () => {
    const [embedded] = storeKinds();
    store = await (embedded as StoreKind).make();
    const notes = new Collection({
      path: '/notes',
      store: store.store.collection('notes'),
      publicCount: true,
      properties: { title: { type: 'string' }, owner: { type: 'string' }, pin: { type: 'string', private: true }, secret: { type: 'string', read: { owner: '@me.id' } } },
    });
    t = await startTestServer(store.store, [notes]);
    id = ((await t.request('POST', '/notes', { body: { title: 'a', owner: 'x', pin: '1234', secret: 's' }, headers: ROOT })).body as { id: string }).id;
  });
  afterAll(async () => {
    await t?.close();
    await store?.dispose();
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** How many read scopes answering `run` made. */
  async function scopesOf(run: () => Promise<unknown>): Promise<number> {
    const made = vi.spyOn(Visibility.prototype, 'newScope');
    await run();
    const count = made.mock.calls.length;
    made.mockRestore();
    return count;
  }

  it('a PUT (pre-read, unreadable-property checks, answer) makes one', async () => {
    let status = 0;
    expect(await scopesOf(async () => (status = (await t.request('PUT', `/notes/${id}`, { body: { title: 'b' } })).status))).toBe(1);
    expect(status).toBe(200);
  });

  it('a POST and a DELETE make one each', async () => {
    let created = '';
    expect(await scopesOf(async () => (created = ((await t.request('POST', '/notes', { body: { title: 'c' } })).body as { id: string }).id))).toBe(1);
    expect(await scopesOf(() => t.request('DELETE', `/notes/${created}`))).toBe(1);
  });

  it('a GET of a list, of one object and of /count make one each', async () => {
    for (const path of ['/notes', `/notes/${id}`, '/notes/count']) {
      let status = 0;
      expect(await scopesOf(async () => (status = (await t.request('GET', path)).status)), path).toBe(1);
      expect(status, path).toBe(200);
    }
  });
});
