import { spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePort } from '../apps/server/test/helpers/nginx.js';

// What the fault tests that run a service of their own (Redis, FerretDB) share: a free loopback
// port, whether redis-server is installed, and whether a Redis answers.

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
