#!/usr/bin/env node
// Issue 43's file property aims, on the embedded store and the local disk:
//   1. upload: PUT of a 5 MB file to a file property (`/posts/<id>/doc`, one object per
//      connection, each upload replacing the last), against a bare node:http handler writing the
//      same bytes to disk (bench/servers/bare-upload.js): the server's CPU per upload, as a median
//      of same-round ratios (aim: svc within 1.3x);
//   2. thumbnail: GET of a kept thumbnail (`<photo url>?thumb=200x200`, made once before the
//      window) against the same bytes as a static file of the app's public/ folder, on the same
//      server: requests/s and CPU per request (aim: the thumbnail at >= 0.9x the static rate).
// Rounds interleave the variants (A B, then B A) and start fresh servers. The server is pinned
// to core 0; the load generators and this harness to core 1.
//
//   flock /work/bench.lock node bench/files.js [--rounds 5] [--duration 10] [--warmup 2] [--connections 4] [--mb 5] [--no-build]
//     [--svc-args "--max-semi-space-size=2"] [--only upload|thumb] [--before <checkout>]
// --svc-args: node flags for a third upload variant, svc started with them (`svc+`), in the same
// rounds. --before: a built checkout of an earlier commit whose thumbnail is measured too (`thumb-
// before`, its own server and kept thumbnail), in the same rounds as this one's, against the same
// static file. Each window also reports the server's run-queue wait (/proc/<pid>/task/*/schedstat):
// the time it was ready to run but another process had its core, which bounds a rate that its
// CPU does not (a pinned server on a shared core).
//
// Loopback only; every process started is stopped by PID at the end, on error and on signals.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './lib/args.js';
import { freePort, pinning, pinSelf, spawnNode, stopAll, stop, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { runDriver, runLoad } from './lib/load.js';
import { request, startSession, closeAgent } from './lib/http.js';
import { median } from './lib/stats.js';

const opts = parseArgs(process.argv.slice(2), { rounds: 'number', duration: 'number', warmup: 'number', connections: 'number', mb: 'number', 'no-build': 'boolean', 'svc-args': 'string', only: 'string', before: 'string' });
const svcArgs = opts['svc-args'] ? opts['svc-args'].split(/\s+/).filter(Boolean) : [];
const rounds = Math.max(1, Math.floor(opts.rounds ?? 5));
const duration = opts.duration ?? 10;
const warmup = opts.warmup ?? 2;
const connections = opts.connections ?? 4;
const bytes = Math.round((opts.mb ?? 5) * 1_000_000);
const repo = fileURLToPath(new URL('..', import.meta.url));
const pin = pinning();
if (pin) pinSelf(pin.load);
const log = (m) => process.stderr.write(`${m}\n`);
const tmpRoot = mkdtempSync(join(tmpdir(), 'svc-bench-files-'));
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    stopAll().finally(() => {
      rmSync(tmpRoot, { recursive: true, force: true });
      process.exit(sig === 'SIGINT' ? 130 : 143);
    });
  });
}

if (!opts['no-build']) {
  log('building @svc/server ...');
  execFileSync('pnpm', ['turbo', 'run', 'build', '--filter=@svc/server...'], { cwd: repo, stdio: 'ignore' });
}

// A 1200x900 JPEG (a smooth gradient with some noise, as a photo) for the thumbnail part.
const sharp = createRequire(join(repo, 'apps/server/package.json'))('sharp');
const raw = randomBytes(1200 * 900 * 3);
for (let i = 0; i < raw.length; i++) raw[i] = (Math.floor(i / 3) % 1200) / 6 + (raw[i] & 31);
const photo = await sharp(raw, { raw: { width: 1200, height: 900, channels: 3 } }).jpeg({ quality: 85 }).toBuffer();

