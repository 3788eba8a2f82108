// The sockets of bench/realtime/run.js, in one process pinned to core 1. Both variants use the same
// `ws` client, so the client side costs the same: for svc it speaks the Engine.IO v4 / Socket.IO v5
// wire protocol itself (open, connect, ping/pong, events), for raw ws it reads JSON messages.
// Each message carries its send time (process.hrtime, the same monotonic clock in every process).
import WebSocket from 'ws';
import { rawSocketIo } from '../lib/rawSocketIo.js';
import { answerCommands } from '../lib/helpers.js';

const nowUs = () => Number(process.hrtime.bigint() / 1000n);
let latencies = new Float64Array(1 << 20);
let samples = 0;
/** User-targeted messages: per socket, how many arrived and how many were meant for another. */
let dmCount = [];
let dmWrong = 0;
let dmLatencies = [];

function record(event, data, index) {
  const latency = nowUs() - data.t;
  if (event === 'dm') {
    dmCount[index]++;
    if (data.target !== index) dmWrong++;
    dmLatencies.push(latency);
    return;
  }
  if (samples === latencies.length) {
    const bigger = new Float64Array(latencies.length * 2);
    bigger.set(latencies);
    latencies = bigger;
  }
  latencies[samples++] = latency;
}

function connect(variant, port, index, sid) {
  return new Promise((resolve, reject) => {
    const headers = sid ? { cookie: `sid=${sid}` } : {};
    if (variant === 'ws') {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { perMessageDeflate: false, headers });
      ws.on('error', reject);
      ws.on('open', () => resolve(ws));
      ws.on('message', (buf) => record('b', JSON.parse(buf.toString()), index));
      return;
    }
    const ws = rawSocketIo(port, { headers, on: { connected: () => resolve(ws), event: (event, data) => record(event, data, index) } });
    ws.on('error', reject);
  });
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summary(values) {
  const sorted = Float64Array.from(values).sort();
  return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN };
}

const sockets = [];
answerCommands(async (msg) => {
  let result;
  if (msg.cmd === 'connect') {
    const { variant, port, n, sids } = msg;
    dmCount = new Array(n).fill(0);
    for (let start = 0; start < n; start += 100) {
      const batch = [];
      for (let i = start; i < Math.min(n, start + 100); i++) batch.push(connect(variant, port, i, sids?.[i]));
      sockets.push(...(await Promise.all(batch)));
    }
    result = sockets.length;
  } else if (msg.cmd === 'reset') {
    samples = 0;
    dmCount.fill(0);
    dmWrong = 0;
    dmLatencies = [];
    result = true;
  } else if (msg.cmd === 'report') {
    result = {
      broadcast: summary(latencies.subarray(0, samples)),
      dm: { ...summary(dmLatencies), wrong: dmWrong, socketsReached: dmCount.filter((c) => c > 0).length, perSocket: dmCount },
    };
  }
  return result;
}, {
  close() {
    for (const s of sockets) s.terminate();
  },
});
