#!/usr/bin/env node
// `$expand` without HTTP: Collection.handle for the list of 100 posts and for the same list with
// `$expand: ["author"]`, each answer encoded to bytes as writeReply does, in one process (no
// socket, no load generator: differences of a few µs are not lost in the machine's noise).
//
//   node bench/relations-inprocess.js [--root <svc checkout>] [--count 10000] [--rounds 6]
//
// --root measures another checkout's build (a copy of an older commit, for before/after). Seeds
// 50 authors and 100 posts as bench/relations.js does; prints the median CPU µs per call and the
// median of the per-round ratios expand/list.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from './lib/args.js';
import { median } from './lib/stats.js';

const opts = parseArgs(process.argv.slice(2), { root: 'string', count: 'number', rounds: 'number' });
const root = opts.root ?? fileURLToPath(new URL('..', import.meta.url));
const count = opts.count ?? 10_000;
const rounds = opts.rounds ?? 6;
const core = await import(pathToFileURL(join(root, 'packages/core/dist/index.js')).href);
const { createEmbeddedStore, createServer, Collection, silentLogger, createRequestScope, parseQueryString } = core;

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-expand-'));
const store = await createEmbeddedStore({ dir });
const authors = new Collection({ path: '/authors', properties: { name: { type: 'string' }, bio: { type: 'string' } }, store: store.collection('authors') });
const posts = new Collection({ path: '/posts', properties: { title: { type: 'string' }, body: { type: 'string' }, author: { type: 'relation', collection: '/authors' } }, store: store.collection('posts') });
const server = await createServer({ store, resources: [authors, posts], logger: silentLogger, env: 'production' });
try {
  const port = await server.listen(0, '127.0.0.1');
  const post = async (path, body) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    if (res.status !== 200) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const seeded = [];
  for (let i = 0; i < 50; i++) seeded.push(await post('/authors', { name: `author ${i}`, bio: 'x'.repeat(80) }));
  for (let i = 0; i < 100; i++) await post('/posts', { title: `post ${i}`, body: 'y'.repeat(200), author: seeded[(i * 7) % 50].id });

  const q = (query) => encodeURIComponent(JSON.stringify(query));
  const cases = { list: q({ $limit: 100 }), expand: q({ $expand: ['author'], $limit: 100 }) };
  const session = { id: 'bench', isNew: false };
  // An anonymous HTTP request's context, as server.ts makes it.
  const ctxOf = (search) => ({ method: 'GET', originalMethod: 'GET', url: '/', parts: [], query: parseQueryString(search), body: undefined, bodyKind: 'none', headers: {}, session, me: undefined, isRoot: false, internal: false, scope: createRequestScope('127.0.0.1', undefined, undefined) });
  const once = async (search) => {
    const reply = await posts.handle(ctxOf(search));
    if (reply.status !== 200 || typeof reply.body !== 'string') throw new Error(`unexpected answer ${reply.status}`);
    return Buffer.from(reply.body, 'utf8').length;
  };
  const bytes = { list: await once(cases.list), expand: await once(cases.expand) };
  if (JSON.parse(Buffer.from((await posts.handle(ctxOf(cases.expand))).body).toString())[0].author.name === undefined) throw new Error('expand did not expand');
  const results = { list: [], expand: [] };
  for (let round = 0; round < rounds; round++) {
    for (const [name, search] of Object.entries(cases)) {
      for (let i = 0; i < count / 5; i++) await once(search);
      const started = process.cpuUsage();
      for (let i = 0; i < count; i++) await once(search);
      const used = process.cpuUsage(started);
      results[name].push((used.user + used.system) / count);
    }
  }
  const ratios = results.expand.map((e, i) => e / results.list[i]);
  process.stdout.write(`${JSON.stringify({ root, count, rounds, bytes, cpuUsPerCall: { list: +median(results.list).toFixed(1), expand: +median(results.expand).toFixed(1) }, 'expand/list': +median(ratios).toFixed(2) })}\n`);
} finally {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
