import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Collection, createEmbeddedStore } from '@svc/core';
import type { Store } from '@svc/core';
import { utf8Of } from '../src/http/reply.js';
import { startTestServer } from './helpers/http.js';
import type { TestServer } from './helpers/http.js';

// A large answer is encoded straight into a buffer of as many bytes as it has characters, and
// again by Buffer.from when it does not fit (reply.ts, utf8Of): the bytes must be Buffer.from's
// for any text, and an HTTP answer of any characters must arrive whole, with its exact length.

const samples: Record<string, string> = {
  ascii: `[${'{"a":"x"},'.repeat(3000)}{"a":"y"}]`,
  latin1: `"${'é'.repeat(20_000)}"`,
  'ascii then one character beyond at the end': `"${'a'.repeat(20_000)}ü"`,
  'beyond ASCII at the start only': `"ü${'a'.repeat(20_000)}"`,
  'CJK and emoji (surrogate pairs)': `"${'漢字😀'.repeat(6000)}"`,
  'a lone surrogate': `"${'a'.repeat(20_000)}\ud800${'b'.repeat(100)}\udc00"`,
  'a rope of pieces': ['[', ...Array.from({ length: 200 }, (_, i) => `{"i":${i},"t":"${'ẞ'.repeat(i % 7)}${'z'.repeat(150)}"}`).join(','), ']'].join(''),
  empty: '',
};

describe('utf8Of', () => {
  for (const [name, text] of Object.entries(samples)) {
    it(`gives Buffer.from's bytes: ${name}`, () => {
      expect(utf8Of(text).equals(Buffer.from(text, 'utf8'))).toBe(true);
    });
  }
});

describe('large answers over HTTP', () => {
  let dir: string;
  let store: Store;
  let server: TestServer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-reply-bytes-'));
    store = await createEmbeddedStore({ dir });
    const notes = new Collection({ path: '/notes', properties: { text: { type: 'string' } }, store: store.collection('notes') });
    server = await startTestServer(store, [notes]);
  });
  afterAll(async () => {
    await server.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('arrive whole with their exact byte length, ASCII or not', async () => {
    const texts = [samples.ascii, samples.latin1, samples['CJK and emoji (surrogate pairs)'], samples['ascii then one character beyond at the end']] as string[];
    for (const text of texts) {
      const created = await server.request('POST', '/notes', { body: { text } });
      expect(created.status).toBe(200);
      const id = (created.body as { id: string }).id;
      // Over the large-answer threshold (16 K characters) both as one object and as a list.
      for (const path of [`/notes/${id}`, `/notes?${encodeURIComponent(JSON.stringify({ id }))}`]) {
        const res = await fetch(`${server.url}${path}`);
        const bytes = Buffer.from(await res.arrayBuffer());
        expect(Number(res.headers.get('content-length'))).toBe(bytes.length);
        const body = JSON.parse(bytes.toString('utf8')) as { text: string } | { text: string }[];
        expect((Array.isArray(body) ? body[0] : body)?.text).toBe(text);
      }
    }
  });
});
