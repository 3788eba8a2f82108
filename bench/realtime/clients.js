// The sockets of bench/realtime/run.js, in one process pinned to core 1. Both variants use the same
// `ws` client, so the client side costs the same: for svc it speaks the Engine.IO v4 / Socket.IO v5
// wire protocol itself (open, connect, ping/pong, events), for raw ws it reads JSON messages.
// Each message carries its send time (process.hrtime, the same monotonic clock in every process).
import WebSocket from 'ws';
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
    const url = variant === 'ws' ? `ws://127.0.0.1:${port}/` : `ws://127.0.0.1:${port}/socket.io/?EIO=4&transport=websocket`;
    const ws = new WebSocket(url, { perMessageDeflate: false, headers: sid ? { cookie: `sid=${sid}` } : {} });
    ws.on('error', reject);
    if (variant === 'ws') {
      ws.on('open', () => resolve(ws));
      ws.on('message', (buf) => record('b', JSON.parse(buf.toString()), index));
      return;
    }
    ws.on('message', (buf) => {
      const text = buf.toString();
      const type = text.charCodeAt(0);
      if (type === 50 /* '2' ping */) ws.send('3');
      else if (type === 48 /* '0' open */) ws.send('40');
      else if (type === 52 /* '4' message */) {
        const packet = text.charCodeAt(1);
        if (packet === 48 /* '0' connected */) resolve(ws);
        else if (packet === 50 /* '2' event */) {
          const [event, data] = JSON.parse(text.slice(2));
          record(event, data, index);
        }
      }
    });
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
