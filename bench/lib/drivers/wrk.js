// HTTP load generator on `wrk` (Debian's package, C): the config and the JSON line of http.js, for
// servers fast enough that autocannon, at about 16 µs of its own CPU per request, is the limit on
// its core rather than the server (bench/peers.js --scenario hook).
//   node bench/lib/drivers/wrk.js '<json config>'
// Config: { url, paths?, requestsFile?, method: 'GET', headers, connections, warmup, duration, serverPid, serverCore, loadCore }.
// `paths` (optional): request one of these paths of url's origin at random per request (a Lua
// script), as the shared harness does. `requestsFile` (optional): a JSON file of autocannon's
// requests ([{ path }], as http.js reads it): their paths, for lists too long for an argument.
// One wrk thread: the driver runs pinned to the load core, and wrk with it. Latency percentiles
// are wrk's (--latency); loadgenCores is the load core's busy time.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuSplit, coreTimes, clkTck } from '../procs.js';

const cfg = JSON.parse(process.argv[2]);
const url = new URL(cfg.url);
if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost' && url.hostname !== '[::1]') {
  throw new Error(`refusing to load ${cfg.url}: loopback only`);
}
if ((cfg.method ?? 'GET') !== 'GET' || cfg.body !== undefined) throw new Error('the wrk driver sends GETs without a body only');
// The core this process (and wrk) is pinned to, given by lib/load.js: its busy time is wrk's.
const loadCore = cfg.loadCore ?? null;

const dir = mkdtempSync(join(tmpdir(), 'svc-wrk-'));
const script = join(dir, 'paths.lua');
const paths = cfg.paths ?? (cfg.requestsFile ? JSON.parse(readFileSync(cfg.requestsFile, 'utf8')).map((r) => r.path) : [url.pathname + url.search]);
writeFileSync(
  script,
  `local paths = { ${paths.map((p) => JSON.stringify(p)).join(', ')} }\n` +
    'request = function()\n  return wrk.format(nil, paths[math.random(#paths)])\nend\n',
);

function wrk(seconds) {
  const args = ['-t1', `-c${cfg.connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s', '-s', script];
  for (const [k, v] of Object.entries(cfg.headers ?? {})) args.push('-H', `${k}: ${v}`);
  args.push(`${url.origin}/`);
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited ${code}: ${err || out}`))));
  });
}

const TIME = { us: 1e-3, ms: 1, s: 1000, m: 60_000 };
const SIZE = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 };
const ms = (text) => {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!m) throw new Error(`wrk: a latency of ${text}`);
  return Number(m[1]) * TIME[m[2]];
};

try {
  if (cfg.warmup > 0) await wrk(cfg.warmup);
  const cpu0 = cpuSplit(cfg.serverPid);
  const cores0 = coreTimes();
  const out = await wrk(cfg.duration);
  const cpu1 = cpuSplit(cfg.serverPid);
  const cores1 = coreTimes();
  const done = /(\d+) requests in ([\d.]+)(us|ms|s|m), ([\d.]+)(B|KB|MB|GB) read/.exec(out);
  if (!done) throw new Error(`wrk: no summary in ${out}`);
  const requests = Number(done[1]);
  const seconds = (Number(done[2]) * TIME[done[3]]) / 1000;
  const pct = (p) => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out);
    return m ? ms(m[1]) : null;
  };
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const busy = (core) => {
    const a = cores0.get(core);
    const b = cores1.get(core);
    return a && b ? (b.busy - a.busy) / clkTck / seconds : null;
  };
  const serverCpu = cpu1.total - cpu0.total;
  process.stdout.write(
    `${JSON.stringify({
      requests,
      seconds,
      rps: requests / seconds,
      latencyMs: { p50: pct(50), p90: pct(90), p99: pct(99) },
      non2xx,
      errors: socket ? Number(socket[1]) + Number(socket[2]) + Number(socket[3]) : 0,
      timeouts: socket ? Number(socket[4]) : 0,
      bytes: Number(done[4]) * SIZE[done[5]],
      serverCpuSeconds: serverCpu,
      serverCores: serverCpu / seconds,
      cpuUsPerRequest: requests ? (serverCpu * 1e6) / requests : null,
      ownCpuUsPerRequest: requests ? ((cpu1.self - cpu0.self) * 1e6) / requests : null,
      loadgenCores: loadCore === null ? null : busy(loadCore),
      otherOnServerCore: cfg.serverCore === undefined ? null : Math.max(0, (busy(cfg.serverCore) ?? 0) - serverCpu / seconds),
    })}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
