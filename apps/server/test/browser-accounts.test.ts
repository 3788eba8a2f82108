import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { SvcClient, UserCollectionDef } from '@svc/client';
import { BLANK_PAGE, chromiumAvailable, launchChromium, startBrowserApp } from './browser-helpers.js';
import type { BrowserApp } from './browser-helpers.js';
import { codeIn, startSmtp, tokenIn } from './helpers/smtp.js';
import type { TestSmtp } from './helpers/smtp.js';

// Issue 27: the account calls of /svc.js from a page in chromium, with the mails read from a real
// SMTP server: sign-in by code, password reset (the page's session ends), verification.

interface User {
  id: string;
  username: string;
  email?: string;
  verified: boolean;
}
declare const svc: SvcClient<{ resources: { users: UserCollectionDef<User> } }>;

const run = chromiumAvailable('browser tests of the account calls of /svc.js');

describe.skipIf(!run)('account calls of /svc.js in chromium', () => {
  let browser: Browser;
  let t: BrowserApp;
  let smtp: TestSmtp;

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startBrowserApp({
      'app.json': { passwordCost: 4 },
      'resources/users/config.json': {
        type: 'UserCollection',
        properties: { email: { type: 'string', unique: true } },
        auth: { verification: {}, reset: {}, codes: {}, mail: { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'app@example.com' } },
      },
      'public/index.html': BLANK_PAGE,
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await smtp?.close();
  });

  async function openPage(): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    page.on('pageerror', (err) => process.stderr.write(`page error: ${err.message}\n`));
    await page.goto(`${t.url}/`);
    return page;
  }

  it('sign up, confirm the address, sign in by code, reset the password: all from the page', async () => {
    const page = await openPage();
    await page.evaluate(() => svc.users.post({ username: 'pat', password: 'first', email: 'pat@example.com' }));
    const verification = tokenIn(await smtp.next('pat@example.com'));
    expect(await page.evaluate((token) => svc.users.confirmVerification({ token }), verification)).toEqual({ verified: true, email: 'pat@example.com' });

    expect(await page.evaluate(() => svc.users.requestCode({ email: 'pat@example.com' }))).toEqual({ requested: true });
    const code = codeIn(await smtp.next('pat@example.com'));
    const me = await page.evaluate(async (c) => {
      await svc.users.loginWithCode({ email: 'pat@example.com', code: c });
      return svc.users.me();
    }, code);
    expect(me).toMatchObject({ username: 'pat', verified: true });

    await page.evaluate(() => svc.users.requestPasswordReset({ email: 'pat@example.com' }));
    const reset = tokenIn(await smtp.next('pat@example.com'));
    const after = await page.evaluate(async (token) => {
      const done = await svc.users.confirmPasswordReset({ token, password: 'second' });
      const meAfter = await svc.users.me();
      const reused = await svc.users.confirmPasswordReset({ token, password: 'third' }).then(
        () => null,
        (e: unknown) => (e as { status: number }).status,
      );
      return { done, meAfter, reused };
    }, reset);
    expect(after).toEqual({ done: null, meAfter: null, reused: 400 });
    expect((await fetch(`${t.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'pat', password: 'second' }) })).status).toBe(200);
    await page.context().close();
  });
});
