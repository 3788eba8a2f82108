import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { chromiumAvailable, launchChromium } from './browser-helpers.js';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { startOp } from './helpers/oidc.js';
import type { TestOp } from './helpers/oidc.js';

// Issue 27: provider login in a real browser (chromium): /svc.js's loginWithProvider in a popup and
// as a redirect, against a real OpenID provider (oidc-provider). The app's pages are on their own
// origin (a static server), the API on another, as a single-page app and its backend often are.

const SECRET = 'browser-op-secret-0123456789abcdef';

describe.runIf(chromiumAvailable('browser OIDC login'))('provider login in chromium through /svc.js', () => {
  let op: TestOp;
  let h: AppHandle;
  let pages: Server;
  let site: string;
  let browser: Browser;

  beforeAll(async () => {
    op = await startOp();
    op.accounts.set('pat', { sub: 'pat', email: 'pat@example.com', email_verified: true, name: 'Pat' });
    pages = createServer((req, res) => {
      const script = `<script src="${h.url}/svc.js"></script>`;
      const body = req.url?.startsWith('/done.html')
        ? `<!doctype html><title>done</title>${script}<script>try { window.answer = svc.users.providerLoginResult(); } catch (e) { window.answer = e; }</script>`
        : `<!doctype html><title>app</title>${script}<button id="popup">popup</button><button id="redirect">redirect</button>
           <script>
             const done = location.origin + '/done.html';
             document.getElementById('popup').onclick = () => svc.users.loginWithProvider('op', { redirect: done, mode: 'popup' }).then((a) => { window.answer = a; }, (e) => { window.answer = e; });
             document.getElementById('redirect').onclick = () => svc.users.loginWithProvider('op', { redirect: done });
           </script>`;
      res.writeHead(200, { 'content-type': 'text/html' }).end(body);
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    // Another origin than the API's (another port), on the same site, so the sid cookie goes along.
    site = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
    process.env.SVC_TEST_BROWSER_OIDC_SECRET = SECRET;
    h = await runApp({
      'resources/users/config.json': {
        type: 'UserCollection',
        properties: { email: { type: 'string' }, displayName: { type: 'string' } },
        auth: { oauth: { redirects: [`${site}/done.html`], providers: { op: { issuer: op.issuer, clientId: 'web', clientSecret: '${env:SVC_TEST_BROWSER_OIDC_SECRET}', map: { displayName: 'name' } } } } },
      },
    });
    op.setClient({ clientId: 'web', clientSecret: SECRET, redirectUris: [`${h.url}/users/oauth/op/callback`] });
    op.next = 'pat';
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await op?.close();
    pages?.closeAllConnections();
    await new Promise<void>((resolve) => (pages ? pages.close(() => resolve()) : resolve()));
  });

  it('popup: the promise answers the session and the page is logged in', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${site}/index.html`);
      const popup = context.waitForEvent('page');
      await page.click('#popup');
      await popup;
      await page.waitForFunction(() => (globalThis as { answer?: unknown }).answer !== undefined, undefined, { timeout: 20_000 });
      const answer = (await page.evaluate(() => (globalThis as { answer?: unknown }).answer)) as Record<string, unknown>;
      expect(answer).toEqual({ id: expect.any(String), uid: expect.any(String), path: '/users' });
      const me = await page.evaluate(() => (globalThis as unknown as { svc: { users: { me(): Promise<unknown> } } }).svc.users.me());
      expect(me).toMatchObject({ id: answer.uid, username: 'pat@example.com', displayName: 'Pat' });
      expect(context.pages()).toHaveLength(1);
      // The dashboard's grid shows how each user signs in.
      const dashboard = await context.newPage();
      await dashboard.goto(`${h.url}/dashboard/`);
      await dashboard.click('.res:has-text("/users")');
      await dashboard.waitForSelector(`tr[data-id="${answer.uid as string}"] td[data-col=sign-in]:has-text("op")`);
      expect(await dashboard.locator(`tr[data-id="${answer.uid as string}"] td[data-col=sign-in]`).textContent()).toBe('op');
      await dashboard.screenshot({ path: fileURLToPath(new URL('../test-output/accounts/dashboard-sign-in.png', import.meta.url)) });
      await dashboard.click('.tab:has-text("API")');
      await dashboard.waitForSelector('[data-test=api-page] :text("/users/oauth/<provider>/callback")');
    } finally {
      await context.close();
    }
  });

  it('redirect: the page comes back with the answer, which providerLoginResult reads and removes', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${site}/index.html`);
      await Promise.all([page.waitForURL(`${site}/done.html**`, { timeout: 20_000 }), page.click('#redirect')]);
      await page.waitForFunction(() => (globalThis as { answer?: unknown }).answer !== undefined);
      const answer = (await page.evaluate(() => (globalThis as { answer?: unknown }).answer)) as Record<string, unknown>;
      expect(answer).toMatchObject({ uid: expect.any(String), path: '/users' });
      expect(page.url()).toBe(`${site}/done.html`);
      const me = await page.evaluate(() => (globalThis as unknown as { svc: { users: { me(): Promise<unknown> } } }).svc.users.me());
      expect(me).toMatchObject({ username: 'pat@example.com' });
    } finally {
      await context.close();
    }
  });
});