let made = 0;
function makeApp() {
  const dir = join(tmpRoot, `app-${made++}`);
  mkdirSync(join(dir, 'resources', 'posts'), { recursive: true });
  mkdirSync(join(dir, 'public'), { recursive: true });
  writeFileSync(
    join(dir, 'resources', 'posts', 'config.json'),
    JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' }, doc: { type: 'file', maxSize: bytes * 2 }, photo: { type: 'file', types: ['image/*'], thumbs: ['200x200'] } } }),
  );
  writeFileSync(join(dir, 'app.json'), JSON.stringify({ files: { sweepMinutes: 0 } }));
  return dir;
}

/** The run-queue wait of a process's threads so far, in seconds (ready to run, its core taken). */
function queueWait(pid) {
  let ns = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[1]);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ns / 1e9;
}

async function startSvc(nodeArgs = [], checkout = repo) {
  const port = await freePort();
  const dir = makeApp();
  const child = spawnNode([...SVC_NODE_FLAGS, ...nodeArgs, join(checkout, 'apps/server/bin/svc.js'), dir, '--port', String(port), '--env', 'production'], { core: pin?.server, cwd: repo });
  await waitListening(child);
  const cookie = await startSession(port, '/posts');
  const headers = { cookie, 'content-type': 'application/json' };
  const ids = [];
  for (let i = 0; i < connections; i++) {
    const res = await request(port, { method: 'POST', path: '/posts', headers, body: JSON.stringify({ title: `p${i}` }) });
    if (res.status !== 200) throw new Error(`POST /posts answered ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
    ids.push(JSON.parse(res.body.toString('utf8')).id);
  }
  return { child, port, cookie, dir, ids };
}

async function startBare() {
  const port = await freePort();
  const dir = join(tmpRoot, `bare-${made++}`);
  const child = spawnNode([join(repo, 'bench/servers/bare-upload.js'), '--port', String(port), '--dir', dir], { core: pin?.server, cwd: repo });
  await waitListening(child);
  return { child, port, dir };
}

function runUploads(srv, paths) {
  const cfg = { port: srv.port, method: 'PUT', paths, bytes, warmup, duration, serverPid: srv.child.pid };
  return runDriver(join(repo, 'bench/lib/drivers/upload.js'), cfg, pin?.load, 'upload driver');
}

/** The upload part of one round: both variants, in `order`. */
async function uploadRound(order) {
  const row = {};
  for (const variant of order) {
    const srv = variant === 'bare' ? await startBare() : await startSvc(variant === 'svc+' ? svcArgs : []);
    const paths = variant !== 'bare' ? srv.ids.map((id) => `/posts/${id}/doc?name=upload.bin`) : Array.from({ length: connections }, (_, i) => `/u${i}`);
    // svc: the session's cookie is not needed (no rules), the upload is anonymous as the bare one.
    const wait0 = queueWait(srv.child.pid);
    const out = await runUploads(srv, paths);
    out.queueWaitShare = (queueWait(srv.child.pid) - wait0) / (out.seconds + warmup);
    await stop(srv.child);
    if (out.failed) throw new Error(`${variant}: ${out.failed} failed uploads ${JSON.stringify(out.statuses)}`);
    row[variant] = out;
    log(`  upload ${variant.padEnd(4)}: ${out.rps.toFixed(1)} uploads/s, ${out.cpuMsPerUpload.toFixed(2)} ms CPU/upload, ${out.serverCores.toFixed(2)} cores, run-queue wait ${out.queueWaitShare.toFixed(2)} s/s, p50 ${out.latencyMs.p50?.toFixed(1)} ms`);
  }
  return row;
}

/** A kept thumbnail of a fresh svc (from `checkout`): its server and URL, the thumbnail's bytes. */
async function thumbServer(checkout) {
  const srv = await startSvc([], checkout);
  const id = srv.ids[0];
  const put = await request(srv.port, { method: 'PUT', path: `/posts/${id}/photo?name=photo.jpg`, headers: { cookie: srv.cookie }, body: photo });
  if (put.status !== 200) throw new Error(`photo upload answered ${put.status}`);
  const url = `${JSON.parse(put.body.toString('utf8')).photo.url}?thumb=200x200`;
  const first = await request(srv.port, { path: url, headers: { cookie: srv.cookie } });
  if (first.status !== 200) throw new Error(`thumbnail answered ${first.status}`);
  return { srv, url, bytes: first.body };
}

/**
 * The thumbnail part of one round: one fresh svc, its kept thumbnail and the same bytes as a
 * static file (and, with --before, the earlier checkout's kept thumbnail on a server of its own).
 */
async function thumbRound(order) {
  const now = await thumbServer(repo);
  const before = opts.before ? await thumbServer(opts.before) : undefined;
  writeFileSync(join(now.srv.dir, 'public', 'thumb.jpg'), now.bytes);
  const targets = { thumb: [now.srv, now.url], static: [now.srv, '/thumb.jpg'], ...(before ? { 'thumb-before': [before.srv, before.url] } : {}) };
  const row = { thumbBytes: now.bytes.length };
  for (const variant of order.filter((v) => targets[v] !== undefined)) {
    const [srv, path] = targets[variant];
    const wait0 = queueWait(srv.child.pid);
    const out = await runLoad({ url: `http://127.0.0.1:${srv.port}${path}`, method: 'GET', headers: { cookie: srv.cookie }, connections: 50, warmup, duration, serverPid: srv.child.pid, serverCore: pin?.server }, pin?.load);
    // Over warm-up and window (schedstat has no window of its own): seconds waited per second.
    const queueWaitShare = (queueWait(srv.child.pid) - wait0) / (out.seconds + warmup);
    if (out.non2xx || out.errors) throw new Error(`${variant}: ${out.non2xx} non-2xx, ${out.errors} errors ${JSON.stringify(out.statusCodes)}`);
    row[variant] = { rps: out.rps, cpuUs: out.cpuUsPerRequest, p50: out.latencyMs.p50, p99: out.latencyMs.p99, serverCores: out.serverCores, queueWaitShare, otherOnServerCore: out.otherOnServerCore };
    log(`  ${variant.padEnd(12)}: ${Math.round(out.rps)} req/s, ${out.cpuUsPerRequest.toFixed(0)} µs CPU/req, ${out.serverCores.toFixed(2)} cores, run-queue wait ${queueWaitShare.toFixed(2)} s/s, others on its core ${out.otherOnServerCore?.toFixed(2)}, p50 ${out.latencyMs.p50} ms, p99 ${out.latencyMs.p99} ms`);
  }
  await stop(now.srv.child);
  if (before) await stop(before.srv.child);
  return row;
}

const uploads = [];
const thumbs = [];
try {
  for (let round = 0; round < rounds; round++) {
    log(`round ${round + 1}/${rounds}`);
    const variants = svcArgs.length > 0 ? ['bare', 'svc', 'svc+'] : ['bare', 'svc'];
    if (opts.only !== 'thumb') uploads.push(await uploadRound(round % 2 === 0 ? variants : [...variants].reverse()));
    const thumbOrder = ['static', 'thumb', 'thumb-before'];
    if (opts.only !== 'upload') thumbs.push(await thumbRound(round % 2 === 0 ? thumbOrder : [...thumbOrder].reverse()));
  }
} finally {
  await stopAll();
  closeAgent();
  rmSync(tmpRoot, { recursive: true, force: true });
}

const med = (rows, f) => median(rows.map(f));
const summary = {
  date: new Date().toISOString(),
  rounds,
  duration,
  upload: uploads.length === 0 ? undefined : {
    bytes,
    connections,
    medianCpuRatio: med(uploads, (r) => r.svc.cpuMsPerUpload / r.bare.cpuMsPerUpload),
    cpuRatios: uploads.map((r) => +(r.svc.cpuMsPerUpload / r.bare.cpuMsPerUpload).toFixed(3)),
    medianRpsRatio: med(uploads, (r) => r.svc.rps / r.bare.rps),
    bareCpuMs: med(uploads, (r) => r.bare.cpuMsPerUpload),
    svcCpuMs: med(uploads, (r) => r.svc.cpuMsPerUpload),
    bareRps: med(uploads, (r) => r.bare.rps),
    svcRps: med(uploads, (r) => r.svc.rps),
    svcQueueWait: med(uploads, (r) => r.svc.queueWaitShare),
    bareQueueWait: med(uploads, (r) => r.bare.queueWaitShare),
    ...(svcArgs.length > 0
      ? {
          svcArgs: svcArgs.join(' '),
          argsMedianCpuRatio: med(uploads, (r) => r['svc+'].cpuMsPerUpload / r.bare.cpuMsPerUpload),
          argsCpuRatios: uploads.map((r) => +(r['svc+'].cpuMsPerUpload / r.bare.cpuMsPerUpload).toFixed(3)),
          argsCpuMs: med(uploads, (r) => r['svc+'].cpuMsPerUpload),
        }
      : {}),
  },
  thumbnail: thumbs.length === 0 ? undefined : {
    thumbBytes: thumbs[0]?.thumbBytes,
    medianRpsRatio: med(thumbs, (r) => r.thumb.rps / r.static.rps),
    rpsRatios: thumbs.map((r) => +(r.thumb.rps / r.static.rps).toFixed(3)),
    cpuRatios: thumbs.map((r) => +(r.thumb.cpuUs / r.static.cpuUs).toFixed(3)),
    medianCpuRatio: med(thumbs, (r) => r.thumb.cpuUs / r.static.cpuUs),
    staticRps: med(thumbs, (r) => r.static.rps),
    thumbRps: med(thumbs, (r) => r.thumb.rps),
    staticCpuUs: med(thumbs, (r) => r.static.cpuUs),
    thumbCpuUs: med(thumbs, (r) => r.thumb.cpuUs),
    staticQueueWait: med(thumbs, (r) => r.static.queueWaitShare),
    thumbQueueWait: med(thumbs, (r) => r.thumb.queueWaitShare),
    staticOthersOnCore: med(thumbs, (r) => r.static.otherOnServerCore),
    thumbOthersOnCore: med(thumbs, (r) => r.thumb.otherOnServerCore),
    ...(opts.before
      ? {
          before: opts.before,
          beforeMedianRpsRatio: med(thumbs, (r) => r['thumb-before'].rps / r.static.rps),
          beforeRpsRatios: thumbs.map((r) => +(r['thumb-before'].rps / r.static.rps).toFixed(3)),
          beforeMedianCpuRatio: med(thumbs, (r) => r['thumb-before'].cpuUs / r.static.cpuUs),
          beforeThumbCpuUs: med(thumbs, (r) => r['thumb-before'].cpuUs),
          beforeThumbRps: med(thumbs, (r) => r['thumb-before'].rps),
          // This checkout's thumbnail against the earlier one's, same round.
          nowOverBeforeCpu: med(thumbs, (r) => r.thumb.cpuUs / r['thumb-before'].cpuUs),
          nowOverBeforeRps: med(thumbs, (r) => r.thumb.rps / r['thumb-before'].rps),
        }
      : {}),
  },
};
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
