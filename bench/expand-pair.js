#!/usr/bin/env node
// bench/peers.js's expand request, svc against another built checkout of itself, paired:
//
//   node bench/expand-pair.js --b <built checkout> [--a <built checkout>] [--rounds 6] [--duration 4]
//       [--warmup 1] [--connections 50] [--only expand|plain] [--profile <dir>]
//
// Both servers (production, embedded store) hold the peers' expand data: 50 authors (name, 80-byte
// bio) and 100 posts (title, 200-byte body, `author` a relation), written through the API. Per
// round each answers, in turn (order alternated), `GET /posts?{"$expand":["author"],"$limit":100}`
// (and the same list without `$expand` unless --only), with a session cookie, at 50 connections;
// the answer is the median of the per-round ratios of server CPU per request (a / b). `--a`: this
// checkout by default. `--profile <dir>`: each server's .cpuprofile in <dir>/a and <dir>/b.
// Server pinned to core 0, the load generator to core 1, 127.0.0.1 only; the servers are stopped
// by PID at the end, on error and on signals.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './lib/args.js';
import { pinning, pinSelf, stopAll, stopAllOnSignals } from './lib/procs.js';
import { runLoad } from './lib/load.js';
import { request, closeAgent } from './lib/http.js';
import { median, rotate } from './lib/stats.js';
import { machine } from './lib/machine.js';
import { writeApp, startSvc, call } from './peers/svc.js';

const args = parseArgs(process.argv.slice(2), { a: 'string', b: 'string', rounds: 'number', duration: 'number', warmup: 'number', connections: 'number', only: 'string', profile: 'string' });
if (args.b === undefined) {
  process.stderr.write('usage: node bench/expand-pair.js --b <built checkout> [--a <built checkout>] [--rounds 6] [--duration 4] [--only expand|plain] [--profile <dir>]\n');
  process.exit(2);
}
const checkouts = { a: args.a ?? fileURLToPath(new URL('..', import.meta.url)), b: args.b };
const rounds = args.rounds ?? 6;
const kinds = args.only === undefined ? ['expand', 'plain'] : [args.only];
const pin = pinning();
// Read before this process is pinned to one core (nproc counts the cores it may use).
const m = machine();
pinSelf(pin?.load);
const work = mkdtempSync(join(tmpdir(), 'svc-expand-pair-'));
stopAllOnSignals({ tmp: work });
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const q = (query) => `?${encodeURIComponent(JSON.stringify(query))}`;
const paths = { expand: `/posts${q({ $expand: ['author'], $limit: 100 })}`, plain: `/posts${q({ $limit: 100 })}` };

async function start(tag) {
  const dir = join(work, tag);
  writeApp(dir, {
    resources: {
      authors: { type: 'Collection', properties: { name: { type: 'string' }, bio: { type: 'string' } } },
      posts: { type: 'Collection', properties: { title: { type: 'string' }, body: { type: 'string' }, author: { type: 'relation', collection: 'authors' } } },
    },
  });
  const flags = args.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(args.profile, tag)}`] : [];
  const svc = await startSvc(dir, pin?.server, flags, checkouts[tag]);
  const cookie = (await request(svc.port, { path: '/posts' })).cookies.join('; ');
  const ids = [];
  for (let i = 0; i < 50; i++) ids.push((await call(svc.port, 'POST', '/authors', { body: { name: `author ${i}`, bio: `bio of author ${i} `.padEnd(80, 'x') }, cookie })).body.id);
  for (let i = 0; i < 100; i++) await call(svc.port, 'POST', '/posts', { body: { title: `post ${i}`, body: `body of post ${i} `.padEnd(200, 'y'), author: ids[(i * 7) % 50] }, cookie });
  const answer = (await call(svc.port, 'GET', paths.expand, { cookie })).body;
  if (answer.length !== 100 || answer.some((p) => typeof p.author?.bio !== 'string')) throw new Error(`${tag}: the expand answer lacks its authors`);
  return { svc, cookie };
}

try {
  console.log(`expand-pair: a ${checkouts.a}, b ${checkouts.b}; ${m.nproc} cores (${m.cpuModel}), Node ${m.node}; load ${load()}; ${new Date().toISOString()}`);
  const servers = { a: await start('a'), b: await start('b') };
  for (const kind of kinds) {
    const cpu = { a: [], b: [] };
    for (let r = 0; r < rounds; r++) {
      for (const k of rotate(['a', 'b'], r)) {
        const { svc, cookie } = servers[k];
        const out = await runLoad({ url: `http://127.0.0.1:${svc.port}${paths[kind]}`, method: 'GET', headers: { cookie }, connections: args.connections ?? 50, warmup: args.warmup ?? 1, duration: args.duration ?? 4, serverPid: svc.child.pid, serverCore: pin?.server }, pin?.load);
        if (out.non2xx > 0 || out.errors > 0) throw new Error(`${kind} ${k}: ${out.non2xx} non-2xx, ${out.errors} errors`);
        cpu[k].push(out.cpuUsPerRequest);
        console.log(`  ${kind} r${r + 1} ${k}: ${Math.round(out.rps)} req/s, ${out.cpuUsPerRequest.toFixed(1)} µs CPU/req (load ${load()})`);
      }
    }
    const ratios = cpu.a.map((x, i) => x / cpu.b[i]);
    console.log(`${kind}: CPU µs/req a median ${median(cpu.a).toFixed(1)}, b median ${median(cpu.b).toFixed(1)}; a/b per round ${ratios.map((x) => x.toFixed(3)).join(' ')}, median **${median(ratios).toFixed(3)}**`);
  }
} finally {
  closeAgent();
  await stopAll();
  rmSync(work, { recursive: true, force: true });
}
