import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { chromiumAvailable, launchChromium } from './browser-helpers.js';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { PRESET_NAMES, STAND_IN_SECRET, startStandIns } from './helpers/standIns.js';
import type { PresetName, StandIns } from './helpers/standIns.js';

// Issue 43: each sign-in preset against its stand-in in chromium, through /svc.js's
// loginWithProvider (redirect mode): the app's page, svc and the stand-ins on three origins, the
// stand-ins on another site (localhost) than svc (127.0.0.1), so that Apple's form_post is a
// cross-site POST that carries svc's binding cookie only because it is SameSite=None.

/** The provider's name in config.json (`corp`: any OpenID Connect issuer). */
const providerOf = (preset: PresetName) => (preset === 'oidc' ? 'corp' : preset);
/** Providers that vouch for no address: the account has none. */
const UNVOUCHED = new Set<PresetName>(['facebook', 'spotify', 'x']);

describe.runIf(chromiumAvailable('browser sign-in presets'))('each sign-in preset against its stand-in in chromium', () => {
  let stand: StandIns;
  let h: AppHandle;
  let pages: Server;
  let site: string;
  let browser: Browser;

  beforeAll(async () => {
    stand = await startStandIns({ secretEnv: 'SVC_TEST_BROWSER_STANDIN_SECRET', appleKeyEnv: 'SVC_TEST_BROWSER_STANDIN_APPLE_KEY', browserHost: 'localhost' });
    process.env.SVC_TEST_BROWSER_STANDIN_SECRET = STAND_IN_SECRET;
    process.env.SVC_TEST_BROWSER_STANDIN_APPLE_KEY = stand.apple.privateKeyPem;
    for (const preset of PRESET_NAMES) {
      stand.add(preset, { sub: `${preset}-browser`, email: `${preset}-browser@example.com`, verified: true, name: `Pat ${preset}`, tid: preset === 'microsoft' ? '44444444-4444-4444-8444-444444444444' : undefined });
      stand.next[preset] = `${preset}-browser`;
    }
    pages = createServer((req, res) => {
      const script = `<script src="${h.url}/svc.js"></script>`;
      const body = req.url?.startsWith('/done.html')
        ? `<!doctype html><title>done</title>${script}<script>try { window.answer = svc.users.providerLoginResult(); } catch (e) { window.answer = { error: String(e && e.message) }; }</script>`
        : `<!doctype html><title>app</title>${script}<script>window.signIn = (p) => svc.users.loginWithProvider(p, { redirect: location.origin + '/done.html' });</script>`;
      res.writeHead(200, { 'content-type': 'text/html' }).end(body);
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    site = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
    const providers = Object.fromEntries(PRESET_NAMES.map((p) => [providerOf(p), stand.config(p, { map: { displayName: p === 'twitch' ? 'preferred_username' : 'name' } })]));
    h = await runApp({
      'resources/users/config.json': {
        type: 'UserCollection',
        properties: { email: { type: 'string', unique: true }, displayName: { type: 'string' } },
        auth: { oauth: { redirects: [`${site}/done.html`], providers } },
      },
    });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await stand?.close();
    pages?.closeAllConnections();
    await new Promise<void>((resolve) => (pages ? pages.close(() => resolve()) : resolve()));
  });

  it('every preset signs in by redirect and comes back to the app with its session', async () => {
    const outcomes: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    for (const preset of PRESET_NAMES) {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        await page.goto(`${site}/index.html`);
        await Promise.all([
          page.waitForURL(`${site}/done.html**`, { timeout: 20_000 }),
          page.evaluate((p) => {
            // Navigates away: started after evaluate has answered.
            setTimeout(() => (globalThis as unknown as { signIn(p: string): void }).signIn(p), 0);
          }, providerOf(preset)),
        ]);
        await page.waitForFunction(() => (globalThis as { answer?: unknown }).answer !== undefined);
        const answer = (await page.evaluate(() => (globalThis as { answer?: unknown }).answer)) as Record<string, unknown> | null;
        const me = (await page.evaluate(() => (globalThis as unknown as { svc: { users: { me(): Promise<unknown> } } }).svc.users.me())) as Record<string, unknown> | null;
        outcomes[preset] = { path: answer?.path, same: answer?.uid === me?.id, username: me?.username, email: me?.email ?? null, displayName: me?.displayName };
        const address = `${preset}-browser@example.com`;
        expected[preset] = {
          path: '/users',
          same: true,
          username: UNVOUCHED.has(preset) ? expect.stringMatching(new RegExp(`^${providerOf(preset)}:`)) : address,
          email: UNVOUCHED.has(preset) ? null : address,
          displayName: preset === 'twitch' ? `${preset}-browser` : `Pat ${preset}`,
        };
      } finally {
        await context.close();
      }
    }
    expect(outcomes).toEqual(expected);
    // Each went through its stand-in's authorization and token endpoints.
    for (const preset of PRESET_NAMES) expect(stand.seen.filter((s) => s.preset === preset).map((s) => s.step), preset).toEqual(expect.arrayContaining(['authorize', 'token']));
  }, 240_000);
});
