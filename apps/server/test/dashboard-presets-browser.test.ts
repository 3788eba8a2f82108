import { generateKeyPairSync } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable } from './browser-helpers.js';
import { openAppInChromium } from './helpers/appInChromium.js';
import type { AppInChromium } from './helpers/appInChromium.js';

// Issue 43: the dashboard's Accounts tab with the sign-in presets: each provider's callback URL to
// register and where its console is, Apple's key settings (the key only as an environment
// variable) and Microsoft's tenant, saved through the config path.

const SHOTS = fileURLToPath(new URL('../test-output/dashboard/', import.meta.url));
const APPLE_KEY = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

describe.runIf(chromiumAvailable('dashboard sign-in presets'))('dashboard Accounts tab: sign-in presets', () => {
  let dir: string;
  let app: RunningApp;
  let page: Page;
  let session: AppInChromium | undefined;
  const configFile = () => join(dir, 'resources/users/config.json');

  beforeAll(async () => {
    process.env.DASH_PRESETS_SECRET = 'client-secret-from-env';
    process.env.DASH_PRESETS_APPLE_KEY = APPLE_KEY;
    const files: Record<string, object> = {
      'resources/users/config.json': {
        type: 'UserCollection',
        properties: { email: { type: 'string', unique: true } },
        auth: { oauth: { redirects: ['https://app.example.com/done'], providers: { github: { clientId: 'gh', clientSecret: '${env:DASH_PRESETS_SECRET}' } } } },
      },
    };
    session = await openAppInChromium(files, { prefix: 'svc-dash-presets-', viewport: { width: 1360, height: 1100 }, timeout: 20_000 });
    ({ dir, app, page } = session);
    await page.goto(`${app.url}/dashboard/#/r/users/accounts`);
    await page.waitForSelector('[data-test=accounts] [data-test=providers]');
  }, 60_000);
  afterAll(async () => {
    delete process.env.DASH_PRESETS_SECRET;
    delete process.env.DASH_PRESETS_APPLE_KEY;
    await session?.close();
  });

  it('lists every preset, shows each provider\'s callback URL, and saves Apple\'s key as a reference and Microsoft\'s tenant', async () => {
    const offered = await page.locator('[aria-label="new provider preset"] option').allTextContents();
    expect(offered).toEqual(expect.arrayContaining(['google', 'apple', 'microsoft', 'github', 'gitlab', 'bitbucket', 'discord', 'facebook', 'x', 'linkedin', 'slack', 'spotify', 'twitch', 'zoom']));
    expect(await page.textContent('[data-callback=github]')).toBe(`Callback URL to register: ${app.url}/users/oauth/github/callback at https://github.com/settings/developers`);

    for (const preset of ['apple', 'microsoft', 'x']) {
      await page.selectOption('[aria-label="new provider preset"]', preset);
      await page.click('[data-test=add-provider]');
      await page.fill(`[aria-label="${preset} clientId"]`, `${preset}-client`);
    }
    await page.fill('[aria-label="apple teamId"]', 'TEAM123456');
    await page.fill('[aria-label="apple keyId"]', 'KEY1234567');
    await page.fill('[aria-label="apple privateKey"]', 'DASH_PRESETS_APPLE_KEY');
    await page.fill('[aria-label="microsoft tenant"]', 'organizations');
    await page.fill('[aria-label="microsoft clientSecret"]', 'DASH_PRESETS_SECRET');
    await page.fill('[aria-label="x clientSecret"]', 'DASH_PRESETS_SECRET');
    expect(await page.textContent('[data-callback=x]')).toContain(`${app.url}/users/oauth/x/callback`);
    await mkdir(SHOTS, { recursive: true });
    await page.locator('[data-test=oauth]').screenshot({ path: join(SHOTS, '19-accounts-presets.png') });
    await page.click('[data-test=save-accounts]');
    await page.waitForSelector('.accounts .ok:has-text("Saved")');
    const saved = JSON.parse(await readFile(configFile(), 'utf8')) as { auth: { oauth: { providers: Record<string, unknown> } } };
    expect(saved.auth.oauth.providers).toEqual({
      github: { clientId: 'gh', clientSecret: '${env:DASH_PRESETS_SECRET}' },
      apple: { clientId: 'apple-client', teamId: 'TEAM123456', keyId: 'KEY1234567', privateKey: '${env:DASH_PRESETS_APPLE_KEY}' },
      microsoft: { clientId: 'microsoft-client', clientSecret: '${env:DASH_PRESETS_SECRET}', tenant: 'organizations' },
      x: { clientId: 'x-client', clientSecret: '${env:DASH_PRESETS_SECRET}' },
    });
    expect(await (await fetch(`${app.url}/users/oauth`)).json()).toEqual({ providers: ['github', 'apple', 'microsoft', 'x'] });
    expect(await page.content()).not.toContain(APPLE_KEY.split('\n')[1] as string);
    // X's start goes to X with PKCE: the saved preset serves at once.
    const location = new URL((await fetch(`${app.url}/users/oauth/x`, { redirect: 'manual' })).headers.get('location') as string);
    expect(`${location.origin}${location.pathname}`).toBe('https://x.com/i/oauth2/authorize');
  });
});
