#!/usr/bin/env node
// Issue 43's webhook throughput aim, paired: a change to the hooked write against its base on a
// shared VM whose speed drifts by up to 2x over seconds (webhooks.js's rounds, a fresh server per
// 10 s measurement, could not resolve 10% at load 5). Three servers stay up on the server core:
// the plain app (no Webhook) and the hooked app (a Webhook on todos) of `--base`'s checkout and of
// this one. Per window, in a rotated order, each gets `duration` s of POST /todos at 50
// connections alone on the core (its CPU per write over the window, deliveries made meanwhile
// included); after a hooked one, its outbox is drained (every write delivered to the receiver)
// before the next starts, so that no server's drain runs in another's window. The answer: medians
// of per-window ratios, hooked/plain (CPU per write and req/s) for each checkout, and this
// checkout's hooked against the base's.
//
//   flock /work/bench.lock node bench/webhooks-pair.js --base /path/to/built/checkout [--windows 12] [--duration 3] [--warmup 1]
//
// The plain server is the base's (the plain write path is the same code in both, unless the change
// touches it: then run twice with the roles swapped). Loopback only; every process started is
// stopped by PID at the end, on error and on signals.
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './lib/args.js';
import { freePort, pinning, pinSelf, spawnNode, stopAll, stopAllOnSignals, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { helpersPinned, startHelper, killHelpers } from './lib/helpers.js';
import { runLoad } from './lib/load.js';
import { startSession, closeAgent } from './lib/http.js';
import { median, min, max, rotate } from './lib/stats.js';

const opts = parseArgs(process.argv.slice(2), { base: 'string', windows: 'number', duration: 'number', warmup: 'number' });
if (!opts.base || !existsSync(join(opts.base, 'apps/server/dist/cli.js'))) throw new Error('--base must name a built svc checkout');
const windows = Math.max(1, Math.floor(opts.windows ?? 12));
const duration = opts.duration ?? 3;
const warmup = opts.warmup ?? 1;
const here = fileURLToPath(new URL('..', import.meta.url));
const base = resolve(opts.base);
const pin = pinning();
helpersPinned();
if (pin) pinSelf(pin.load);
const log = (m) => process.stderr.write(`${m}\n`);
const tmpRoot = mkdtempSync(join(tmpdir(), 'svc-bench-webhooks-pair-'));
const SECRET = 'bench-secret-0123456789abcdef';
stopAllOnSignals({ before: killHelpers, tmp: tmpRoot });

/** An app folder as webhooks.js makes it: bench/app's todos, plus (hooked) a Webhook posting to the receiver. */
function makeApp(name, repo, hooked, receiverPort) {
  const dir = join(tmpRoot, name);
  cpSync(join(here, 'bench/app'), dir, { recursive: true });
  if (hooked) {
    mkdirSync(join(dir, 'resources', 'hooks'), { recursive: true });
    writeFileSync(join(dir, 'resources', 'hooks', 'config.json'), JSON.stringify({ type: 'Webhook', collection: 'todos', url: `http://127.0.0.1:${receiverPort}/hook`, secret: '${env:HOOK_SECRET}' }));
    mkdirSync(join(dir, 'node_modules', '@svc'), { recursive: true });
    symlinkSync(join(repo, 'packages/type-webhook'), join(dir, 'node_modules', '@svc', 'type-webhook'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, dependencies: { '@svc/type-webhook': 'link:../type-webhook' } }));
  }
  writeFileSync(join(dir, 'app.json'), JSON.stringify({ publicCount: true, outbound: { allow: [`127.0.0.1:${receiverPort}`] } }));
  return dir;
}

async function startServer(name, repo, hooked, receiverPort) {
  const port = await freePort();
  const dir = makeApp(name, repo, hooked, receiverPort);
  const child = spawnNode([...SVC_NODE_FLAGS, join(repo, 'apps/server/bin/svc.js'), dir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { HOOK_SECRET: SECRET }, cwd: repo });
  await waitListening(child);
  const cookie = await startSession(port, '/todos');
  return { name, child, port, cookie, hooked };
}

