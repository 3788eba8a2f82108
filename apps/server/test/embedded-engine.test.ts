import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { memoryLogger, runApp, writeApp } from './helpers/app.js';

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

// Issue 41: app.json `embeddedStore.cacheMb` / `mmapMb` reach the engine: with a memory map, the
// server's process maps its database file (reads are page faults on the OS cache, not read()).
describe('app.json embeddedStore.mmapMb', () => {
  it('maps the database file of an app that asks for it, and answers the same', async () => {
    const files = {
      'app.json': { embeddedStore: { cacheMb: 2, mmapMb: 16 } },
      'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' }, n: { type: 'number', index: true } } },
    };
    const dir = await writeApp(files);
    const mapped = async (): Promise<boolean> => (await readFile('/proc/self/maps', 'utf8')).split('\n').some((line) => line.endsWith(` ${join(dir, 'data', 'store.sqlite')}`));
    const start = (): Promise<RunningApp> => startApp({ appDir: dir, port: 0, host: '127.0.0.1', env: 'development', logger: memoryLogger() });
    let app = await start();
    try {
      for (let n = 0; n < 40; n++) expect((await fetch(`${app.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'x'.repeat(300), n }) })).status).toBe(200);
      await app.close(); // checkpointed: the next reads are of the database file
      app = await start();
      const list = (await (await fetch(`${app.url}/todos?${encodeURIComponent(JSON.stringify({ n: { $gte: 0 }, $sort: { n: 1 } }))}`)).json()) as { n: number }[];
      expect(list.map((d) => d.n)).toEqual(Array.from({ length: 40 }, (_, n) => n));
      expect(await mapped()).toBe(true);
    } finally {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// Issue 41: the engine is the default embedded store; the old one stays selectable, and an app's
// old data files move to the engine at its first start without it.
describe('the embedded engine as the default store', () => {
  const todos = { type: 'Collection', properties: { title: { type: 'string' }, n: { type: 'number', index: true } } };
  const users = { type: 'UserCollection', properties: { name: { type: 'string' } } };
  const start = (appDir: string, logger = memoryLogger()): Promise<RunningApp> => startApp({ appDir, port: 0, host: '127.0.0.1', env: 'development', logger });
  const call = async (app: RunningApp, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(app.url + path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };

  it('an app on "files" keeps the old files; started without the setting its data is converted, served, the old files moved aside; "files" then refuses the folder', async () => {
    const dir = await writeApp({ 'app.json': { embeddedStore: { engine: 'files' } }, 'resources/todos/config.json': todos, 'resources/users/config.json': users });
    let app: RunningApp | undefined;
    try {
      app = await start(dir);
      const ids: string[] = [];
      for (let n = 0; n < 30; n++) ids.push(((await call(app, 'POST', '/todos', { title: `t${n}`, n })).body as { id: string }).id);
      expect((await call(app, 'PUT', `/todos/${ids[3]}`, { title: 'changed' })).status).toBe(200);
      expect((await call(app, 'DELETE', `/todos/${ids[4]}`)).status).toBe(204);
      expect((await call(app, 'POST', '/users', { username: 'ann', password: 'secret-pw-1', name: 'Ann' })).status).toBe(200);
      await app.close();
      app = undefined;
      const files = await readdir(join(dir, 'data'));
      expect(files).toContain('todos.db');
      expect(files).not.toContain('store.sqlite');

      // No engine named: the default, the engine.
      await writeFile(join(dir, 'app.json'), JSON.stringify({ publicCount: true }));
      const logger = memoryLogger();
      app = await start(dir, logger);
      expect(logger.lines.some((l) => /converted \d+ objects of \d+ collections .* \(counts and checksums verified\)/.test(l))).toBe(true);
      const list = (await call(app, 'GET', `/todos?${encodeURIComponent(JSON.stringify({ $sort: { n: 1 } }))}`)).body as { id: string; n: number; title: string }[];
      expect(list.map((d) => d.n)).toEqual([...Array(30).keys()].filter((n) => n !== 4));
      expect(list.find((d) => d.id === ids[3])?.title).toBe('changed');
      expect((await call(app, 'GET', `/todos/count?${encodeURIComponent(JSON.stringify({ n: { $gte: 20 } }))}`)).body).toEqual({ count: 10 });
      expect((await call(app, 'POST', '/users/login', { username: 'ann', password: 'secret-pw-1' })).status).toBe(200);
      expect((await call(app, 'POST', '/todos', { title: 'after', n: 100 })).status).toBe(200);
      await app.close();
      app = undefined;
      const after = await readdir(join(dir, 'data'));
      expect(after).toContain('store.sqlite');
      expect(after.filter((f) => f.endsWith('.db'))).toEqual([]);
      const aside = after.find((f) => f.startsWith('old-files-'));
      expect(aside).toBeDefined();
      expect(await readdir(join(dir, 'data', aside as string))).toEqual(expect.arrayContaining(['todos.db', 'users.db']));

      // Started again: nothing converted again, the write made after the conversion kept.
      const again = memoryLogger();
      app = await start(dir, again);
      expect(again.lines.some((l) => l.includes('convert'))).toBe(false);
      expect((await call(app, 'GET', '/todos/count')).body).toEqual({ count: 30 });
      await app.close();
      app = undefined;

      // The old store is still selectable, and does not read the engine's database.
      await writeFile(join(dir, 'app.json'), JSON.stringify({ embeddedStore: { engine: 'files' } }));
      await expect(start(dir)).rejects.toThrow(/holds store\.sqlite/);
    } finally {
      await app?.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
