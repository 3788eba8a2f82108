import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, createEmbeddedStore } from '@svc/core';
import type { Store } from '@svc/core';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// Issue 11 (3): `?{"title":{"$regex":"^(a+)+$"}}` over a stored 'a' x 30 + '!' took 7.4 s on the
// embedded store's event loop (x4 per two more characters), and every other request waited.

let dir: string;
let store: Store;
let t: TestServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-regex-'));
  store = await createEmbeddedStore({ dir });
  t = await startTestServer(store, [new Collection({ path: '/posts', properties: { title: { type: 'string' } }, store: store.collection('posts') })]);
  for (const title of ['a'.repeat(40) + '!', 'Hello World', 'hello there', 'line one\nline two']) await t.client().request('POST', '/posts', { body: { title } });
});

afterAll(async () => {
  await t.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const query = (q: object) => t.client().request('GET', `/posts?${encodeURIComponent(JSON.stringify(q))}`);

describe('$regex on the embedded store runs in linear time', () => {
  // No clock here: with backtracking the 41-character title would take hours (x4 per two more
  // characters from 7.4 s at 31), so the test's own timeout is the bound.
  it('a catastrophic-backtracking pattern answers', async () => {
    const res = await query({ title: { $regex: '^(a+)+$' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    const nested = await query({ title: { $regex: '^((a|aa)+)+$' } });
    expect(nested.body).toEqual([]);
  });

  it('keeps the usual semantics: $options i, m, s, anchors, classes', async () => {
    const titles = async (q: object) => ((await query(q)).body as { title: string }[]).map((p) => p.title).sort();
    expect(await titles({ title: { $regex: '^hello', $options: 'i' } })).toEqual(['Hello World', 'hello there']);
    expect(await titles({ title: { $regex: '^hello' } })).toEqual(['hello there']);
    expect(await titles({ title: { $regex: '^line two$', $options: 'm' } })).toEqual(['line one\nline two']);
    expect(await titles({ title: { $regex: 'one.line', $options: 's' } })).toEqual(['line one\nline two']);
    expect(await titles({ title: { $regex: '\\w+!$' } })).toEqual(['a'.repeat(40) + '!']);
  });

  it('backreferences and lookarounds (they need backtracking) answer 400', async () => {
    for (const pattern of ['(a)\\1', 'a(?=b)', '(?<!x)a']) {
      const res = await query({ title: { $regex: pattern } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status: 400, message: expect.stringMatching(/linear time/) });
    }
  });
});
