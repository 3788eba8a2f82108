// Upload load generator for bench/files.js, run as its own process (pinned to the load core):
//   node bench/lib/drivers/upload.js '<json config>'
// Config: { port, method, paths (one per connection), bytes, warmup, duration, serverPid }.
// Each connection sends the same `bytes` random bytes to its own path, one upload after the
// other, for `warmup` s (discarded) then `duration` s measured; prints one JSON line: uploads/s,
// latency percentiles, statuses, and the server's CPU over the measured window (/proc).
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { cpuSplit } from '../procs.js';

const cfg = JSON.parse(process.argv[2]);
const body = randomBytes(cfg.bytes);
const agent = new http.Agent({ keepAlive: true, maxSockets: cfg.paths.length });

function upload(path) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const req = http.request({ host: '127.0.0.1', port: cfg.port, method: cfg.method, path, agent, headers: { 'content-length': body.length, 'content-type': 'application/octet-stream' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
    });
    req.on('error', () => resolve({ status: 0, ms: 0 }));
    req.end(body);
  });
}

async function run(seconds) {
  const until = Date.now() + seconds * 1000;
  const done = [];
  await Promise.all(
    cfg.paths.map(async (path) => {
      while (Date.now() < until) done.push(await upload(path));
    }),
  );
  return done;
}

if (cfg.warmup > 0) await run(cfg.warmup);
const cpu0 = cpuSplit(cfg.serverPid);
const t0 = process.hrtime.bigint();
const done = await run(cfg.duration);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu1 = cpuSplit(cfg.serverPid);
agent.destroy();
const ok = done.filter((d) => d.status >= 200 && d.status < 300);
const ms = ok.map((d) => d.ms).sort((a, b) => a - b);
const at = (p) => (ms.length ? ms[Math.min(ms.length - 1, Math.ceil((p / 100) * ms.length) - 1)] : null);
const statuses = {};
for (const d of done) statuses[d.status] = (statuses[d.status] ?? 0) + 1;
const cpu = cpu1.total - cpu0.total;
process.stdout.write(
  `${JSON.stringify({
    requests: ok.length,
    failed: done.length - ok.length,
    statuses,
    seconds,
    rps: ok.length / seconds,
    latencyMs: { p50: at(50), p99: at(99) },
    serverCpuSeconds: cpu,
    serverCores: cpu / seconds,
    cpuMsPerUpload: ok.length ? (cpu * 1e3) / ok.length : null,
  })}\n`,
);
