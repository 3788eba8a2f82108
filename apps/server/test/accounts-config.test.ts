import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { emailType } from '@svc/type-email';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { memoryLogger, runApp, writeApp } from './helpers/app.js';
import { startSmtp, tokenIn } from './helpers/smtp.js';
import type { TestSmtp } from './helpers/smtp.js';

// Issue 27: how account mails go out (an Email resource of the app, or SMTP settings), what a
// wrong auth setting says at start, and mail limits shared by processes over Redis.

describe('account mail through the app', () => {
  let smtp: TestSmtp;
  beforeAll(async () => {
    smtp = await startSmtp();
  });
  afterAll(() => smtp.close());

  it('auth.mail.resource: the SMTP server and sender of an Email resource', async () => {
    const app = await runApp(
      {
        'app.json': { passwordCost: 4 },
        'resources/mailer/config.json': { type: 'Email', host: '127.0.0.1', port: smtp.port, defaultFromAddress: 'Shop <shop@example.com>' },
        'resources/users/config.json': { type: 'UserCollection', properties: { email: { type: 'string' } }, auth: { reset: {}, mail: { resource: 'mailer' } } },
      },
      { resourceTypes: [emailType] },
    );
    try {
      await app.request('POST', '/users', { username: 'ann', password: 'pw', email: 'ann@example.com' });
      expect((await app.request('POST', '/users/requestPasswordReset', { email: 'ann@example.com' })).status).toBe(202);
      const mail = await smtp.next('ann@example.com');
      expect(mail.parsed.from?.text).toBe('"Shop" <shop@example.com>');
      expect((await app.request('POST', '/users/confirmPasswordReset', { token: tokenIn(mail), password: 'new' })).status).toBe(204);
      // Flows left out of auth are not answered.
      expect(await app.request('POST', '/users/requestCode', { email: 'ann@example.com' })).toMatchObject({ status: 404, body: { message: 'requestCode is not turned on for users (config.json auth: docs/accounts.md)' } });
    } finally {
      await app.close();
    }
  });

  it('auth is read once, references resolved: the link of auth.reset.url and the SMTP port of auth.mail from the environment', async () => {
    process.env.SVC_TEST_RESET_BASE = 'https://shop.example.com';
    process.env.SVC_TEST_ACCOUNT_SMTP_PORT = String(smtp.port);
    const app = await runApp({
      'app.json': { passwordCost: 4 },
      'resources/users/config.json': {
        type: 'UserCollection',
        properties: { email: { type: 'string' } },
        auth: { reset: { url: '${env:SVC_TEST_RESET_BASE}/reset?token={token}' }, mail: { smtp: { host: '127.0.0.1', port: '${env:SVC_TEST_ACCOUNT_SMTP_PORT}' }, from: 'a@example.com' } },
      },
    });
    try {
      await app.request('POST', '/users', { username: 'eve', password: 'pw', email: 'eve@example.com' });
      expect((await app.request('POST', '/users/requestPasswordReset', { email: 'eve@example.com' })).status).toBe(202);
      const mail = await smtp.next('eve@example.com');
      expect(mail.parsed.text).toContain(`https://shop.example.com/reset?token=${tokenIn(mail)}`);
    } finally {
      await app.close();
    }
  });

  it('without a unique index on email, a change to an address another user has is not confirmed', async () => {
    const app = await runApp({
      'app.json': { passwordCost: 4 },
      'resources/users/config.json': { type: 'UserCollection', properties: { email: { type: 'string' } }, auth: { verification: {}, mail: { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'a@example.com' } } },
    });
    try {
      await app.request('POST', '/users', { username: 'cy', password: 'pw', email: 'cy@example.com' });
      await smtp.next('cy@example.com');
      const dee = app.client();
      const id = ((await dee('POST', '/users', { username: 'dee', password: 'pw', email: 'dee@example.com' })).body as { id: string }).id;
      await smtp.next('dee@example.com');
      await dee('POST', '/users/login', { username: 'dee', password: 'pw' });
      await dee('PUT', `/users/${id}`, { email: 'cy@example.com' });
      const token = tokenIn(await smtp.next('cy@example.com'));
      expect(await app.request('POST', '/users/confirmVerification', { token })).toMatchObject({ status: 400, body: { errors: { email: 'is already in use' } } });
      expect((await dee('GET', '/users/me')).body).toMatchObject({ email: 'dee@example.com' });
    } finally {
      await app.close();
    }
  });

  it("an Email resource's productionOnly: in development the mail is logged, not sent", async () => {
    const logger = memoryLogger();
    const app = await runApp(
      {
        'app.json': { passwordCost: 4 },
        'resources/mailer/config.json': { type: 'Email', host: '127.0.0.1', port: smtp.port, defaultFromAddress: 'shop@example.com', productionOnly: true },
        'resources/users/config.json': { type: 'UserCollection', properties: { email: { type: 'string' } }, auth: { reset: {}, mail: { resource: 'mailer' } } },
      },
      { resourceTypes: [emailType], logger },
    );
    try {
      await app.request('POST', '/users', { username: 'bo', password: 'pw', email: 'bo@example.com' });
      await app.request('POST', '/users/requestPasswordReset', { email: 'bo@example.com' });
      await expect.poll(() => logger.lines.some((l) => l.includes('not sending the reset mail in development')), { timeout: 10_000 }).toBe(true);
      expect(smtp.pending('bo@example.com')).toHaveLength(0);
    } finally {
      await app.close();
    }
  });

  it.each([
    [{ reset: {} }, 'resource users: auth.mail is required by auth.verification, auth.reset and auth.codes'],
    [{ reset: {}, mail: { resource: 'mailer', smtp: { host: 'x' } } }, 'resource users: auth.mail: give either "resource" (an Email resource of the app) or "smtp" (host, port, ...), not both'],
    [{ reset: {}, mail: { resource: 'todos' } }, 'resource users: auth.mail.resource: todos is not an Email resource of this app'],
    [{ reset: {}, mail: { smtp: { host: 'x', port: 25 } } }, 'resource users: auth.mail.from is required'],
    [{ reset: {}, mail: { smtp: { host: 'x', password: '${env:SVC_TEST_NO_SUCH_VAR}' }, from: 'a@example.com' } }, 'refers to ${env:SVC_TEST_NO_SUCH_VAR}, which is not set'],
    [{ reset: {}, mail: { smtp: { host: 'x' }, from: 'a@example.com', limits: { perRecipient: 0 } } }, 'resource users: auth.mail.limits.perRecipient must be a whole number from 1 to 1000000'],
    [{ reset: {}, mail: { smtp: { host: 'x' }, from: 'evil\r\nBcc: x@example.com' } }, "resource users: auth.mail.from must be one address ('Name <address>' or 'address')"],
    [{ reset: {}, mail: { smtp: { host: 'x' }, from: 'a@example.com' } }, 'NO_EMAIL'],
    [{ codes: { length: 3 }, mail: { smtp: { host: 'x' }, from: 'a@example.com' } }, 'resource users: auth.codes.length must be a whole number from 6 to 10'],
  ])('auth %j stops the start: %s', async (auth, message) => {
    const dir = await writeApp({
      'resources/todos/config.json': { type: 'Collection', properties: {} },
      'resources/users/config.json': { type: 'UserCollection', properties: message === 'NO_EMAIL' ? { mail: { type: 'string' } } : { email: { type: 'string' } }, auth },
    });
    if (message === 'NO_EMAIL') message = 'resource users: auth.verification, auth.reset and auth.codes need an "email" property of type string';
    try {
      await expect(startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger, resourceTypes: [emailType] })).rejects.toThrow(message);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

const redisUrl = process.env.SVC_TEST_REDIS_URL;
if (!redisUrl) {
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_REDIS_URL is not set: the shared mail limits test cannot run');
  process.stderr.write('SKIPPED the shared account mail limits test: set SVC_TEST_REDIS_URL\n');
}

describe.skipIf(!redisUrl)('account mail limits shared over Redis by two app processes', () => {
  const apps: RunningApp[] = [];
  const dirs: string[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const dir = await writeApp({
        'app.json': { passwordCost: 4 },
        'resources/users/config.json': {
          type: 'UserCollection',
          properties: { email: { type: 'string' } },
          auth: { reset: {}, mail: { smtp: { host: '127.0.0.1', port: 9 }, from: 'a@example.com', limits: { perRecipient: 3, perClient: 1_000_000 } } },
        },
      });
      dirs.push(dir);
      apps.push(await startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger, redis: redisUrl! }));
    }
  }, 60_000);
  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('requests for one recipient sent to A and B count together', async () => {
    // Unique per run: the counters live in the shared Redis for the window.
    const email = `shared-${process.pid}-${Date.now()}@example.com`;
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${apps[i % 2]!.url}/users/requestPasswordReset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) });
      statuses.push(res.status);
      if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect(statuses).toEqual([202, 202, 202, 429]);
  });
});

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;
if (!mongoUrl || !redisUrl) process.stderr.write('SKIPPED the two-process reset test (one MongoDB, one Redis): set SVC_TEST_MONGODB_URL and SVC_TEST_REDIS_URL\n');

