import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';
import { startTestServer } from './helpers/http.js';
import { expandCollections, sameCaller, startPlainTwin } from './helpers/expandApps.js';
import type { TestClient, TestServer } from './helpers/http.js';

// Issue 25: `$expand` from stored texts against the object path, on random data changed between
// requests. Related reads by id go straight to the store's id index where nothing limits the
// caller's read (/writers, /labels) and through the compiled query where a list rule does
// (/guarded). Every answer must be byte for byte the
// object path's (the same request to a twin server over the same store with `fastPaths: false`),
// and the same request asked again the same bytes. Both stores (on MongoDB both requests take the object path).

type Obj = Record<string, unknown> & { id: string };
const ROOT = { 'svc-ssh-key': 'dev' };

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.each(storeKinds())('expand on random data equals the object path ($name store)', (kind) => {
  let store: TestStore;
  let t: TestServer;
  let plain: TestServer;
  let anon: TestClient;
  const next = random(2511);
  const pick = <T,>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const writers: string[] = [];
  const labels: string[] = [];
  const guarded: string[] = [];
  const posts: string[] = [];
  const texts = ['ann', 'bob "the quill"', 'é 😀', 'line\nbreak', '"writer":"not a key"', '', '\\'];

  beforeAll(async () => {
    store = await kind.make();
    const c = expandCollections(store.store);
    const resources = () => [
      c('/writers', { name: { type: 'string' }, bio: { type: 'string' }, n: { type: 'number' } }),
      c('/labels', { label: { type: 'string' } }),
      // A list rule: hidden ones are absent (null) for everyone but root.
      c('/guarded', { name: { type: 'string' }, hidden: { type: 'boolean' } }, { rules: { list: { hidden: { $ne: true } }, read: { hidden: { $ne: true } } } }),
      c('/posts', {
        title: { type: 'string' },
        n: { type: 'number' },
        writer: { type: 'relation', collection: '/writers' },
        labels: { type: 'relation', collection: '/labels', many: true },
        guarded: { type: 'relation', collection: '/guarded' },
      }),
    ];
    t = await startTestServer(store.store, resources());
    plain = await startPlainTwin(store.store, resources);
    anon = t.client();
    for (let i = 0; i < 8; i++) writers.push(await make('/writers', { name: pick(texts), ...(next() < 0.5 ? { bio: pick(texts) } : {}), n: i }));
    for (let i = 0; i < 5; i++) labels.push(await make('/labels', { label: pick(texts) }));
    for (let i = 0; i < 4; i++) guarded.push(await make('/guarded', { name: pick(texts), hidden: i % 2 === 1 }));
    for (let i = 0; i < 30; i++) await addPost(i);
  }, 60_000);
  afterAll(async () => {
    await plain?.close();
    await t?.close();
    await store?.dispose();
  });

  async function make(path: string, body: object): Promise<string> {
    const res = await t.request('POST', path, { body, headers: ROOT });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body as Obj).id;
  }

  /** A post with random relations: an id (often the same as other posts'), null, none, or (written under the store) an id of nothing. */
  async function addPost(n: number): Promise<void> {
    const r = next();
    const writer = r < 0.6 ? { writer: pick(writers) } : r < 0.7 ? { writer: null } : r < 0.8 ? { writer: `gone-${n}` } : {};
    const many = Array.from({ length: Math.floor(next() * 4) }, () => (next() < 0.85 ? pick(labels) : `gone-label-${n}`));
    const body = { title: `p${n} ${pick(texts)}`, n, ...writer, labels: many, ...(next() < 0.7 ? { guarded: pick(guarded) } : {}) };
    if (JSON.stringify(body).includes('gone-')) {
      // The app refuses a relation to nothing; the store keeps what it is given (as after a delete under the store).
      await store.store.collection('posts').insert({ id: `post-${n}`, ...body });
      posts.push(`post-${n}`);
    } else {
      posts.push(await make('/posts', body));
    }
  }

  const q = (query: object): string => `/posts?${encodeURIComponent(JSON.stringify(query))}`;

  async function compare(client: TestClient, query: Record<string, unknown>): Promise<void> {
    const first = await client.request('GET', q(query));
    const again = await client.request('GET', q(query));
    const objects = await sameCaller(plain, client).request('GET', q(query));
    expect(first.status, first.text).toBe(200);
    expect(objects.status, objects.text).toBe(200);
    expect(first.text, JSON.stringify(query)).toBe(objects.text);
    expect(again.text, JSON.stringify(query)).toBe(first.text);
  }

  it('answers the object path\'s bytes for random lists, callers and changes in between', async () => {
    // One relation alone (['writer'], ['guarded'], { writer: true }), and several, each asked twice.
    const expands: unknown[] = [['writer'], ['writer', 'labels'], ['labels'], ['guarded', 'writer'], ['guarded'], { writer: true }, { writer: true, labels: { $limit: 1 } }, { labels: { $sort: { label: -1 } } }];
    const root: TestClient = { sid: undefined, headers: ROOT, request: (method: string, path: string) => t.request(method, path, { headers: ROOT }) };
    for (let step = 0; step < 40; step++) {
      const r = next();
      if (r < 0.15) {
        await t.request('PUT', `/writers/${pick(writers)}`, { body: { name: pick(texts) }, headers: ROOT });
      } else if (r < 0.25) {
        await t.request('PUT', `/guarded/${pick(guarded)}`, { body: { hidden: next() < 0.5 }, headers: ROOT });
      } else if (r < 0.32) {
        const id = pick(posts);
        if (!id.startsWith('post-')) await t.request('PUT', `/posts/${id}`, { body: { writer: pick(writers) }, headers: ROOT });
      } else if (r < 0.38) {
        await addPost(posts.length);
      } else if (r < 0.42) {
        // Removed under the store: every post pointing at it now answers null.
        const gone = writers.splice(Math.floor(next() * writers.length), 1)[0] as string;
        await store.store.collection('writers').remove({ id: gone });
        writers.push(await make('/writers', { name: pick(texts), n: step }));
      }
      const query: Record<string, unknown> = { $expand: pick(expands), $sort: { n: 1 } };
      if (next() < 0.3) query.$limit = 1 + Math.floor(next() * 20);
      if (next() < 0.2) query.$skip = Math.floor(next() * 5);
      await compare(next() < 0.5 ? anon : root, query);
    }
  });
});
