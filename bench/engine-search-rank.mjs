// Issue 41: what FTS5's bm25 ranking costs in a `$search` of the embedded engine, beside the same
// match without the rank and beside the word's document count read from an fts5vocab table (what a
// ranking computed outside FTS5 would need per word). node:sqlite directly, on a copy of the
// database that bench/engine-scale.js seeded (1,000,000 todos, `title` searchable):
//
//   cp <keep>/engine-1000000/data/store.sqlite /tmp/copy.sqlite
//   flock /work/bench.lock node bench/engine-search-rank.mjs /tmp/copy.sqlite [runs]
//
// CPU ms per statement (user + system of this process), the mean of `runs` (default 5) after one
// unmeasured run. The statements are the engine's ranked candidates (planner.ts rankedPlan: the
// newest 2,000 matches) with and without `rank`.
import { DatabaseSync } from 'node:sqlite';
import { loadavg } from 'node:os';

const file = process.argv[2];
const runs = Number(process.argv[3] ?? 5);
if (!file) throw new Error('usage: node bench/engine-search-rank.mjs <copy of store.sqlite> [runs]');
const db = new DatabaseSync(file);
db.exec('PRAGMA cache_size = -65536');
const { fts } = db.prepare("SELECT fts FROM svc_search WHERE fields = '[\"title\"]'").get();
db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, ${fts}, 'row')`);
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
function measure(fn) {
  fn();
  const from = cpu();
  let out;
  for (let i = 0; i < runs; i++) out = fn();
  return { ms: (cpu() - from) / runs, out };
}
const ranked = db.prepare(`SELECT rowid, rank FROM ${fts} WHERE ${fts} MATCH ? ORDER BY rowid DESC LIMIT 2000`);
const plain = db.prepare(`SELECT rowid FROM ${fts} WHERE ${fts} MATCH ? ORDER BY rowid DESC LIMIT 2000`);
const docs = db.prepare('SELECT doc FROM vocab WHERE term = ?');
process.stdout.write(`- Command: \`node bench/engine-search-rank.mjs <copy> ${runs}\`; ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; Node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n\n`);
process.stdout.write('| words | matches (newest 2,000 at most) | with rank ms | without rank ms | rank / without | first word\'s document count (fts5vocab) ms | its count |\n|---|---:|---:|---:|---:|---:|---:|\n');
for (const [a, b] of [['w0a', 'w0a'], ['w0a', 'w1b'], ['w2c', 'w3d'], ['w5f', 'w9j'], ['w4nh', 'wnd']]) {
  const query = `"${a}" AND "${b}"`;
  const r = measure(() => ranked.all(query).length);
  const p = measure(() => plain.all(query).length);
  const v = measure(() => docs.get(a)?.doc ?? 0);
  process.stdout.write(`| ${a} ${b} | ${r.out.toLocaleString('en-US')} | ${r.ms.toFixed(2)} | ${p.ms.toFixed(2)} | ${(r.ms / p.ms).toFixed(1)}x | ${v.ms.toFixed(2)} | ${v.out.toLocaleString('en-US')} |\n`);
}
db.close();
