import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import jsqrModule from 'jsqr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable } from './browser-helpers.js';
import { openAppInChromium } from './helpers/appInChromium.js';
import type { AppInChromium } from './helpers/appInChromium.js';
import { totpNow } from './helpers/totp.js';

// The dashboard's two-factor pieces in a browser: the Accounts tab's sample QR (rendered by
// Chromium, read back by a real decoder) and the data grid's "Reset two-factor" action.

const run = chromiumAvailable('dashboard two-factor browser tests');
const SHOTS = fileURLToPath(new URL('../test-output/dashboard/', import.meta.url));
// jsqr is CommonJS whose types say `export default`: its module.exports is the function and has .default too.
const jsQR = jsqrModule.default;

describe.skipIf(!run)('dashboard two-factor in the browser', () => {
  let app: RunningApp;
  let page: Page;
  let session: AppInChromium | undefined;

  beforeAll(async () => {
    const files: Record<string, object> = {
      'app.json': { passwordCost: 4 },
      'resources/users/config.json': { type: 'UserCollection', properties: {}, auth: { mfa: { issuer: 'Acme Co' } } },
    };
    session = await openAppInChromium(files, { prefix: 'svc-dashboard-mfa-', viewport: { width: 1360, height: 1000 }, timeout: 10_000 });
    ({ app, page } = session);
  });
  afterAll(async () => {
    await session?.close();
  });

  it('the Accounts tab shows a sample QR of the issuer that a decoder reads as the otpauth URI', async () => {
    await page.goto(`${app.url}/dashboard/#/r/users/accounts`);
    await page.waitForSelector('[data-test=mfa-qr] svg');
    // Chromium draws the SVG (as an image) on a canvas; the decoder reads its pixels.
    // (A string: the server's tsconfig has no DOM types.)
    const pixels = (await page.evaluate(`(async () => {
      const svg = document.querySelector('[data-test=mfa-qr] svg');
      const image = new Image();
      image.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(svg.outerHTML);
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext('2d');
      context.drawImage(image, 0, 0);
      return { width: canvas.width, height: canvas.height, data: Array.from(context.getImageData(0, 0, canvas.width, canvas.height).data) };
    })()`)) as { width: number; height: number; data: number[] };
    const found = jsQR(Uint8ClampedArray.from(pixels.data), pixels.width, pixels.height);
    expect(found?.data).toMatch(/^otpauth:\/\/totp\/Acme%20Co:ada%40example\.com\?secret=[A-Z2-7]+&issuer=Acme%20Co&algorithm=SHA1&digits=6&period=30$/);
    await mkdir(SHOTS, { recursive: true });
    await page.locator('[data-test=mfa-qr]').screenshot({ path: join(SHOTS, '19-accounts-mfa-qr.png') });
  });

  it('"Reset two-factor" on a user row turns MFA off and ends the user\'s session', async () => {
    const post = (path: string, body: unknown, cookie = '') =>
      fetch(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) }, body: JSON.stringify(body) });
    const created = (await (await post('/users', { username: 'ada', password: 'pw' })).json()) as { id: string };
    const login = await post('/users/login', { username: 'ada', password: 'pw' });
    const cookie = (login.headers.getSetCookie().find((c) => c.startsWith('sid=')) ?? '').split(';')[0] ?? '';
    const { secret } = (await (await post('/users/mfa/enroll', {}, cookie)).json()) as { secret: string };
    expect((await post('/users/mfa/confirm', { code: totpNow(secret) }, cookie)).status).toBe(200);

    await page.goto(`${app.url}/dashboard/#/r/users/data`);
    const cell = page.locator(`tr[data-id="${created.id}"] [data-col=sign-in]`);
    await expect.poll(() => cell.textContent()).toContain('2FA');
    page.once('dialog', (dialog) => void dialog.accept());
    await cell.locator('[data-test=reset-mfa]').click();
    await expect.poll(() => cell.textContent()).not.toContain('2FA');
    expect(await cell.locator('[data-test=reset-mfa]').count()).toBe(0);
    expect((await fetch(`${app.url}/users/me`, { headers: { cookie } })).status).toBe(204);
    expect(await (await post('/users/login', { username: 'ada', password: 'pw' })).json()).toMatchObject({ uid: created.id });
  });
});
