import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';

// Issue 41: app.json `embeddedStore.engine: "sqlite"` runs the app on the on-disk engine (one
// database file in data/), the same REST answers as on the default store.
describe('app.json embeddedStore.engine "sqlite"', () => {
  it('stores the objects in data/store.sqlite and answers lists, queries, counts and GET by id', async () => {
    const t = await runApp({
      'app.json': { publicCount: true, embeddedStore: { engine: 'sqlite', fsync: true } },
      'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' }, n: { type: 'number', index: true }, done: { type: 'boolean' } } },
    });
    try {
      for (let n = 0; n < 20; n++) expect((await t.request('POST', '/todos', { title: `t${n}`, n, done: n % 2 === 0 })).status).toBe(200);
      const page = await t.request('GET', `/todos?${encodeURIComponent(JSON.stringify({ n: { $gte: 10 }, $sort: { n: -1 }, $limit: 3 }))}`);
      expect((page.body as { n: number }[]).map((d) => d.n)).toEqual([19, 18, 17]);
      const done = await t.request('GET', `/todos/count?${encodeURIComponent(JSON.stringify({ done: true }))}`);
      expect(done.body).toEqual({ count: 10 });
      const one = (page.body as { id: string }[])[0] as { id: string };
      const byId = await t.request('GET', `/todos/${one.id}`);
      expect(byId.body).toEqual(one);
      expect((await t.request('PUT', `/todos/${one.id}`, { title: 'changed' })).status).toBe(200);
      expect((await t.request('GET', `/todos/${one.id}`)).body).toMatchObject({ title: 'changed', n: 19 });
      expect((await t.request('DELETE', `/todos/${one.id}`)).status).toBe(204);
      expect((await t.request('GET', `/todos/${one.id}`)).status).toBe(404);
      expect(await readdir(join(t.dir, 'data'))).toContain('store.sqlite');
    } finally {
      await t.close();
    }
  });
});
