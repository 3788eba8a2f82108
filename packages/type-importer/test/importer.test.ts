import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '@svc/server';
import { json, ROOT, startImporterApp, waitForImport, writeResource } from './importerApp.js';
import { MONGODB_URL, SMALL_PEOPLE, SMALL_SOURCE_DB, personId, requireMongo, seedPeople } from './source.js';

const enabled = requireMongo(`importer tests (FerretDB source, ${SMALL_PEOPLE.toLocaleString('en-US')} documents)`);
const url = MONGODB_URL ?? '';
/**
 * What this file checks (statuses, inferred types, mixed counts, config.json, the objects served
 * after a restart, an idempotent re-run) holds at any size; 10,000 documents rather than 100,000
 * save ~90 s of FerretDB reads and counts. The claim that needs the size, a live heap that stays
 * bounded while 100,000 documents stream through, is cli.test.ts's.
 */
const PEOPLE = SMALL_PEOPLE;

describe.runIf(enabled)(`Importer: ${PEOPLE.toLocaleString('en-US')} documents from FerretDB into the embedded store`, () => {
  let dir: string;
  let app: RunningApp;

  beforeAll(async () => {
    await seedPeople(url, SMALL_SOURCE_DB, SMALL_PEOPLE);
    dir = await mkdtemp(join(tmpdir(), 'svc-importer-'));
    await writeResource(dir, 'import', { type: 'Importer', url, database: SMALL_SOURCE_DB, collections: ['people'] });
    app = await startImporterApp(dir);
  }, 180_000);
  afterAll(async () => {
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each([
    { name: 'POST /run without root', method: 'POST', path: '/import/run', headers: {}, status: 403 },
    { name: 'GET /status without root', method: 'GET', path: '/import/status', headers: {}, status: 403 },
    { name: 'GET /run', method: 'GET', path: '/import/run', headers: ROOT, status: 405 },
    { name: 'POST /status', method: 'POST', path: '/import/status', headers: ROOT, status: 405 },
    { name: 'an unknown action', method: 'GET', path: '/import/other', headers: ROOT, status: 404 },
  ])('$name: $status', async ({ method, path, headers, status }) => {
    expect((await json(`${app.url}${path}`, { method, headers })).status).toBe(status);
  });

  it('is idle before a run', async () => {
    expect((await json(`${app.url}/import/status`, { headers: ROOT })).body).toMatchObject({ state: 'idle', read: 0, collections: [] });
  });

  it('imports every document, infers types, reports mixed ones and writes config.json', { timeout: 300_000 }, async () => {
    const rssBefore = process.memoryUsage().rss;
    const started = await json(`${app.url}/import/run`, { method: 'POST', headers: ROOT });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ state: 'running' });
    expect((await json(`${app.url}/import/run`, { method: 'POST', headers: ROOT })).status).toBe(409);
    const status = await waitForImport(`${app.url}/import`);
    console.log(`importer, embedded target: ${JSON.stringify({ documents: status.read, docsPerSecond: status.docsPerSecond, testProcessRssGrowthMiB: Math.round((process.memoryUsage().rss - rssBefore) / 2 ** 20) })}`);
    expect(status).toMatchObject({ state: 'done', total: PEOPLE, read: PEOPLE, restartNeeded: true });
    const [people] = status.collections;
    expect(people).toMatchObject({ source: 'people', resource: 'people', state: 'done', read: PEOPLE, inserted: PEOPLE, updated: 0, unchanged: 0, failed: 0, config: 'created', dropped: [], renamedId: false });
    expect(people?.properties).toEqual({
      name: { type: 'string' },
      age: { type: 'number' },
      active: { type: 'boolean' },
      tags: { type: 'array' },
      address: { type: 'object' },
      createdAt: { type: 'string' },
      score: { type: 'number' },
      manager: { type: 'string' },
      nickname: { type: 'string' },
    });
    expect(people?.mixed).toEqual({ age: { chosen: 'number', counts: { number: PEOPLE - PEOPLE / 100, string: PEOPLE / 100 } } });
    const config = JSON.parse(await readFile(join(dir, 'resources', 'people', 'config.json'), 'utf8')) as unknown;
    expect(config).toEqual({ type: 'Collection', properties: people?.properties });
  });

  it('after a restart the collection serves the objects: id is the ObjectId hex, values are JSON', async () => {
    await app.close();
    app = await startImporterApp(dir);
    expect((await json(`${app.url}/people/count`, { headers: ROOT })).body).toEqual({ count: PEOPLE });
    const id = personId(700).toHexString();
    const { status, body } = await json(`${app.url}/people/${id}`);
    expect(status).toBe(200);
    expect(body).toEqual({
      id,
      name: 'person 700',
      age: '70',
      active: true,
      tags: ['t0'],
      address: { city: 'city 0', zip: '10700' },
      createdAt: new Date(Date.UTC(2020, 0, 1) + 700 * 60_000).toISOString(),
      score: null,
      manager: personId(699).toHexString(),
      nickname: 'p700',
    });
    const filtered = await json(`${app.url}/people?${new URLSearchParams({ manager: id })}`);
    expect((filtered.body as { id: string }[]).map((p) => p.id)).toEqual([personId(701).toHexString()]);
  });

  it('a second run is idempotent: nothing new, nothing written, the same count', { timeout: 300_000 }, async () => {
    expect((await json(`${app.url}/import/run`, { method: 'POST', headers: ROOT })).status).toBe(202);
    const status = await waitForImport(`${app.url}/import`);
    console.log(`importer, second run: ${JSON.stringify({ documents: status.read, docsPerSecond: status.docsPerSecond })}`);
    expect(status).toMatchObject({ state: 'done', read: PEOPLE, restartNeeded: false });
    expect(status.collections[0]).toMatchObject({ inserted: 0, updated: 0, unchanged: PEOPLE, failed: 0, config: 'unchanged' });
    expect((await json(`${app.url}/people/count`, { headers: ROOT })).body).toEqual({ count: PEOPLE });
  });
});
