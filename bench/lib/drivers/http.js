// HTTP load generator, run by the harness as its own process (pinned to the load core):
//   node bench/lib/drivers/http.js '<json config>'
// Config: { url, paths?, requestsFile?, method, headers, body, connections, warmup, duration, serverPid, serverCore, rate? }.
// `requestsFile`: a JSON array of { method, path, headers, body? }, one of them at random per
// request (a mixed workload: bench/peers.js --scenario app).
// Runs autocannon (no pipelining) for `warmup` s (discarded), then `duration` s measured, and
// prints one JSON line with the measured figures, including the server's CPU time over the
// measured window only (/proc/<serverPid>/stat, read right before and right after it).
// `rate` (req/s over all connections) sends at that fixed rate instead of as fast as answered.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { cpuSplit, coreTimes, clkTck } from '../procs.js';

const cfg = JSON.parse(process.argv[2]);
const host = new URL(cfg.url).hostname;
if (host !== '127.0.0.1' && host !== 'localhost' && host !== '[::1]') {
  throw new Error(`refusing to load ${cfg.url}: loopback only`);
}

const mix = cfg.requestsFile ? JSON.parse(readFileSync(cfg.requestsFile, 'utf8')) : undefined;

// Latency histogram with 1 µs buckets up to 1 s (autocannon's own is in whole milliseconds).
const MAX_US = 1_000_000;

function run(seconds, histogram) {
  return new Promise((resolve, reject) => {
    let responses = 0;
    const inst = autocannon(
      {
        url: cfg.url,
        method: cfg.method,
        headers: cfg.headers,
        body: cfg.body,
        // `paths`: one of these paths of url's origin at random per request (as the shared harness).
        ...(cfg.paths ? { requests: [{ setupRequest: (req) => ({ ...req, path: cfg.paths[Math.floor(Math.random() * cfg.paths.length)] }) }] } : {}),
        ...(mix ? { requests: [{ setupRequest: (req) => ({ ...req, ...mix[Math.floor(Math.random() * mix.length)] }) }] } : {}),
        connections: cfg.connections,
        pipelining: 1,
        duration: seconds,
        timeout: 10,
        ...(cfg.rate ? { overallRate: cfg.rate } : {}),
      },
      (err, result) => (err ? reject(err) : resolve({ result, responses })),
    );
    inst.on('response', (_client, _status, _bytes, ms) => {
      responses++;
      if (histogram) {
        const us = Math.round(ms * 1000);
        histogram.counts[us < MAX_US ? us : MAX_US]++;
        if (us > histogram.max) histogram.max = us;
      }
    });
  });
}

function percentile(h, total, p) {
  const rank = Math.ceil((p / 100) * total);
  let seen = 0;
  for (let us = 0; us <= MAX_US; us++) {
    seen += h.counts[us];
    if (seen >= rank) return us / 1000;
  }
  return h.max / 1000;
}

if (cfg.warmup > 0) await run(cfg.warmup);

const histogram = { counts: new Uint32Array(MAX_US + 1), max: 0 };
const cpu0 = cpuSplit(cfg.serverPid);
const cores0 = coreTimes();
const own0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
const { result, responses } = await run(cfg.duration, histogram);
const t1 = process.hrtime.bigint();
const cpu1 = cpuSplit(cfg.serverPid);
const cores1 = coreTimes();
const own = process.cpuUsage(own0);

// How busy the server's core was in the window, whoever used it, and VM steal over all cores.
let serverCoreBusy = null;
let steal = 0;
let total = 0;
for (const [core, b] of cores1) {
  const a = cores0.get(core);
  if (!a) continue;
  steal += b.steal - a.steal;
  total += b.total - a.total;
  if (core === cfg.serverCore) serverCoreBusy = (b.busy - a.busy) / clkTck;
}

const seconds = Number(t1 - t0) / 1e9;
const serverCpu = cpu1.total - cpu0.total;
// The server process alone, without its children (svc's script processes).
const ownCpu = cpu1.self - cpu0.self;
const userCpu = cpu1.user - cpu0.user;
let sum = 0;
for (let us = 0; us <= MAX_US; us++) sum += us * histogram.counts[us];

process.stdout.write(
  `${JSON.stringify({
    requests: responses,
    seconds,
    rps: responses / seconds,
    latencyMs: {
      p50: percentile(histogram, responses, 50),
      p90: percentile(histogram, responses, 90),
      p99: percentile(histogram, responses, 99),
      max: histogram.max / 1000,
      mean: responses ? sum / responses / 1000 : 0,
    },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    resets: result.resets ?? 0,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([k, v]) => [k, v.count])),
    bytes: result.throughput.total,
    serverCpuSeconds: serverCpu,
    serverCores: serverCpu / seconds,
    cpuUsPerRequest: responses ? (serverCpu * 1e6) / responses : null,
    ownCpuUsPerRequest: responses ? (ownCpu * 1e6) / responses : null,
    userCpuUsPerRequest: responses ? (userCpu * 1e6) / responses : null,
    loadgenCores: (own.user + own.system) / 1e6 / seconds,
    // CPU of the server's core used by anything but the server (other processes, interrupts).
    otherOnServerCore: serverCoreBusy === null ? null : Math.max(0, serverCoreBusy - serverCpu) / seconds,
    stealFraction: total ? steal / total : 0,
  })}\n`,
);
