#!/usr/bin/env node
// Sums a `--trace-gc-nvp` log (the server's stdout, as `node bench/profile-script.js --v8
// --trace-gc-nvp --no-prof --log <file>` writes it): collections by kind, their pauses, and the
// bytes promoted to the old generation. Only the last `--last` ms of the log count (default all),
// so that the start-up and seeding stay out:
//   node bench/gc-summary.js /tmp/gc.log [--last 8000]
import { readFileSync } from 'node:fs';
import { parseArgs } from './lib/args.js';

const [file, ...rest] = process.argv.slice(2);
if (!file) throw new Error('usage: node bench/gc-summary.js <trace-gc-nvp log> [--last ms]');
const opts = parseArgs(rest, { last: 'number' });
const rows = [];
for (const line of readFileSync(file, 'utf8').split('\n')) {
  const m = /\s(\d+) ms: pause=([\d.]+) .*?gc=(\w+) /.exec(line);
  if (!m) continue;
  const promoted = /\bpromoted=(\d+)/.exec(line);
  rows.push({ at: Number(m[1]), pause: Number(m[2]), kind: m[3], promoted: promoted ? Number(promoted[1]) : 0 });
}
const end = rows.at(-1)?.at ?? 0;
const kept = opts.last ? rows.filter((r) => r.at >= end - opts.last) : rows;
const byKind = new Map();
for (const r of kept) {
  const k = byKind.get(r.kind) ?? { n: 0, pause: 0, promoted: 0, maxPause: 0 };
  k.n++;
  k.pause += r.pause;
  k.promoted += r.promoted;
  k.maxPause = Math.max(k.maxPause, r.pause);
  byKind.set(r.kind, k);
}
let pause = 0;
for (const [kind, k] of byKind) {
  pause += k.pause;
  process.stdout.write(`gc=${kind}: ${k.n} collections, ${k.pause.toFixed(1)} ms paused (max ${k.maxPause.toFixed(1)}), ${(k.promoted / 1e6).toFixed(2)} MB promoted (${(k.promoted / Math.max(1, k.n) / 1e3).toFixed(1)} KB each)\n`);
}
process.stdout.write(`all: ${pause.toFixed(1)} ms paused over ${kept.length ? end - kept[0].at : 0} ms of log\n`);
