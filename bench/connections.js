// How the svc CLI server holds up against connections that cost it without asking anything
// (issue 21, item 8): silent connections, slowloris connections and idle keep-alive connections.
// Starts `svc bench/app --env production` on 127.0.0.1 (a copy of the app folder), opens the
// connections from loopback addresses 127.0.0.2.. (spread so that a per-address cap does not
// refuse them: what is measured is how long they stay), counts the open ones over time and
// reads the server's RSS from /proc. Bounded: about 70 s, loopback only, stops what it starts.
//
//   node bench/connections.js [--silent 100] [--slowloris 2000] [--idle 10000] [--watch 30]
import { spawn } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { freePort, SVC_NODE_FLAGS } from './lib/procs.js';

const { values } = parseArgs({
  options: {
    silent: { type: 'string', default: '100' },
    slowloris: { type: 'string', default: '2000' },
    idle: { type: 'string', default: '10000' },
    watch: { type: 'string', default: '30' },
    'per-address': { type: 'string', default: '200' },
  },
});
const SILENT = Number(values.silent);
const SLOWLORIS = Number(values.slowloris);
const IDLE = Number(values.idle);
const WATCH_S = Number(values.watch);
const PER_ADDRESS = Number(values['per-address']);

const svcBin = fileURLToPath(new URL('../apps/server/bin/svc.js', import.meta.url));
const appSource = fileURLToPath(new URL('./app', import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

/** Loopback source addresses, PER_ADDRESS connections each. */
let opened = 0;
const nextSource = () => `127.0.0.${2 + Math.floor(opened++ / PER_ADDRESS)}`;

function connect(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress: nextSource() });
    const conn = { socket, open: true };
    socket.on('error', () => {});
    socket.on('close', () => (conn.open = false));
    socket.once('connect', () => resolve(conn));
    socket.once('close', () => resolve(conn));
  });
}

async function openMany(port, n) {
  const out = [];
  for (let i = 0; i < n; i += 200) out.push(...(await Promise.all(Array.from({ length: Math.min(200, n - i) }, () => connect(port)))));
  return out;
}

const openCount = (conns) => conns.filter((c) => c.open).length;

async function probe(port) {
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}/todos?{"$limit":1}`).catch(() => undefined);
  await res?.text();
  return res ? `${res.status} in ${Math.round(performance.now() - started)} ms` : 'failed';
}

async function main() {
  const appDir = await mkdtemp(join(tmpdir(), 'svc-conns-'));
  await cp(appSource, appDir, { recursive: true });
  const port = await freePort();
  const server = spawn(process.execPath, [...SVC_NODE_FLAGS, svcBin, appDir, '--port', String(port), '--host', '127.0.0.1', '--env', 'production'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = async () => {
    server.kill('SIGTERM');
    await rm(appDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  let log = '';
  server.stderr.on('data', (d) => (log += d));
  await new Promise((resolve, reject) => {
    server.stdout.on('data', (d) => {
      log += d;
      if (/listening on port/.test(log)) resolve();
    });
    server.once('exit', () => reject(new Error(`server exited:\n${log}`)));
  });
  try {
    console.log(`server pid ${server.pid}, RSS at rest ${rssMb(server.pid).toFixed(0)} MB`);

    // 1. Silent connections and slowloris connections, watched together.
    const silent = await openMany(port, SILENT);
    const slow = await openMany(port, SLOWLORIS);
    for (const c of slow) c.socket.write('GET /todos HTTP/1.1\r\nHost: x\r\n');
    const drip = setInterval(() => {
      for (const c of slow) if (c.open) c.socket.write('X');
    }, 1000);
    const started = performance.now();
    console.log(`opened ${SILENT} silent and ${SLOWLORIS} slowloris connections (one header byte a second); RSS ${rssMb(server.pid).toFixed(0)} MB`);
    for (let s = 5; s <= WATCH_S; s += 5) {
      await sleep(started + s * 1000 - performance.now());
      console.log(`  at ${s} s: silent open ${openCount(silent)}/${SILENT}, slowloris open ${openCount(slow)}/${SLOWLORIS}, normal request ${await probe(port)}, RSS ${rssMb(server.pid).toFixed(0)} MB`);
    }
    clearInterval(drip);
    for (const c of [...silent, ...slow]) c.socket.destroy();
    await sleep(1000);

    // 2. Idle keep-alive connections: one request each, then nothing.
    const rest = rssMb(server.pid);
    const idle = await openMany(port, IDLE);
    let answered = 0;
    await Promise.all(
      idle.map(
        (c) =>
          new Promise((resolve) => {
            if (!c.open) return resolve();
            c.socket.once('data', () => {
              answered++;
              resolve();
            });
            c.socket.once('close', resolve);
            c.socket.write('GET /nope HTTP/1.1\r\nHost: x\r\n\r\n');
          }),
      ),
    );
    const idleStart = performance.now();
    console.log(`${IDLE} keep-alive connections, ${answered} answered; RSS ${rest.toFixed(0)} -> ${rssMb(server.pid).toFixed(0)} MB (+${(rssMb(server.pid) - rest).toFixed(0)} MB), open ${openCount(idle)}`);
    for (const s of [5, 10, 20]) {
      await sleep(idleStart + s * 1000 - performance.now());
      console.log(`  at ${s} s idle: open ${openCount(idle)}/${IDLE}, RSS ${rssMb(server.pid).toFixed(0)} MB`);
    }
    for (const c of idle) c.socket.destroy();
  } finally {
    await stop();
  }
}

await main();
