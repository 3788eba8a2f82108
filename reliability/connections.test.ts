import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { writeApp } from '../apps/server/test/helpers/app.js';
import { startSvc } from '../apps/server/test/cli.js';
import type { SvcProcess } from '../apps/server/test/cli.js';

// Issue 21 (8) under load, against the svc command (a process of its own, RSS read from /proc):
// 2,000 slowloris connections from 127.0.0.1 are all closed by the header budget while normal
// requests keep being answered; 1,000 connections from one address past its share are refused
// at once with one log line. Loopback only; every socket and process is stopped at the end.

const running: SvcProcess[] = [];
const dirs: string[] = [];
const sockets: Socket[] = [];

afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const p of running) await p.stop('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function start(http: object): Promise<SvcProcess> {
  const dir = await writeApp({ 'app.json': { http }, 'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } } });
  dirs.push(dir);
  const p = await startSvc([dir, '--env', 'development']);
  running.push(p);
  return p;
}

const rssMb = (p: SvcProcess): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p.child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Conn {
  socket: Socket;
  open: boolean;
}

async function openMany(port: number, n: number, from: string): Promise<Conn[]> {
  const out: Conn[] = [];
  for (let i = 0; i < n; i += 100) {
    const batch = Array.from(
      { length: Math.min(100, n - i) },
      () =>
        new Promise<Conn>((resolve) => {
          const socket = connect({ host: '127.0.0.1', port, localAddress: from });
          sockets.push(socket);
          const conn = { socket, open: true };
          socket.on('error', () => {});
          socket.once('close', () => {
            conn.open = false;
            resolve(conn);
          });
          socket.once('connect', () => resolve(conn));
        }),
    );
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

/** Waits (bounded) until at most `most` connections are open; answers how many still are. */
async function untilAtMost(conns: Conn[], most: number, ms: number): Promise<number> {
  const open = (): number => conns.filter((c) => c.open).length;
  for (let waited = 0; waited < ms && open() > most; waited += 100) await sleep(100);
  return open();
}

/** Waits (bounded) until no connection is open; answers how many still are. */
async function untilAllClosed(conns: Conn[], ms: number): Promise<number> {
  return untilAtMost(conns, 0, ms);
}

describe('connections under load', () => {
  it('2,000 slowloris connections from 127.0.0.1 are all closed; normal requests are answered meanwhile', async () => {
    // The per-address share is raised so that all 2,000 are accepted: the header budget closes them.
    const p = await start({ headersTimeoutMs: 2000, requestTimeoutMs: 5000, keepAliveTimeoutMs: 1000, maxConnectionsPerAddress: 3000 });
    const rest = rssMb(p);
    const conns = await openMany(p.port, 2000, '127.0.0.1');
    for (const c of conns) if (c.open) c.socket.write('GET /todos HTTP/1.1\r\nHost: x\r\n');
    let peak = rssMb(p);
    const drip = setInterval(() => {
      for (const c of conns) if (c.open) c.socket.write('X');
      peak = Math.max(peak, rssMb(p));
    }, 500);
    const statuses: (number | string)[] = [];
    let probing = true;
    const probes = (async () => {
      while (probing && statuses.length < 400) {
        statuses.push(await fetch(`${p.url}/todos`).then((r) => (void r.body?.cancel(), r.status), (err: Error) => err.message));
        await sleep(200);
      }
    })();
    const left = await untilAllClosed(conns, 60_000);
    clearInterval(drip);
    probing = false;
    await probes;
    console.log(`2,000 slowloris: RSS ${rest.toFixed(0)} MB at rest, ${peak.toFixed(0)} MB at most (+${(peak - rest).toFixed(0)} MB), ${rssMb(p).toFixed(0)} MB after; ${statuses.length} normal requests meanwhile`);
    expect(left).toBe(0);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  });

  it('1,000 connections from one address: its share (256) is served, the rest refused at once with one log line', async () => {
    // A header budget long enough that the ones accepted stay open while the others are refused.
    const p = await start({ headersTimeoutMs: 10_000, requestTimeoutMs: 15_000 });
    const conns = await openMany(p.port, 1000, '127.0.0.2');
    // A first line each: a connection the kernel completed but the server has not accepted yet (a
    // full accept queue under this burst) reaches the server with it, instead of looking open here.
    for (const c of conns) if (c.open) c.socket.write('GET /todos HTTP/1.1\r\n');
    // Refused ones are closed as they are accepted, long before the header budget closes those
    // served: awaited, bounded below that budget (a loaded machine accepts a burst slower; a fixed
    // 200 ms once saw 692 still waiting in the accept queue with three test files at a time).
    expect(await untilAtMost(conns, 256, 8000)).toBeLessThanOrEqual(256);
    expect(conns.filter((c) => c.open).length).toBeGreaterThan(0);
    // Another address is served meanwhile.
    expect((await fetch(`${p.url}/todos`)).status).toBe(200);
    expect(await untilAllClosed(conns, 60_000)).toBe(0);
    const lines = p.stderr().split('\n').filter((l) => l.includes('refused a connection'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/127\.0\.0\.2.*maxConnectionsPerAddress/);
  });
});
