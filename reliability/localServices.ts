import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { freePort } from '../apps/server/test/helpers/nginx.js';

// What the fault tests that run a service of their own (Redis, FerretDB) share: a free loopback
// port, whether redis-server is installed, whether a Redis answers, and freezing a process.

export { freePort };

/** Whether `redis-server` can be started here. */
export const hasRedisServer: boolean = await new Promise<boolean>((resolve) => {
  const probe = spawn('redis-server', ['--version'], { stdio: 'ignore' });
  probe.on('error', () => resolve(false));
  probe.on('exit', (code) => resolve(code === 0));
});

/** Whether a Redis on 127.0.0.1:`port` answers PING. */
export function redisAnswers(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      resolve(d.toString().startsWith('+PONG'));
      socket.destroy();
    });
    socket.on('error', () => resolve(false));
  });
}

/**
 * Freezes a process (SIGSTOP) and resolves once every thread of it is stopped. kill() returns
 * before that: the kernel wakes one thread to begin the stop, and the others stop as they next get
 * a CPU. On a loaded machine a frozen FerretDB still answered a read 12 ms after kill() returned
 * (its state "R (running)" then; reliability/database-outage.test.ts, 1 run in 7 beside four busy
 * loops). Rejects when they are not all stopped within `ms`.
 */
export async function freezeProcess(pid: number, ms = 10_000): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  const end = Date.now() + ms;
  for (;;) {
    const states = readdirSync(`/proc/${pid}/task`).map((task) => {
      try {
        return /^State:\s+(\S)/m.exec(readFileSync(`/proc/${pid}/task/${task}/status`, 'utf8'))?.[1];
      } catch {
        return 'T';
      }
    });
    if (states.every((state) => state === 'T' || state === 't')) return;
    if (Date.now() > end) throw new Error(`process ${pid} not stopped within ${ms} ms (thread states ${states.join('')})`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
