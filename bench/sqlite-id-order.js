#!/usr/bin/env node
// The embedded engine's table shape alone (node:sqlite, its pragmas; a `seq` key and a unique
// index on `id`): CPU per insert in commits of K, into a table that already holds PRE rows, with
// random 16-hex ids (createId's) against time-ordered ones. Each random id lands in another leaf
// of the `id` index, so a commit writes about one index page per insert to the WAL; time-ordered
// ids append to one leaf. bench/RESULTS.md, "Issue 43, round 18".
//
//   flock /work/bench.lock node bench/sqlite-id-order.js [K=40] [commits=1500] [PRE=100000]
//
// Writes only under the temp folder, which it removes.
import { DatabaseSync } from 'node:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

const K = Number(process.argv[2] ?? 40);
const N = Number(process.argv[3] ?? 1500);
const PRE = Number(process.argv[4] ?? 100_000);
let counter = 0;
const ids = {
  random: () => randomBytes(8).toString('hex'),
  ordered: () => Date.now().toString(16).padStart(12, '0').slice(-8) + (counter++).toString(16).padStart(8, '0'),
};
const results = { random: [], ordered: [] };
for (let round = 0; round < 3; round++) {
  for (const kind of Object.keys(ids)) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-idorder-'));
    const db = new DatabaseSync(join(dir, 'db.sqlite'));
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 10000;');
    db.exec('CREATE TABLE todos (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL) STRICT');
    const insert = db.prepare('INSERT INTO todos (id, doc) VALUES (?, ?)');
    const commit = () => {
      db.exec('BEGIN IMMEDIATE');
      for (let i = 0; i < K; i++) {
        const id = ids[kind]();
        insert.run(id, JSON.stringify({ id, title: 'x', done: false, owner: 'u0123456789abcdef', createdAt: 1700000000000 }));
      }
      db.exec('COMMIT');
    };
    for (let i = 0; i < PRE / K; i++) commit();
    const before = process.cpuUsage();
    for (let i = 0; i < N; i++) commit();
    const used = process.cpuUsage(before);
    results[kind].push((used.user + used.system) / N / K);
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
for (const [kind, us] of Object.entries(results)) process.stdout.write(`${kind}: ${us.map((x) => x.toFixed(2)).join(' ')} µs of CPU per insert (commits of ${K}, ${PRE} rows before)\n`);