const post = (srv) => ({
  url: `http://127.0.0.1:${srv.port}/todos`,
  method: 'POST',
  headers: { 'content-type': 'application/json', cookie: srv.cookie },
  body: JSON.stringify({ title: 'x', done: false }),
  connections: 50,
  warmup,
  duration,
  serverPid: srv.child.pid,
  serverCore: pin?.server,
});

async function countOf(srv) {
  const res = await fetch(`http://127.0.0.1:${srv.port}/todos/count`, { headers: { cookie: srv.cookie } });
  return (await res.json()).count;
}

/** Waits until the receiver holds as many events as the hooked servers hold todos (all delivered). */
async function drained(receiver, hooked, limitMs = 180_000) {
  const t0 = Date.now();
  let written = 0;
  for (const srv of hooked) written += await countOf(srv);
  for (;;) {
    const stats = await receiver.ask('stats');
    if (stats.unique >= written) return { ms: Date.now() - t0, duplicates: stats.count - stats.unique };
    if (Date.now() - t0 > limitMs) throw new Error(`not drained after ${limitMs} ms: ${stats.unique} of ${written}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

const receiver = startHelper(join(here, 'bench/servers/webhook-receiver.js'), [], pin?.load);
const { port: receiverPort } = await receiver.ready;
const rows = [];
try {
  const servers = [await startServer('plain', base, false, receiverPort), await startServer('hooked-base', base, true, receiverPort), await startServer('hooked-here', here, true, receiverPort)];
  const hooked = servers.filter((s) => s.hooked);
  for (let w = 0; w < windows; w++) {
    const row = {};
    for (const srv of rotate(servers, w)) {
      const before = srv.hooked ? (await receiver.ask('stats')).unique : 0;
      const out = await runLoad(post(srv), pin?.load);
      if (out.non2xx || out.errors) throw new Error(`window ${w + 1} ${srv.name}: ${out.non2xx} non-2xx, ${out.errors} errors`);
      row[srv.name] = { rps: out.rps, cpuUs: out.cpuUsPerRequest };
      if (srv.hooked) {
        // Delivered while its writes ran (warm-up included), per write: what the deliveries took of the window.
        row[srv.name].deliveredPerWrite = ((await receiver.ask('stats')).unique - before) / Math.max(1, out.requests);
        row[srv.name].drainMs = (await drained(receiver, hooked)).ms;
      }
    }
    rows.push(row);
    log(`window ${w + 1}/${windows}: ${servers.map((s) => `${s.name} ${Math.round(row[s.name].rps)} req/s ${row[s.name].cpuUs.toFixed(0)} µs${s.hooked ? ` (${(100 * row[s.name].deliveredPerWrite).toFixed(1)} deliveries per 100 writes)` : ''}`).join(', ')}`);
  }
  const end = await receiver.ask('stats');
  if (end.count !== end.unique) log(`${end.count - end.unique} deliveries were repeats`);
} finally {
  await receiver.ask('close').catch(() => undefined);
  await stopAll();
  closeAgent();
  rmSync(tmpRoot, { recursive: true, force: true });
}

const spread = (values) => ({ median: median(values), min: min(values), max: max(values) });
const ratio = (a, b, key) => rows.map((r) => r[a][key] / r[b][key]);
process.stdout.write(
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      base,
      windows,
      duration,
      cpuUs: { plain: spread(rows.map((r) => r.plain.cpuUs)), hookedBase: spread(rows.map((r) => r['hooked-base'].cpuUs)), hookedHere: spread(rows.map((r) => r['hooked-here'].cpuUs)) },
      hookedOverPlain: {
        base: { cpu: spread(ratio('hooked-base', 'plain', 'cpuUs')), rps: spread(ratio('hooked-base', 'plain', 'rps')) },
        here: { cpu: spread(ratio('hooked-here', 'plain', 'cpuUs')), rps: spread(ratio('hooked-here', 'plain', 'rps')) },
      },
      deliveredPerWrite: { base: spread(rows.map((r) => r['hooked-base'].deliveredPerWrite)), here: spread(rows.map((r) => r['hooked-here'].deliveredPerWrite)) },
      hereOverBase: { cpu: spread(ratio('hooked-here', 'hooked-base', 'cpuUs')), rps: spread(ratio('hooked-here', 'hooked-base', 'rps')) },
    },
    null,
    2,
  )}\n`,
);
