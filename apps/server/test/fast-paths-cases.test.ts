import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createEngineStore } from '@svc/core';
import type { Logger, Store } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { writeApp } from './helpers/app.js';

// Issue 39: requests that the generated table of fast-paths-differential.test.ts (pnpm
// test:reliability) does not make, found by tools/read-mutants.mjs (each case names the mutant it
// catches). Two servers share one embedded store, one with the shortcuts and one with app.json
// `fastPaths: false`: every answer of the first must be the second's, byte for byte. Seconds, so in
// pnpm test (read-mutants.mjs runs this file before the slow suite).

const ROOT = { 'svc-ssh-key': 'development' };
const relation = (collection: string, many = false) => ({ type: 'relation', collection, onDelete: 'setNull', ...(many ? { many } : {}) });

const files = {
  'resources/tags/config.json': { type: 'Collection', properties: { text: { type: 'string' }, parent: relation('/tags') } },
  // A relation target with an On Get: its objects are what the script makes of them, never its stored texts.
  'resources/seen/config.json': { type: 'Collection', properties: { text: { type: 'string' } } },
  'resources/seen/get.js': 'this.seen = true;\n',
  'resources/items/config.json': {
    type: 'Collection',
    properties: { title: { type: 'string' }, n: { type: 'number' }, tag: relation('/tags'), tags: relation('/tags', true), look: relation('/seen') },
  },
};

type Obj = Record<string, unknown> & { id: string };

/** A logger that keeps only the plans that answered (access lines). */
function planLogger(plans: string[]): Logger {
  const none = (): void => undefined;
  return { info: none, warn: none, error: none, access: (entry) => entry.plan !== undefined && plans.push(entry.plan) };
}

describe('the shortcuts answer what the plain path answers: the cases the table misses', () => {
  let dir: string;
  let store: Store;
  let fast: RunningApp;
  let plain: RunningApp;
  const ids: Record<string, string> = {};
  const plans: string[] = [];
  /** The plans of the fast server's last `count` answers (each told once its answer is over), forgotten. */
  const answered = async (count: number): Promise<string[]> => {
    await vi.waitFor(() => expect(plans.length).toBeGreaterThanOrEqual(count));
    return plans.splice(0);
  };

  const send = async (app: RunningApp, method: string, path: string, body?: object): Promise<{ status: number; type: string | null; text: string }> => {
    const res = await fetch(app.url + path, { method, headers: { 'content-type': 'application/json', ...ROOT }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  };
  const write = async (method: string, path: string, body?: object): Promise<Obj> => {
    const res = await send(fast, method, path, body);
    expect(res.status, res.text).toBe(200);
    return JSON.parse(res.text) as Obj;
  };
  /** A GET of an anonymous visitor to both servers: the fast answer, checked against the plain one. */
  const alike = async (path: string): Promise<unknown> => {
    const get = async (app: RunningApp) => {
      const res = await fetch(app.url + path);
      return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
    };
    const got = await get(fast);
    expect({ path, ...got }).toEqual({ path, ...(await get(plain)) });
    return JSON.parse(got.text) as unknown;
  };
  const q = (query: object): string => `/items?${encodeURIComponent(JSON.stringify(query))}`;

  beforeAll(async () => {
    dir = await writeApp(files);
    store = await createEngineStore({ dir: join(dir, 'data') });
    const common = { appDir: dir, port: 0, host: '127.0.0.1', env: 'development' as const, store, dashboard: false };
    fast = await startApp({ ...common, logger: planLogger(plans) });
    plain = await startApp({ ...common, logger: planLogger([]), fastPaths: false });
    ids.red = (await write('POST', '/tags', { text: 'red' })).id;
    ids.blue = (await write('POST', '/tags', { text: 'blue' })).id;
    ids.look = (await write('POST', '/seen', { text: 'a look' })).id;
    await write('POST', '/items', { title: 'one', n: 1, tag: ids.red, tags: [ids.red, ids.blue], look: ids.look });
    await write('POST', '/items', { title: 'two', n: 2, tag: ids.blue, tags: [ids.blue], look: ids.look });
    await write('POST', '/items', { title: 'three', n: 3, tags: [] });
  }, 60_000);

  afterAll(async () => {
    await fast?.close();
    await plain?.close();
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  // A many relation expanded again after a related object changed: spliced anew each time.
  it('a many relation expanded again after a related object changed', async () => {
    const query = q({ $sort: { n: 1 }, $expand: ['tags'] });
    await alike(query);
    await alike(query);
    await write('PUT', `/tags/${ids.red}`, { text: 'red, renamed' });
    const items = (await alike(query)) as { tags: Obj[] }[];
    expect(items[0]?.tags.map((t) => t.text)).toEqual(['red, renamed', 'blue']);
    // From the texts, spliced anew each time.
    expect(await answered(3)).toEqual(['splicedTexts', 'splicedTexts', 'splicedTexts']);
    await write('PUT', `/tags/${ids.red}`, { text: 'red' });
  });

  // A relation of one expanded again after the related object changed: spliced anew each time.
  it('a relation of one expanded again after the related object changed', async () => {
    const query = q({ $sort: { n: 1 }, $expand: ['tag'] });
    await alike(query);
    await alike(query);
    expect(await answered(2)).toEqual(['splicedTexts', 'splicedTexts']);
    await write('PUT', `/tags/${ids.blue}`, { text: 'blue, renamed' });
    const items = (await alike(query)) as { tag: Obj | undefined }[];
    expect(items.map((i) => i.tag?.text)).toEqual(['red', 'blue, renamed', undefined]);
    expect(await answered(1)).toEqual(['splicedTexts']);
  });

  // texts-onGet: a related collection with On Get spliced from its stored texts (the script not run).
  it('a relation to a collection with On Get, alone and beside another', async () => {
    for (const query of [q({ $expand: ['look'] }), q({ $expand: ['look'] }), q({ $expand: ['tag', 'look'] }), q({ $expand: ['tags', 'look'] })]) {
      const items = (await alike(query)) as { look?: Obj | null }[];
      expect(items[0]?.look?.seen).toBe(true);
    }
    expect(await answered(4)).toEqual(['objects', 'objects', 'objects', 'objects']);
  });

  // Not a mutant's catch: a nested `$expand` after changes at either level, each answer twice.
  it('a nested $expand after changes at both levels', async () => {
    const query = q({ $sort: { n: 1 }, $expand: { tag: { $expand: { parent: true } } } });
    const twice = async (): Promise<void> => {
      for (let i = 0; i < 2; i++) await alike(query);
    };
    await twice();
    await write('PUT', `/tags/${ids.red}`, { text: 'red 2' });
    await twice();
    await write('PUT', `/tags/${ids.red}`, { parent: ids.blue });
    await twice();
    await write('PUT', `/tags/${ids.blue}`, { text: 'blue 2' });
    await twice();
    await write('PUT', `/tags/${ids.red}`, { parent: null });
    await twice();
    await write('PUT', `/tags/${ids.red}`, { parent: ids.red });
    await twice();
    expect((await send(fast, 'DELETE', `/tags/${ids.blue}`)).status).toBe(204);
    const items = (await alike(query)) as { tag?: Obj | null }[];
    expect(items.map((i) => i.tag?.text)).toEqual(['red 2', undefined, undefined]);
    await alike(query);
  });
});
