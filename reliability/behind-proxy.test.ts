import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeApp } from '../apps/server/test/helpers/app.js';
import { nginxBinary, startNginx } from '../apps/server/test/helpers/nginx.js';
import type { NginxProxy } from '../apps/server/test/helpers/nginx.js';
import { loginStatus, send } from '../apps/server/test/helpers/proxyClient.js';
import { startSvc } from '../apps/server/test/cli.js';
import type { SvcProcess } from '../apps/server/test/cli.js';

// Issue 23 (1), the attacks of the issue repeated against the svc command behind a real nginx
// (Debian's package) on loopback. Clients of the proxy are played from distinct loopback source
// addresses (127.0.0.x). Without trustProxy every client is the proxy's 127.0.0.1 (the numbers
// of the issue); with it, the attacker locks out nobody. A development server behind nginx is
// never root for a remote key.

const nginx = nginxBinary();
if (nginx === undefined) process.stderr.write('SKIPPED the proxy attacks: no nginx binary (apt-get install nginx-light)\n');

const USERS = 20;
const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

async function svcBehindNginx(appJson: object, directives: readonly string[]): Promise<{ svc: SvcProcess; proxy: NginxProxy; dir: string }> {
  const dir = await writeApp({
    'app.json': { passwordCost: 4, ...appJson },
    'resources/users/config.json': { type: 'UserCollection', properties: {} },
    'resources/todos/config.json': { type: 'Collection', properties: { by: { type: 'string' } } },
    'resources/todos/post.js': 'this.by = "original";',
  });
  stops.push(() => rm(dir, { recursive: true, force: true }));
  const svc = await startSvc([dir, '--env', 'development'], { SVC_WATCH: '0' });
  stops.push(() => svc.stop('SIGKILL'));
  const proxy = await startNginx(svc.port, directives);
  stops.push(() => proxy.stop());
  for (let i = 0; i < USERS; i++) expect((await send({ port: svc.port, method: 'POST', path: '/users', body: { username: `user${i}`, password: 'right' } })).status).toBe(200);
  return { svc, proxy, dir };
}

/** The two lock-out attacks from 127.0.0.2; answers how many users are locked out after them. */
async function lockOutAttack(port: number): Promise<{ aliceLocked: boolean; lockedOut: number }> {
  for (let i = 0; i < 10; i++) await loginStatus(port, '127.0.0.2', 'user0', 'wrong');
  const aliceLocked = (await loginStatus(port, '127.0.0.3', 'user0', 'right')) === 429;
  // 101 wrong logins with random usernames, 20 at a time.
  for (let sent = 0; sent < 101; sent += 20) {
    await Promise.all(Array.from({ length: Math.min(20, 101 - sent) }, () => loginStatus(port, '127.0.0.2', `nobody-${Math.random().toString(36).slice(2)}`, 'wrong')));
  }
  let lockedOut = 0;
  // Every user from a client of its own (127.0.0.10 ...).
  for (let i = 0; i < USERS; i++) if ((await loginStatus(port, `127.0.0.${10 + i}`, `user${i}`, 'right')) !== 200) lockedOut++;
  return { aliceLocked, lockedOut };
}

describe.skipIf(nginx === undefined)('svc behind nginx: the attacks of issue 23', () => {
  const forwardedFor = ['proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;', 'proxy_set_header Host $host;'];

  it('without trustProxy every client is the proxy: the attacker locks users out (the issue)', async () => {
    const { proxy } = await svcBehindNginx({}, forwardedFor);
    const { aliceLocked, lockedOut } = await lockOutAttack(proxy.port);
    process.stderr.write(`behind nginx without trustProxy: alice locked out ${aliceLocked}; users locked out ${lockedOut} of ${USERS}\n`);
    expect(aliceLocked).toBe(true);
    expect(lockedOut).toBe(USERS);
  });

  it('with trustProxy the same attack locks out 0 users, and the attacker is still limited', async () => {
    const { proxy } = await svcBehindNginx({ trustProxy: ['127.0.0.1'] }, forwardedFor);
    const { aliceLocked, lockedOut } = await lockOutAttack(proxy.port);
    process.stderr.write(`behind nginx with trustProxy: alice locked out ${aliceLocked}; users locked out ${lockedOut} of ${USERS}\n`);
    expect(aliceLocked).toBe(false);
    expect(lockedOut).toBe(0);
    // The attacker's own address is past its 100 attempts a minute, spoofed X-Forwarded-For or not.
    expect(await loginStatus(proxy.port, '127.0.0.2', 'user1', 'right', { 'x-forwarded-for': '198.51.100.1' })).toBe(429);
  });

  it.each([
    ['default', []],
    ['Host, X-Forwarded-For, X-Real-IP', [...forwardedFor, 'proxy_set_header X-Real-IP $remote_addr;']],
    ['websocket', ['proxy_http_version 1.1;', 'proxy_set_header Upgrade $http_upgrade;', 'proxy_set_header Connection "upgrade";']],
  ])('development root through nginx (%s): refused, event scripts stay as they are', async (_name, directives) => {
    const { svc, proxy, dir } = await svcBehindNginx({}, directives);
    const headers = { 'svc-ssh-key': 'anything', connection: 'keep-alive' };
    // Refused with the reason (c2869f0), not answered as a visitor: the key is never taken as root.
    const session = await send({ port: proxy.port, path: '/dashboard/api/session', headers, from: '127.0.0.66' });
    expect(session.status).toBe(403);
    expect(session.body).toMatchObject({ message: expect.stringMatching(/^svc-ssh-key refused: .*Development gives root only to programs on this machine/) });
    expect(JSON.stringify(session.body)).not.toMatch(/"root":\s*true/);
    const write = await send({ port: proxy.port, method: 'PUT', path: '/dashboard/api/resources/todos/events/post.js', body: { source: 'this.by = "owned";' }, headers, from: '127.0.0.66' });
    expect(write.status).toBe(403);
    expect(await readFile(join(dir, 'resources/todos/post.js'), 'utf8')).toBe('this.by = "original";');
    expect((await send({ port: proxy.port, method: 'POST', path: '/todos', body: {}, from: '127.0.0.66' })).body).toMatchObject({ by: 'original' });
    // The developer on the machine itself still is root.
    expect((await send({ port: svc.port, path: '/dashboard/api/session', headers })).body).toMatchObject({ root: true });
    expect(svc.stderr()).toMatch(/is not root: .*must never be reachable by others/);
    expect(svc.stderr()).toMatch(/development mode: .*must never be reachable by others/);
  });
});
