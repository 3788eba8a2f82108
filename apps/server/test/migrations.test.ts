import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { memoryLogger, writeApp } from './helpers/app.js';
import { migrateCommand } from '../src/migrateCommand.js';

// Issue 43, migrations from schema changes: the development server turns property changes into
// migration files (a hand edit of config.json, the dashboard), production applies the committed
// files at start, a failed one keeps only its collection from being served; svc migrate.

const mongo = process.env.SVC_TEST_MONGODB_URL;
/** files: the embedded store of old, sqlite: the embedded engine (the default), mongodb: MongoDB (FerretDB in CI). */
const KINDS = ['files', 'sqlite', ...(mongo ? ['mongodb'] : [])];
if (!mongo) process.stderr.write('migrations (server) on MongoDB SKIPPED: SVC_TEST_MONGODB_URL is not set\n');
const ROOT = { 'content-type': 'application/json', 'svc-ssh-key': 'dev' };

const dirs: string[] = [];
const apps: RunningApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function until(check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Rig {
  dir: string;
  /** MongoDB: the database's URL. */
  db?: string;
  start(env: 'development' | 'production', options?: { watch?: boolean }): Promise<{ app: RunningApp; lines: string[] }>;
}

async function rig(kind: string, books: Record<string, unknown>, extra: Record<string, string | object> = {}): Promise<Rig> {
  const dir = await writeApp({
    // The engine is the default embedded store: "sqlite" names none, "files" chooses the old one.
    ...(kind === 'files' ? { 'app.json': { embeddedStore: { engine: 'files' } } } : {}),
    'resources/books/config.json': { type: 'Collection', properties: books },
    'resources/authors/config.json': { type: 'Collection', properties: { name: { type: 'string' } } },
    ...extra,
  });
  dirs.push(dir);
  const db = kind === 'mongodb' ? `${(mongo as string).replace(/\/$/, '')}/svc_migr_app_${randomBytes(5).toString('hex')}` : undefined;
  return {
    dir,
    ...(db ? { db } : {}),
    async start(env, options = {}) {
      const logger = memoryLogger();
      const app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', env, logger, ...(db ? { db } : {}), ...(options.watch ? { watch: true } : {}) });
      apps.push(app);
      return { app, lines: logger.lines };
    },
  };
}

const json = async (res: Response): Promise<unknown> => res.json();
const post = (app: RunningApp, path: string, body: unknown): Promise<Response> => fetch(`${app.url}${path}`, { method: 'POST', headers: ROOT, body: JSON.stringify(body) });
const list = async (app: RunningApp, path: string): Promise<Record<string, unknown>[]> => (await json(await fetch(`${app.url}${path}?${encodeURIComponent('{"$sort":{"n":1},"$limit":1000}')}`, { headers: ROOT }))) as Record<string, unknown>[];
const files = async (dir: string): Promise<string[]> => (existsSync(join(dir, 'migrations')) ? (await readdir(join(dir, 'migrations'))).filter((f) => f.endsWith('.json')).sort() : []);
const readMigration = async (dir: string, file: string): Promise<{ collection: string; steps: Record<string, unknown>[] }> => JSON.parse(await readFile(join(dir, 'migrations', file), 'utf8')) as { collection: string; steps: Record<string, unknown>[] };

async function seed(app: RunningApp, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await post(app, '/books', { n: i, title: `t${i}`, pages: i % 5 === 0 ? `about ${i}` : String(i), extra: { i } });
    expect(res.status).toBe(200);
  }
}

