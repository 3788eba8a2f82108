import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable } from './browser-helpers.js';
import { openAppInChromium } from './helpers/appInChromium.js';
import type { AppInChromium } from './helpers/appInChromium.js';

// Issue 27: the Accounts tab in a browser: add a provider (its secret as an environment variable's
// name), save; a setting the server refuses shows its message and changes nothing; a secret written
// as a value in config.json is never on the page; a mail template is written as a file.

const run = chromiumAvailable('dashboard Accounts tab browser tests');
const SHOTS = fileURLToPath(new URL('../test-output/dashboard/', import.meta.url));
const HAND_WRITTEN_SECRET = 'hand-written-smtp-password-123';

describe.skipIf(!run)('dashboard Accounts tab in the browser', () => {
  let app: RunningApp;
  let dir: string;
  let page: Page;
  let session: AppInChromium | undefined;
  const configFile = () => join(dir, 'resources/users/config.json');

  beforeAll(async () => {
    process.env.DASH_BROWSER_GOOGLE_SECRET = 'google-secret-from-env';
    const files: Record<string, object> = {
      'resources/users/config.json': {
        type: 'UserCollection',
        properties: { email: { type: 'string', unique: true } },
        auth: { reset: {}, mail: { smtp: { host: '127.0.0.1', port: 9, username: 'u', password: HAND_WRITTEN_SECRET }, from: 'app@example.com' } },
      },
    };
    session = await openAppInChromium(files, { prefix: 'svc-dashboard-accounts-', viewport: { width: 1360, height: 1100 }, timeout: 10_000 });
    ({ dir, app, page } = session);
    await page.goto(`${app.url}/dashboard/#/r/users/accounts`);
    await page.waitForSelector('[data-test=accounts]');
  });
  afterAll(async () => {
    delete process.env.DASH_BROWSER_GOOGLE_SECRET;
    await session?.close();
  });

  it('adds a provider and saves; a refused setting shows the server\'s message; no secret value on the page', async () => {
    expect(await page.isChecked('[aria-label="reset on"]')).toBe(true);
    expect(await page.content()).not.toContain(HAND_WRITTEN_SECRET);
    await page.click('[aria-label="oauth on"]');
    await page.fill('[aria-label="oauth redirects"]', 'https://app.example.com/after-login');
    await page.selectOption('[aria-label="new provider preset"]', 'google');
    await page.click('[data-test=add-provider]');
    await page.fill('[aria-label="google clientId"]', 'cid.apps.googleusercontent.com');
    await page.fill('[aria-label="google clientSecret"]', 'DASH_BROWSER_GOOGLE_SECRET');
    await page.click('[aria-label="mfa on"]');
    await page.fill('[aria-label="mfa issuer"]', 'Acme');
    await page.click('[data-test=save-accounts]');
    await page.waitForSelector('.accounts .ok:has-text("Saved")');
    const saved = JSON.parse(await readFile(configFile(), 'utf8')) as { auth: Record<string, unknown> };
    expect(saved.auth).toMatchObject({
      mfa: { issuer: 'Acme' },
      oauth: { redirects: ['https://app.example.com/after-login'], providers: { google: { clientId: 'cid.apps.googleusercontent.com', clientSecret: '${env:DASH_BROWSER_GOOGLE_SECRET}' } } },
      // The hand-written value stays in the file, never shown.
      mail: { smtp: { password: HAND_WRITTEN_SECRET } },
    });
    expect(await (await fetch(`${app.url}/users/oauth`)).json()).toEqual({ providers: ['google'] });
    expect(await page.content()).not.toContain(HAND_WRITTEN_SECRET);
    expect(await page.content()).not.toContain('google-secret-from-env');
    await mkdir(SHOTS, { recursive: true });
    await page.locator('[data-test=accounts]').screenshot({ path: join(SHOTS, '18-accounts.png') });

    // A code length the server refuses: its message, and the file as it was.
    const before = await readFile(configFile(), 'utf8');
    await page.click('[aria-label="codes on"]');
    await page.fill('[aria-label="codes length"]', '3');
    await page.click('[data-test=save-accounts]');
    await page.waitForSelector('[data-test=accounts-error]');
    expect(await page.textContent('[data-test=accounts-error]')).toContain('auth.codes.length must be a whole number from 6 to 10');
    expect(await readFile(configFile(), 'utf8')).toBe(before);
    await page.click('.accounts button:has-text("Revert")');
  });

  it('writes a mail template part as a file of the collection\'s mail folder', async () => {
    await page.selectOption('[aria-label="template message"]', 'reset');
    await page.fill('[aria-label="template language"]', 'de');
    await page.press('[aria-label="template language"]', 'Tab');
    await page.waitForSelector('[data-test=templates] :text("mail/de/reset.txt")');
    await page.fill('[aria-label="template text"]', 'Hallo {{username}}: {{link}}');
    await page.click('[data-test=save-template]');
    await page.waitForSelector('[data-test=templates] .ok:has-text("Saved")');
    expect(await readFile(join(dir, 'resources/users/mail/de/reset.txt'), 'utf8')).toBe('Hallo {{username}}: {{link}}');
  });
});
