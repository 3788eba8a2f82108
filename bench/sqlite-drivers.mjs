// node:sqlite (Node's built-in DatabaseSync) against better-sqlite3 on the embedded engine's own
// statements (issue 41), in one process, at 100,000 objects stored as JSON text:
//
//   flock /work/bench.lock node bench/sqlite-drivers.mjs [--count 100000] [--rounds 5] [--better-sqlite3 <dir of its package>]
//
// Each driver gets its own database file in a temporary folder (WAL, synchronous NORMAL, the
// engine's table: insertion number, id, JSON text; an expression index on `n`). Measured per
// round, drivers interleaved (A B, then B A, ...): GET by id (one prepared SELECT of the text by
// id, random ids), insert (one autocommitted INSERT per object, as a group commit of one), insert
// in a transaction of 100, and the indexed range query (`n > x ORDER BY n LIMIT 50`, the texts).
// Reported: the median over rounds of CPU µs per operation (user + system), and the ratio better-sqlite3 / node:sqlite.
// better-sqlite3 is not a dependency of svc: point --better-sqlite3 at an installed copy (npm
// install better-sqlite3 in a temporary folder); without it only node:sqlite is measured.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from './lib/args.js';

const args = parseArgs(process.argv.slice(2), { count: 'number', rounds: 'number', 'better-sqlite3': 'string' });
const count = args.count ?? 100_000;
const rounds = args.rounds ?? 5;
const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-drivers-'));

/** The two drivers behind one small face: exec, and prepared statements with get/all/run. */
const drivers = { 'node:sqlite': (file) => new DatabaseSync(file) };
if (args['better-sqlite3']) {
  const Better = createRequire(join(args['better-sqlite3'], 'package.json'))('better-sqlite3');
  drivers['better-sqlite3'] = (file) => new Better(file);
}

const ids = Array.from({ length: count }, () => randomBytes(8).toString('hex'));
const textOf = (i) => JSON.stringify({ id: ids[i], title: `todo ${i}`, done: i % 2 === 0, n: (i * 7919) % count });

function open(name) {
  const db = drivers[name](join(dir, `${name.replace(/\W/g, '_')}.sqlite`));
  // The same page cache for both (their builds default to different sizes): 64 MB.
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536;');
  db.exec('CREATE TABLE t (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL)');
  db.exec(`CREATE INDEX t_n ON t (json_extract(doc, '$.n'))`);
  const insert = db.prepare('INSERT INTO t (id, doc) VALUES (?, ?)');
  db.exec('BEGIN');
  for (let i = 0; i < count; i++) insert.run(ids[i], textOf(i));
  db.exec('COMMIT');
  // Each driver's cheapest row shape: arrays (node:sqlite's setReturnArrays), the one column
  // (better-sqlite3's pluck): no object made per row.
  const lean = (stmt) => (typeof stmt.setReturnArrays === 'function' ? (stmt.setReturnArrays(true), stmt) : stmt.pluck());
  return {
    db,
    byId: lean(db.prepare('SELECT doc FROM t WHERE id = ?')),
    range: lean(db.prepare(`SELECT doc FROM t WHERE json_extract(doc, '$.n') > ? ORDER BY json_extract(doc, '$.n') LIMIT 50`)),
    insert,
    extra: 0,
  };
}

/** CPU µs per call (user + system of this process): a loaded machine stretches wall time, not this. */
function time(n, fn) {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) fn(i);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

const workloads = {
  'GET by id': (s) => time(50_000, () => s.byId.get(ids[(Math.random() * count) | 0])),
  'insert, autocommit': (s) => time(2_000, () => s.insert.run(randomBytes(8).toString('hex'), textOf(s.extra++ % count))),
  'insert, 100 per transaction': (s) =>
    time(50, () => {
      s.db.exec('BEGIN');
      for (let k = 0; k < 100; k++) s.insert.run(randomBytes(8).toString('hex'), textOf(s.extra++ % count));
      s.db.exec('COMMIT');
    }) / 100,
  'indexed range, 50 texts': (s) => time(2_000, () => s.range.all(Math.floor(Math.random() * count))),
};

const setups = Object.fromEntries(Object.keys(drivers).map((name) => [name, open(name)]));
const check = setups['node:sqlite'].db.prepare(`SELECT json_extract(?, '$.a') AS a, sqlite_version() AS v`).get('{"a":1}');
const fts = (() => {
  try {
    setups['node:sqlite'].db.exec('CREATE VIRTUAL TABLE f USING fts5(body)');
    return 'yes';
  } catch (err) {
    return `no (${err.message})`;
  }
})();
const results = {};
const names = Object.keys(drivers);
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const [work, run] of Object.entries(workloads)) {
    for (const name of order) ((results[work] ??= {})[name] ??= []).push(run(setups[name]));
  }
}
const median = (xs) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${count} objects, ${rounds} rounds, SQLite ${check.v} (node:sqlite), JSON functions: ${check.a === 1 ? 'yes' : 'no'}, FTS5: ${fts}`);
console.log(`| workload | ${names.map((n) => `${n} µs/op`).join(' | ')} |${names.length > 1 ? ' better-sqlite3 / node:sqlite |' : ''}`);
console.log(`|---|${names.map(() => '---:').join('|')}|${names.length > 1 ? '---:|' : ''}`);
for (const [work, byName] of Object.entries(results)) {
  const meds = names.map((n) => median(byName[n]));
  const ratios = names.length > 1 ? ` ${median(byName[names[1]].map((x, i) => x / byName[names[0]][i])).toFixed(2)}x |` : '';
  console.log(`| ${work} | ${meds.map((m) => m.toFixed(2)).join(' | ')} |${ratios}`);
}
for (const s of Object.values(setups)) s.db.close();
rmSync(dir, { recursive: true, force: true });