describe.skipIf(!mongoUrl || !redisUrl)('a reset through one process ends the sessions held through another (one MongoDB, Redis)', () => {
  const apps: RunningApp[] = [];
  const dirs: string[] = [];
  let smtp: TestSmtp;
  const dbName = `svc_accounts_${process.pid}_${Date.now()}`;
  beforeAll(async () => {
    smtp = await startSmtp();
    for (let i = 0; i < 2; i++) {
      const dir = await writeApp({
        'app.json': { passwordCost: 4 },
        'resources/users/config.json': {
          type: 'UserCollection',
          properties: { email: { type: 'string', unique: true } },
          // The counts live in the shared Redis for an hour: limits no run of the tests reaches.
          auth: { reset: {}, mail: { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'a@example.com', limits: { perRecipient: 1000, perClient: 1_000_000 } } },
        },
      });
      dirs.push(dir);
      apps.push(await startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger: silentLogger, db: `${mongoUrl!.replace(/\/$/, '')}/${dbName}`, redis: redisUrl! }));
    }
  }, 60_000);
  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    await smtp?.close();
    const { MongoClient } = await import('mongodb');
    const client = new MongoClient(mongoUrl!);
    await client.db(dbName).dropDatabase().catch(() => undefined);
    await client.close();
  });

  it('logged in on A (cookie), reset on B: A answers /me with no user', async () => {
    const [a, b] = apps as [RunningApp, RunningApp];
    const json = { 'content-type': 'application/json' };
    const email = `ann-${process.pid}-${Date.now()}@example.com`;
    expect((await fetch(`${a.url}/users`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'ann', password: 'pw', email }) })).status).toBe(200);
    const login = await fetch(`${a.url}/users/login`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'ann', password: 'pw' }) });
    const cookie = (login.headers.getSetCookie()[0] ?? '').split(';')[0] as string;
    expect(await (await fetch(`${a.url}/users/me`, { headers: { cookie } })).json()).toMatchObject({ username: 'ann' });
    await fetch(`${b.url}/users/requestPasswordReset`, { method: 'POST', headers: json, body: JSON.stringify({ email }) });
    const token = tokenIn(await smtp.next(email));
    expect((await fetch(`${b.url}/users/confirmPasswordReset`, { method: 'POST', headers: json, body: JSON.stringify({ token, password: 'new' }) })).status).toBe(204);
    expect((await fetch(`${a.url}/users/me`, { headers: { cookie } })).status).toBe(204);
  });
});