describe.each(KINDS)('migrations in an app (%s store)', (kind) => {
  const BOOKS = { n: { type: 'number' }, title: { type: 'string' }, pages: { type: 'string' }, extra: { type: 'object' } };

  it('development: config.json edited while the server runs becomes a migration file, applied at once; production starts apply nothing again', async () => {
    const r = await rig(kind, BOOKS);
    const dev = await r.start('development', { watch: true });
    await seed(dev.app, 10);
    // A hand edit: title renamed (the hint), pages made a number, extra removed, an index.
    await writeFile(join(r.dir, 'resources/books/config.json'), JSON.stringify({ type: 'Collection', properties: { n: { type: 'number', index: true }, headline: { type: 'string', $renameFrom: 'title' }, pages: { type: 'number' } } }));
    await until(async () => (await files(r.dir)).length === 1 && !(await readFile(join(r.dir, 'resources/books/config.json'), 'utf8')).includes('$renameFrom'));
    const [file] = await files(r.dir);
    expect(file).toMatch(/^\d{8}T\d{9}-books-rename-title-headline-convert-pages-and-2-more\.json$/);
    const migration = await readMigration(r.dir, file as string);
    expect(migration.collection).toBe('books');
    expect(migration.steps.map((s) => s.op)).toEqual(['rename', 'convert', 'remove', 'addIndex']);
    expect(migration.steps[1]).toMatchObject({ property: 'pages', from: 'string', to: 'number', invalid: 'unset', note: expect.stringContaining('"abc" -> does not convert') });
    // Applied before the new version serves (the previous one serves meanwhile).
    await until(async () => dev.lines.some((l) => /reloaded \d+ resources/.test(l)));
    const after = await list(dev.app, '/books');
    expect(after[1]).toMatchObject({ n: 1, headline: 't1', pages: 1 });
    expect(after[1]).not.toHaveProperty('extra');
    expect(after[0]).not.toHaveProperty('pages');
    expect(dev.lines.join('\n')).toMatch(/migration \S+: step 2\/4 convert pages string -> number .*: 10 objects changed/);
    await dev.app.close();

    const prod = await r.start('production');
    expect(prod.lines.filter((l) => l.includes('migration'))).toEqual([]);
    expect((await list(prod.app, '/books')).map((b) => b.pages)).toEqual([undefined, 1, 2, 3, 4, undefined, 6, 7, 8, 9]);
    expect((await readFile(join(r.dir, 'resources/books/config.json'), 'utf8')).includes('$renameFrom')).toBe(false);
  }, 180_000);

  it('production applies a committed migration once at start; a failed one keeps only its collection from being served until it is fixed', async () => {
    const r = await rig(kind, BOOKS);
    const first = await r.start('production');
    await seed(first.app, 10);
    await first.app.close();
    // Deployed: config.json and the migration files, one of which fails (pages do not all convert).
    await writeFile(join(r.dir, 'resources/books/config.json'), JSON.stringify({ type: 'Collection', properties: { n: { type: 'number' }, title: { type: 'string' }, pages: { type: 'number' }, extra: { type: 'object' } } }));
    await writeFile(join(r.dir, 'resources/authors/config.json'), JSON.stringify({ type: 'Collection', properties: { fullName: { type: 'string' } } }));
    await mkdir(join(r.dir, 'migrations'));
    const failing = { svcMigration: 1, collection: 'books', steps: [{ op: 'convert', property: 'pages', from: 'string', to: 'number', invalid: 'fail' }] };
    await writeFile(join(r.dir, 'migrations/20261201T100000000-books-convert-pages.json'), JSON.stringify(failing));
    await writeFile(join(r.dir, 'migrations/20261201T100001000-authors-rename-name-fullName.json'), JSON.stringify({ svcMigration: 1, collection: 'authors', steps: [{ op: 'rename', from: 'name', to: 'fullName' }] }));
    const second = await r.start('production');
    expect(second.lines.join('\n')).toMatch(/error migration 20261201T100000000-books-convert-pages failed: convert pages to number: 2 values do not convert \(e\.g\. objects \w+, \w+\) and "invalid" is "fail"/);
    const refused = await fetch(`${second.app.url}/books`);
    expect(refused.status).toBe(503);
    expect(await json(refused)).toEqual({ status: 503, statusCode: 503, message: "books is not served: its migration 20261201T100000000-books-convert-pages failed; the server's log and svc migrate status tell why" });
    expect((await post(second.app, '/books', { n: 99 })).status).toBe(503);
    expect((await fetch(`${second.app.url}/authors`)).status).toBe(200);
    const ready = await fetch(`${second.app.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await json(ready)).toEqual({ status: 'degraded', reason: 'migration', collections: ['books'] });

    // Fixed: the values that do not convert are removed (kept for down).
    await writeFile(join(r.dir, 'migrations/20261201T100000000-books-convert-pages.json'), JSON.stringify({ ...failing, steps: [{ ...failing.steps[0], invalid: 'unset' }] }));
    if (r.db) {
      // A shared database: another process applies the fixed file (svc migrate up beside the
      // server, or a new version deployed beside this one): this one then serves books, unrestarted.
      const quiet = new PassThrough().resume();
      expect(await migrateCommand({ appDir: r.dir, action: 'up', db: r.db, dryRun: false, out: quiet, err: quiet })).toBe(0);
      await until(async () => (await fetch(`${second.app.url}/books`)).status === 200);
      expect((await list(second.app, '/books')).map((b) => b.pages)).toEqual([undefined, 1, 2, 3, 4, undefined, 6, 7, 8, 9]);
      expect((await post(second.app, '/books', { n: 10, pages: 10 })).status).toBe(200);
      expect(await json(await fetch(`${second.app.url}/readyz`))).toEqual({ status: 'ok' });
      expect(second.lines.join('\n')).toContain('migrations: books is served again: its migrations were applied by another process');
      await second.app.close();
      return;
    }
    await second.app.close();
    // The next start applies it.
    const third = await r.start('production');
    expect((await list(third.app, '/books')).map((b) => b.pages)).toEqual([undefined, 1, 2, 3, 4, undefined, 6, 7, 8, 9]);
    expect(await json(await fetch(`${third.app.url}/readyz`))).toEqual({ status: 'ok' });
    expect(third.lines.join('\n')).toMatch(/migrations: 1 applied/);
    await third.app.close();
    const fourth = await r.start('production');
    expect(fourth.lines.filter((l) => l.includes('migration'))).toEqual([]);
  }, 180_000);

  it('the dashboard: a property renamed, removed or retyped writes a migration file (development); production refuses the change', async () => {
    const r = await rig(kind, BOOKS);
    const dev = await r.start('development');
    await seed(dev.app, 6);
    const save = (app: RunningApp, properties: Record<string, unknown>) => fetch(`${app.url}/dashboard/api/resources/books`, { method: 'PUT', headers: ROOT, body: JSON.stringify({ config: { type: 'Collection', properties } }) });
    // What the page sends for a rename: the new name with $renameFrom.
    const renamed = await save(dev.app, { n: { type: 'number' }, headline: { type: 'string', $renameFrom: 'title' }, pages: { type: 'string' }, extra: { type: 'object' } });
    expect(renamed.status).toBe(200);
    const [first] = (await json(renamed) as { migrations: string[] }).migrations;
    expect(first).toMatch(/^migrations\/\d{8}T\d{9}-books-rename-title-headline\.json$/);
    expect((await readMigration(r.dir, (first as string).slice('migrations/'.length))).steps).toEqual([{ op: 'rename', from: 'title', to: 'headline' }]);
    expect(JSON.parse(await readFile(join(r.dir, 'resources/books/config.json'), 'utf8')).properties.headline).toEqual({ type: 'string' });
    expect((await list(dev.app, '/books'))[2]).toMatchObject({ headline: 't2' });

    const retyped = await save(dev.app, { n: { type: 'number' }, headline: { type: 'string' }, pages: { type: 'number' } });
    expect(retyped.status).toBe(200);
    const second = (await json(retyped) as { migrations: string[] }).migrations;
    expect(second).toHaveLength(1);
    expect((await readMigration(r.dir, (second[0] as string).slice('migrations/'.length))).steps.map((s) => [s.op, s.property])).toEqual([['convert', 'pages'], ['remove', 'extra']]);
    expect(await files(r.dir)).toHaveLength(2);
    const books = await list(dev.app, '/books');
    expect(books.map((b) => b.pages)).toEqual([undefined, 1, 2, 3, 4, undefined]);
    expect(books.every((b) => !('extra' in b))).toBe(true);
    // Saved again unchanged: nothing more.
    expect((await json(await save(dev.app, { n: { type: "number" }, headline: { type: "string" }, pages: { type: "number" } })) as { migrations?: string[] }).migrations).toBeUndefined();
    await dev.app.close();

    const prod = await r.start('production');
    const refused = await fetch(`${prod.app.url}/dashboard/api/resources/books`, {
      method: 'PUT',
      headers: { ...ROOT, 'svc-ssh-key': await rootKey(r.dir) },
      body: JSON.stringify({ config: { type: 'Collection', properties: { n: { type: 'number' }, headline: { type: 'string' } } } }),
    });
    expect(refused.status).toBe(400);
    expect(((await json(refused)) as { message: string }).message).toMatch(/resource books: property changes that move stored data \(remove\) are made in development/);
    expect(await files(r.dir)).toHaveLength(2);
    expect(JSON.parse(await readFile(join(r.dir, 'resources/books/config.json'), 'utf8')).properties.pages).toEqual({ type: 'number' });
  }, 180_000);
});

describe('a resource renamed in the dashboard (development)', () => {
  it.each(KINDS.filter((k) => k !== 'mongodb'))('is a migration file too: the production copy of the app moves its objects at start (%s store)', async (kind) => {
    const r = await rig(kind, { n: { type: 'number' } });
    const first = await r.start('production');
    for (let i = 0; i < 5; i++) expect((await post(first.app, '/books', { n: i })).status).toBe(200);
    await first.app.close();
    // Production's copy: the same objects, in a store of its own.
    const prod = `${r.dir}-prod`;
    dirs.push(prod);
    await cp(r.dir, prod, { recursive: true });

    const dev = await r.start('development');
    const renamed = await fetch(`${dev.app.url}/dashboard/api/resources/books/rename`, { method: 'POST', headers: ROOT, body: JSON.stringify({ to: 'library' }) });
    expect(renamed.status).toBe(200);
    const answer = (await json(renamed)) as { moved: number; migrations: string[] };
    expect(answer.moved).toBe(5);
    expect(answer.migrations).toEqual([expect.stringMatching(/^migrations\/\d{8}T\d{9}-library-from-books\.json$/)]);
    expect(await readMigration(r.dir, (answer.migrations[0] as string).slice('migrations/'.length))).toEqual({ svcMigration: 1, collection: 'library', steps: [{ op: 'renameCollection', from: 'books' }] });
    await dev.app.close();
    // Recorded as applied where the dashboard moved the objects: a start applies nothing.
    const again = await r.start('production');
    expect(again.lines.filter((l) => l.includes('migration'))).toEqual([]);
    expect(await list(again.app, '/library')).toHaveLength(5);
    await again.app.close();

    // Deployed: the renamed folder and the migration file.
    await rm(join(prod, 'resources'), { recursive: true });
    await cp(join(r.dir, 'resources'), join(prod, 'resources'), { recursive: true });
    await cp(join(r.dir, 'migrations'), join(prod, 'migrations'), { recursive: true });
    const logger = memoryLogger();
    const deployed = await startApp({ appDir: prod, port: 0, host: '127.0.0.1', env: 'production', logger });
    apps.push(deployed);
    expect((await list(deployed, '/library')).map((b) => b.n)).toEqual([0, 1, 2, 3, 4]);
    expect((await fetch(`${deployed.url}/books`)).status).toBe(404);
    expect(logger.lines.join('\n')).toMatch(/step 1\/1 move the objects of books here: 5 objects changed/);
  }, 120_000);
});

/** A production root key for the app (written to .svc/keys.json). */
async function rootKey(dir: string): Promise<string> {
  const key = randomBytes(32).toString('hex');
  await mkdir(join(dir, '.svc'), { recursive: true });
  await writeFile(join(dir, '.svc', 'keys.json'), JSON.stringify({ [key]: true }));
  return key;
}

describe('$renameFrom', () => {
  it('at a development start becomes a migration (once); in production, without one, it is ignored with a warning', async () => {
    const r = await rig('files', { title: { type: 'string' } });
    const first = await r.start('production');
    expect((await post(first.app, '/books', { title: 'a' })).status).toBe(200);
    await first.app.close();
    await writeFile(join(r.dir, 'resources/books/config.json'), JSON.stringify({ type: 'Collection', properties: { headline: { type: 'string', $renameFrom: 'title' } } }));
    const prod = await r.start('production');
    expect(prod.lines.join('\n')).toContain('resource books: property headline: "$renameFrom": "title" is ignored in production: renames are migration files');
    expect(await files(r.dir)).toEqual([]);
    await prod.app.close();
    const dev = await r.start('development');
    expect(await files(r.dir)).toHaveLength(1);
    expect(await list(dev.app, '/books')).toMatchObject([{ headline: 'a' }]);
    await dev.app.close();
    const again = await r.start('development');
    expect(await files(r.dir)).toHaveLength(1);
    expect(again.lines.filter((l) => l.includes('migration'))).toEqual([]);
  }, 60_000);
});

describe('$default (a value for the stored objects)', () => {
  it('a new property: production ignores the hint with a warning; development writes an add with that default (start, hand edit, dashboard), once; a value of another type stops the start', async () => {
    const r = await rig('sqlite', { title: { type: 'string' } });
    const config = (properties: Record<string, unknown>) => writeFile(join(r.dir, 'resources/books/config.json'), JSON.stringify({ type: 'Collection', properties }));
    const first = await r.start('production');
    for (const title of ['a', 'b', 'c']) expect((await post(first.app, '/books', { title })).status).toBe(200);
    await first.app.close();
    await config({ title: { type: 'string' }, rating: { type: 'number', $default: 0 } });
    const prod = await r.start('production');
    expect(prod.lines.join('\n')).toContain('resource books: property rating: "$default" is ignored in production');
    expect(await files(r.dir)).toEqual([]);
    await prod.app.close();

    // A development start: the hint becomes a migration, applied; config.json loses the hint.
    const dev = await r.start('development', { watch: true });
    const [file] = await files(r.dir);
    expect(file).toMatch(/-books-add-rating\.json$/);
    expect((await readMigration(r.dir, file as string)).steps).toEqual([{ op: 'add', property: 'rating', type: 'number', default: 0 }]);
    expect((await list(dev.app, '/books')).map((b) => b.rating)).toEqual([0, 0, 0]);
    expect(JSON.parse(await readFile(join(r.dir, 'resources/books/config.json'), 'utf8')).properties.rating).toEqual({ type: 'number' });

    // A hand edit while it runs: a second property with a default.
    await config({ title: { type: 'string' }, rating: { type: 'number' }, status: { type: 'string', $default: 'new' } });
    await until(async () => (await files(r.dir)).length === 2 && !(await readFile(join(r.dir, 'resources/books/config.json'), 'utf8')).includes('$default'));
    await until(async () => (await list(dev.app, '/books')).every((b) => b.status === 'new'));

    // The dashboard: what the page sends for a new property with a value for stored objects.
    const saved = await fetch(`${dev.app.url}/dashboard/api/resources/books`, { method: 'PUT', headers: ROOT, body: JSON.stringify({ config: { type: 'Collection', properties: { title: { type: 'string' }, rating: { type: 'number' }, status: { type: 'string' }, tags: { type: 'array', $default: ['x'] } } } }) });
    expect(saved.status).toBe(200);
    const [written] = ((await json(saved)) as { migrations: string[] }).migrations;
    expect((await readMigration(r.dir, (written as string).slice('migrations/'.length))).steps).toEqual([{ op: 'add', property: 'tags', type: 'array', default: ['x'] }]);
    expect((await list(dev.app, '/books')).map((b) => b.tags)).toEqual([['x'], ['x'], ['x']]);
    await dev.app.close();

    // Started again: nothing more is written or applied.
    const again = await r.start('development');
    expect(await files(r.dir)).toHaveLength(3);
    expect(again.lines.filter((l) => l.includes('migration'))).toEqual([]);
    await again.app.close();

    // A default of another type (or one a store cannot hold) stops the start before a file is written.
    await config({ title: { type: 'string' }, pages: { type: 'number', $default: 'zero' } });
    await expect(r.start('development')).rejects.toThrow('resource books: property pages: "$default" must be a value of type number');
    await config({ title: { type: 'string' }, meta: { type: 'object', $default: { $where: 1 } } });
    await expect(r.start('development')).rejects.toThrow('resource books: property meta: "$default": key "$where" cannot be stored');
    expect(await files(r.dir)).toHaveLength(3);
  }, 120_000);
});

describe('file properties', () => {
  it('a property made a file property (or no longer one) removes and converts nothing; $default on one stops the start', async () => {
    const r = await rig('sqlite', { title: { type: 'string' }, avatar: { type: 'string' } });
    const dev = await r.start('development', { watch: true });
    expect((await post(dev.app, '/books', { title: 'a', avatar: 'old.png' })).status).toBe(200);
    await writeFile(join(r.dir, 'resources/books/config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, avatar: { type: 'file' }, cover: { type: 'file' } } }));
    await until(async () => dev.lines.filter((l) => /reloaded \d+ resources/.test(l)).length >= 1);
    await writeFile(join(r.dir, 'resources/books/config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, avatar: { type: 'string' } } }));
    await until(async () => dev.lines.filter((l) => /reloaded \d+ resources/.test(l)).length >= 2);
    expect(await files(r.dir)).toEqual([]);
    expect(await list(dev.app, '/books')).toMatchObject([{ title: 'a', avatar: 'old.png' }]);
    await dev.app.close();
    await writeFile(join(r.dir, 'resources/books/config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, avatar: { type: 'file', $default: 'x.png' } } }));
    await expect(r.start('development')).rejects.toThrow('resource books: property avatar: "$default": a file property takes no default');
  }, 60_000);
});

describe('svc migrate', () => {
  const runCommand = async (dir: string, action: string, extra: Partial<Parameters<typeof migrateCommand>[0]> = {}): Promise<{ code: number; out: string; err: string }> => {
    const out = new PassThrough();
    const err = new PassThrough();
    const chunks = { out: '', err: '' };
    out.on('data', (c: Buffer) => (chunks.out += c.toString()));
    err.on('data', (c: Buffer) => (chunks.err += c.toString()));
    const code = await migrateCommand({ appDir: dir, action, dryRun: false, out, err, ...extra });
    return { code, ...chunks };
  };

  // MongoDB: beside the running server (the embedded stores' folder is locked by the process serving it).
  it.each(KINDS)('new, status, up --dry-run, up, down --dry-run, down (%s store)', async (kind) => {
    const r = await rig(kind, { n: { type: 'number' }, title: { type: 'string' }, pages: { type: 'string' } });
    const app = await r.start('production');
    await seed(app.app, 10);
    if (!r.db) await app.app.close();
    const run = (dir: string, action: string, extra: Partial<Parameters<typeof migrateCommand>[0]> = {}) => runCommand(dir, action, { ...(r.db ? { db: r.db } : {}), ...extra });

    const made = await run(r.dir, 'new', { collection: 'books', steps: { rename: ['title:headline'], convert: ['pages:string:number'], add: ['rating:number=0'], unique: ['headline'] } });
    expect(made.code).toBe(0);
    const [file] = await files(r.dir);
    expect(made.out).toContain(`wrote migrations/${file}`);
    expect((await readMigration(r.dir, file as string)).steps.map((s) => s.op)).toEqual(['rename', 'convert', 'add', 'addIndex']);
    const id = (file as string).slice(0, -'.json'.length);

    const pending = await run(r.dir, 'status');
    expect(pending.out).toContain(`pending  ${id}  (books)\n           1. rename title -> headline\n`);
    const dry = await run(r.dir, 'up', { dryRun: true });
    expect(dry.out.startsWith(`${id}  (books)\n  1. rename title -> headline: 10 objects\n`)).toBe(true);
    expect(dry.out).toMatch(/2\. convert pages string -> number \(values that do not convert: removed \(kept for down\)\): 10 objects \(2 values do not convert \(e\.g\. objects \w+, \w+\): removed, kept for down\)\n {2}3\. add rating \(number\) default 0: 10 objects\n {2}4\. add unique index on headline: 0 objects\n$/);
    const up = await run(r.dir, 'up');
    expect(up.code).toBe(0);
    expect(up.out).toBe('1 migration applied\n');
    expect(up.err).toMatch(/step 1\/4 rename title -> headline: 10 objects changed/);
    const applied = await run(r.dir, 'status');
    expect(applied.out).toMatch(new RegExp(`^applied  ${id}  \\(books\\) \\S+\\n {11}1\\. rename title -> headline: 10 objects\\n {11}2\\. convert pages .*: 10 objects\\n {11}3\\. add rating \\(number\\) default 0: 10 objects\\n {11}4\\. add unique index on headline: 0 objects\\n$`));
    expect((await run(r.dir, 'down', { dryRun: true })).out).toMatch(/1\. undo add unique index on headline: 0 objects\n {2}2\. undo add rating \(number\) default 0: 10 objects \(objects still holding the default lose it\)\n {2}3\. undo convert .*: 10 objects \(8 converted back to string, 2 values that did not convert put back\)\n {2}4\. undo rename title -> headline: 10 objects\n$/);
    const down = await run(r.dir, 'down');
    expect(down.out).toContain(`undid ${id} (books): 10, 10, 10, 0 objects changed back`);
    // Pending again: a start would apply it again; its file goes (with config.json's change).
    expect((await run(r.dir, 'status')).out).toMatch(new RegExp(`^pending  ${id}  `));
    await rm(join(r.dir, 'migrations', file as string));
    if (r.db) await app.app.close();
    const back = await r.start('production');
    expect((await list(back.app, '/books')).map((b) => [b.title, b.pages, b.rating])).toEqual(Array.from({ length: 10 }, (_, i) => [`t${i}`, i % 5 === 0 ? `about ${i}` : String(i), undefined]));
  }, 120_000);

  const run = runCommand;

  it('refuses what it cannot do, with the reason', async () => {
    const r = await rig('files', { title: { type: 'string' } });
    await expect(run(r.dir, 'new', { collection: 'books', steps: { convert: ['pages:number'] } })).rejects.toThrow('--convert pages:number: expected <property>:<from type>:<to type>');
    await expect(run(r.dir, 'new', { collection: 'books', steps: { add: ['x:text'] } })).rejects.toThrow('--add: text is not a type');
    await expect(run(r.dir, 'new', { collection: 'books', steps: { rename: ['id:x'] } })).rejects.toThrow(/"from" must name a property/);
    await expect(run(r.dir, 'new', {})).rejects.toThrow(/needs --collection/);
    expect(await files(r.dir)).toEqual([]);
    expect((await run(r.dir, 'status')).out).toBe('no migrations (migrations/ holds none, the store records none)\n');
    await expect(run(r.dir, 'down')).rejects.toThrow('no migration is applied to this store: nothing to undo');
    // An empty migration (to fill in) waits.
    expect((await run(r.dir, 'new', { collection: 'books' })).out).toContain('it has no steps yet');
    expect((await run(r.dir, 'status')).out).toMatch(/^empty {4}\d{8}T\d{9}-books-change {2}\(books\)\n$/);
    expect((await run(r.dir, 'up')).out).toBe('0 migrations applied\n');
    // A file that does not read stops the command (and a start) naming it.
    await writeFile(join(r.dir, 'migrations', '20261201T000000-books-bad.json'), '{"svcMigration": 1, "collection": "books", "steps": [{"op": "rename"}]}');
    await expect(run(r.dir, 'status')).rejects.toThrow('migrations/20261201T000000-books-bad.json: step 1 (rename): "from" must name a property');
    await expect(r.start('production')).rejects.toThrow('migrations/20261201T000000-books-bad.json: step 1 (rename)');
  }, 60_000);
});
