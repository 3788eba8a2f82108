import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineStore } from '@svc/core';
import { writeResource } from './importerApp.js';
import { MONGODB_URL, PEOPLE, SOURCE_DB, ownDatabase, person, requireMongo, seedPeople } from './source.js';

const SVC_BIN = fileURLToPath(new URL('../../../apps/server/bin/svc.js', import.meta.url));
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
/**
 * The most live heap (what a full collection leaves) `svc import` may reach. The app itself holds
 * ~30 MiB and the importer two batches; the 100,000 converted documents alone are ~77 MiB, so an
 * importer that kept them would pass 100 MiB. (RSS says less: V8 grows its heap for the
 * allocation rate and returns it lazily, so RSS levels off well above the live data.)
 *
 * The bound is shown importing into the embedded store (the engine keeps the objects in SQLite,
 * outside the JS heap, and a few MB of texts), not into the mongodb store: what the importer holds
 * does not depend on the target, and FerretDB takes 100,000 single inserts at ~700 a second (175 s
 * of a CI run). The mongodb store is the target of the --db case, on a smaller source.
 */
const MAX_LIVE_MIB = 64;
/** The --db case's source: the store option's path, not the size (importerMongo.test.ts has the rest). */
const FEW = 2_000;

const enabled = requireMongo('svc import tests (FerretDB source, 100,000 documents)');
const url = MONGODB_URL ?? '';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` (already under --no-node-snapshot, so this is the process that imports). */
function svc(args: string[], nodeFlags: string[] = []): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', ...nodeFlags, SVC_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.runIf(enabled)('svc import: the command line', () => {
  let dir: string;
  let target: Awaited<ReturnType<typeof ownDatabase>>;
  let source: Awaited<ReturnType<typeof ownDatabase>>;

  beforeAll(async () => {
    if (!existsSync(join(PACKAGE_DIR, 'dist', 'index.js'))) throw new Error('@svc/type-importer is not built: run `pnpm build` first');
    await seedPeople(url);
    target = await ownDatabase(url, 'svc_imp_cli');
    source = await ownDatabase(url, 'svc_imp_cli_src');
    await source.client.db(source.name).collection('people').insertMany(Array.from({ length: FEW }, (_, i) => person(i)));
    dir = await mkdtemp(join(tmpdir(), 'svc-import-cli-'));
    await makeApp(join(dir, 'app'), SOURCE_DB);
    await writeResource(join(dir, 'app'), 'things', { type: 'Collection', properties: {} });
    await makeApp(join(dir, 'on-mongodb'), source.name);
  }, 180_000);
  afterAll(async () => {
    await target?.drop();
    await source?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each([
    { name: 'no --resource', args: ['import', '<dir>'], code: 2, message: 'svc import needs --from <file> (an export) or --resource <name>' },
    { name: 'an unknown resource', args: ['import', '<dir>', '--resource', 'nope'], code: 1, message: 'svc import: no resource nope in' },
  ])('$name: exit $code', async ({ args, code, message }) => {
    const run = await svc(args.map((a) => (a === '<dir>' ? join(dir, 'app') : a)));
    expect(run.code).toBe(code);
    expect(run.stderr).toContain(message);
  });

  it(
    `imports ${PEOPLE.toLocaleString('en-US')} documents into the embedded store with a progress bar, its live heap staying under ${MAX_LIVE_MIB} MiB`,
    { timeout: 900_000 },
    async () => {
      const app = join(dir, 'app');
      // --trace-gc prints, for each full collection, the heap in use before and after it.
      const run = await svc(['import', app, '--resource', 'import'], ['--trace-gc']);
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
      expectBar(run.stderr, PEOPLE);
      expect(run.stdout).toContain('people -> people: done, 100000 read, 100000 new, 0 updated, 0 unchanged, 0 failed; config.json created');
      expect(run.stdout).toContain('mixed types in age (');
      expect(run.stdout).toContain('restart the server to serve the imported collections');
      const done = /done: (\d+) documents in ([\d.]+) s \((\d+) docs\/s\), peak RSS (\d+) MiB/.exec(run.stdout);
      expect(done, run.stdout).not.toBeNull();
      const live = [...run.stdout.matchAll(/Mark-Compact[^\n]*? [\d.]+ \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/g)].map((m) => Number(m[1]));
      const report = { documents: Number(done?.[1]), seconds: Number(done?.[2]), docsPerSecond: Number(done?.[3]), peakRssMiB: Number(done?.[4]), fullGcs: live.length, maxLiveHeapMiB: Math.max(...live) };
      console.log(`svc import into the embedded store: ${JSON.stringify(report)}`);
      expect(live.length).toBeGreaterThanOrEqual(2);
      expect(report.maxLiveHeapMiB).toBeLessThan(MAX_LIVE_MIB);
      const store = await createEngineStore({ dir: join(app, 'data') });
      try {
        expect(await store.collection('people').count({})).toBe(PEOPLE);
      } finally {
        await store.close();
      }
      const config = JSON.parse(await readFile(join(app, 'resources', 'people', 'config.json'), 'utf8')) as { type: string; properties: Record<string, unknown> };
      expect(config.type).toBe('Collection');
      expect(Object.keys(config.properties)).toContain('manager');
    },
  );

  it(`--db imports into the mongodb store (${FEW.toLocaleString('en-US')} documents)`, { timeout: 300_000 }, async () => {
    const app = join(dir, 'on-mongodb');
    const run = await svc(['import', app, '--resource', 'import', '--db', dbUrl(target.name)]);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expectBar(run.stderr, FEW, 1);
    expect(run.stdout).toContain(`people -> people: done, ${FEW} read, ${FEW} new, 0 updated, 0 unchanged, 0 failed; config.json created`);
    const client = await MongoClient.connect(url);
    try {
      expect(await client.db(target.name).collection('people').countDocuments()).toBe(FEW);
    } finally {
      await client.close();
    }
    // Nothing went to the embedded store.
    expect(existsSync(join(app, 'data'))).toBe(false);
  });

  it('refuses a resource that is not an Importer', async () => {
    const run = await svc(['import', join(dir, 'app'), '--resource', 'things']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('svc import: resource things is a Collection, not an Importer');
  });
});

/** An app folder with an Importer `import` of `database`.people, installed the way an app installs a type. */
async function makeApp(app: string, database: string): Promise<void> {
  await mkdir(join(app, 'node_modules', '@svc'), { recursive: true });
  // A dependency whose package.json declares it.
  await writeFile(join(app, 'package.json'), JSON.stringify({ private: true, dependencies: { '@svc/type-importer': '*' } }));
  await symlink(PACKAGE_DIR, join(app, 'node_modules', '@svc', 'type-importer'), 'dir');
  await writeResource(app, 'import', { type: 'Importer', url, database, collections: ['people'] });
}

/** Not a terminal: one progress line per 5% step of the bar seen (at least `lines`), the last one full. */
function expectBar(stderr: string, total: number, lines = 10): void {
  const bars = stderr.split('\n').filter((l) => l.startsWith('people  ['));
  expect(bars.length).toBeGreaterThanOrEqual(lines);
  const n = total.toLocaleString('en-US');
  expect(bars.at(-1)).toMatch(new RegExp(`^people {2}\\[#{20}\\] 100% {2}${n}/${n} {2}[\\d,]+ docs/s$`));
}

/** The URL of database `name` on the test server. */
function dbUrl(name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}
