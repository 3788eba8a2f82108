// A webhook receiver for bench/webhooks.js, run as a helper (IPC, lib/helpers.js) on the load core:
// answers every POST 200 and keeps, per delivery, how long after the write it arrived (now minus
// the payload's `at`, the time the server stored the write: the same machine's clock).
//   commands: {cmd: 'reset'} -> true; {cmd: 'stats'} -> {count, unique, p50, p90, p99, max}
import { createServer } from 'node:http';
import { answerCommands } from '../lib/helpers.js';

let delays = [];
let ids = new Set();
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    try {
      const payload = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      delays.push(now - Date.parse(payload.at));
      ids.add(payload.id);
    } catch {
      // not a delivery: counted nowhere
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
});
server.keepAliveTimeout = 5000;
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

const pct = (sorted, p) => (sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);
answerCommands(
  async (msg) => {
    if (msg.cmd === 'reset') {
      delays = [];
      ids = new Set();
      return true;
    }
    if (msg.cmd === 'stats') {
      const sorted = [...delays].sort((a, b) => a - b);
      return { count: delays.length, unique: ids.size, p50: pct(sorted, 50), p90: pct(sorted, 90), p99: pct(sorted, 99), max: sorted.at(-1) ?? null };
    }
    throw new Error(`unknown command ${msg.cmd}`);
  },
  { close: () => new Promise((resolve) => server.close(resolve)), ready: { port: server.address().port } },
);
