import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable, launchChromium } from './browser-helpers.js';
import { appStores, memoryLogger, writeApp } from './helpers/app.js';
import { startSmtp, tokenIn } from './helpers/smtp.js';
import type { TestSmtp } from './helpers/smtp.js';

// Issue 38, item 16: turning `auth.verification.required` on silently locked out every existing
// user without a verified address. The start now warns with the count, and the dashboard's
// Accounts tab says it (with the count) as soon as "verification required" is ticked.

const run = chromiumAvailable('Accounts tab: users without a verified address');
const ROOT = { 'svc-ssh-key': 'development' };

for (const store of appStores()) {
  describe(`verification.required on an app with users (${store} store)`, () => {
    let smtp: TestSmtp;
    let dir: string;
    let app: RunningApp | undefined;
    const mongo = process.env.SVC_TEST_MONGODB_URL;
    const db = store === 'mongodb' && mongo ? `${mongo.replace(/\/$/, '')}/svc_required_${randomBytes(5).toString('hex')}` : undefined;

    const config = (required: boolean) => ({
      type: 'UserCollection',
      properties: { email: { type: 'string', unique: true } },
      auth: { verification: { required }, mail: { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'app@example.com', limits: { perRecipient: 1000, perClient: 10_000 } } },
    });
    async function start(required: boolean): Promise<{ app: RunningApp; lines: string[] }> {
      await app?.close();
      await writeFile(join(dir, 'resources/users/config.json'), JSON.stringify(config(required)));
      const logger = memoryLogger();
      app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', env: 'development', logger, ...(db ? { db } : {}) });
      return { app, lines: logger.lines };
    }
    async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
      const res = await fetch(`${(app as RunningApp).url}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    }

    beforeAll(async () => {
      smtp = await startSmtp();
      dir = await writeApp({ 'app.json': { passwordCost: 4 }, 'resources/users/config.json': {} });
      await start(false);
      // Users of the app before the setting: one verified, one not, one without any address.
      for (const [username, email] of [['ann', `ann-${store}@example.com`], ['bob', `bob-${store}@example.com`], ['cy', undefined]] as const) {
        expect((await call('POST', '/users', { username, password: `pw-${username}`, ...(email ? { email } : {}) })).status).toBe(200);
      }
      expect((await call('POST', '/users/confirmVerification', { token: tokenIn(await smtp.next(`ann-${store}@example.com`)) })).status).toBe(200);
      await smtp.next(`bob-${store}@example.com`);
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await smtp?.close();
      if (db && mongo) {
        const { MongoClient } = await import('mongodb');
        const c = new MongoClient(mongo);
        await c.db(db.slice(db.lastIndexOf('/') + 1)).dropDatabase().catch(() => undefined);
        await c.close();
      }
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('a start with it on warns, with the count, how many users it keeps out and how to let them in', async () => {
      const { lines } = await start(true);
      const warnings = lines.filter((l) => l.includes('auth.verification.required is on'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/^warn users: auth\.verification\.required is on and 2 users have no verified email address \(1 without any address\): they cannot log in until they confirm one\./);
      expect(warnings[0]).toContain('POST /users/requestVerification');
      expect(warnings[0]).toContain('docs/accounts.md');
      // What it warned about: bob's right password is refused until he confirms his address.
      expect(await call('POST', '/users/login', { username: 'bob', password: 'pw-bob' })).toMatchObject({ status: 403, body: { message: 'the email address is not verified yet' } });
      expect((await call('POST', '/users/login', { username: 'ann', password: 'pw-ann' })).status).toBe(200);
      // The way out the warning names: bob asks for a link, confirms, logs in; the next start counts one.
      expect((await call('POST', '/users/requestVerification', { email: `bob-${store}@example.com` })).status).toBe(202);
      expect((await call('POST', '/users/confirmVerification', { token: tokenIn(await smtp.next(`bob-${store}@example.com`)) })).status).toBe(200);
      expect((await call('POST', '/users/login', { username: 'bob', password: 'pw-bob' })).status).toBe(200);
      const again = await start(true);
      expect(again.lines.filter((l) => l.includes('auth.verification.required is on'))).toEqual([expect.stringContaining('and 1 user has no verified email address (1 without any address)')]);
      // Root marks the last one verified: nothing to warn about.
      const cy = ((await call('GET', '/users?username=cy', undefined, ROOT)).body as unknown as { id: string }[])[0] as { id: string };
      expect((await call('PUT', `/users/${cy.id}`, { verified: true }, ROOT)).status).toBe(200);
      expect((await start(true)).lines.join('\n')).not.toContain('auth.verification.required is on');
      // Off, nothing is said whatever the users.
      await call('PUT', `/users/${cy.id}`, { verified: false }, ROOT);
      expect((await start(false)).lines.join('\n')).not.toContain('auth.verification.required is on');
    });

    it('the dashboard\'s Accounts API answers the count of users without a verified address', async () => {
      await start(false);
      const view = await call('GET', '/dashboard/api/resources/users/accounts', undefined, ROOT);
      expect(view.status).toBe(200);
      expect(view.body.unverified).toEqual({ count: 1, withoutAddress: 1 });
    });

    it.skipIf(!run || store !== 'embedded')('the Accounts tab warns, with the count, as soon as "verification required" is ticked', async () => {
      await start(false);
      let browser: Browser | undefined;
      try {
        browser = await launchChromium();
        const page = await (await browser.newContext({ viewport: { width: 1360, height: 1100 } })).newPage();
        page.setDefaultTimeout(10_000);
        await page.goto(`${(app as RunningApp).url}/dashboard/#/r/users/accounts`);
        await page.waitForSelector('[data-test=accounts]');
        expect(await page.locator('[data-test=unverified-users]').count()).toBe(0);
        await page.check('[aria-label="verification required"]');
        const notice = await page.waitForSelector('[data-test=unverified-users]');
        expect(await notice.textContent()).toMatch(/^1 user has no verified email address \(1 without any address\): with verification required, they cannot log in/);
        await page.uncheck('[aria-label="verification required"]');
        await page.waitForSelector('[data-test=unverified-users]', { state: 'detached' });
      } finally {
        await browser?.close();
      }
    });
  });
}
