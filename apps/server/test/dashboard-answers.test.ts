import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { silentLogger } from '@svc/core';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable, launchChromium } from './browser-helpers.js';

// Issue 23, item 9: what the app's collections answer shows in the grid as answered. A script's own
// 401 (a login guard) made the dashboard forget the root key and ask for it again; a value a script
// sets without a property declaring it was not shown at all.
const run = chromiumAvailable('dashboard: what the collection answered');
const KEY = 'beef'.repeat(16);

describe.skipIf(!run)('dashboard in the browser: the grid shows what the collection answered', () => {
  let browser: Browser;
  let app: RunningApp;
  let dir: string;
  let id: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-dashboard-401-'));
    const files: Record<string, string> = {
      'resources/private/config.json': JSON.stringify({ type: 'Collection', properties: { note: { type: 'string' } } }),
      'resources/private/put.js': "cancelUnless(me, 'log in to edit notes', 401);\n",
      'resources/open/config.json': JSON.stringify({ type: 'Collection', properties: { note: { type: 'string' } } }),
      'resources/open/get.js': "this.shout = (this.note || '').toUpperCase() + '!';\n",
      '.svc/keys.json': JSON.stringify({ [KEY]: true }),
    };
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), text, { mode: 0o600 });
    }
    app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', env: 'production', logger: silentLogger });
    const made = await fetch(`${app.url}/private`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': KEY }, body: JSON.stringify({ note: 'secret' }) });
    id = ((await made.json()) as { id: string }).id;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('shows the collection\'s 401 on the row it refused and keeps the key (no key prompt)', async () => {
    const context = await browser.newContext({ viewport: { width: 1360, height: 860 } });
    const page = await context.newPage();
    await page.goto(`${app.url}/dashboard/`);
    await page.waitForSelector('[data-test=key-prompt]');
    await page.fill('[aria-label="root key"]', KEY);
    await page.click('button:has-text("Open the dashboard")');
    await page.click('.res:has-text("/private")');
    // An edit the collection's On Put refuses with 401 (a login guard, root has no user).
    const cell = `tr[data-id="${id}"] td[data-col=note]`;
    await page.dblclick(cell);
    await page.fill(`${cell} input`, 'changed');
    await page.press(`${cell} input`, 'Enter');
    await page.waitForSelector(`${cell} .cell-error:has-text("log in to edit notes")`);
    expect(await page.locator('[data-test=key-prompt]').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { sessionStorage: { length: number } }).sessionStorage.length)).toBe(1);
    // The rest of the dashboard still works with the same key.
    await page.click('.res:has-text("/open")');
    await page.waitForSelector('text=No objects yet. Add one, or POST to /open.');
    expect(await page.locator('[data-test=key-prompt]').count()).toBe(0);
    await context.close();
  });

  it('shows a value a script sets without a declared property, in a column of its own (read only)', async () => {
    const made = await fetch(`${app.url}/open`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': KEY }, body: JSON.stringify({ note: 'hello' }) });
    const row = ((await made.json()) as { id: string }).id;
    const context = await browser.newContext({ viewport: { width: 1360, height: 860 } });
    const page = await context.newPage();
    await page.goto(`${app.url}/dashboard/`);
    await page.fill('[aria-label="root key"]', KEY);
    await page.click('button:has-text("Open the dashboard")');
    await page.click('.res:has-text("/open")');
    await page.waitForSelector(`tr[data-id="${row}"] td[data-col=shout]:has-text("HELLO!")`);
    expect(await page.locator('th:has-text("shout")').count()).toBe(1);
    // Not editable: a double-click opens no editor.
    await page.dblclick(`tr[data-id="${row}"] td[data-col=shout]`);
    expect(await page.locator(`tr[data-id="${row}"] td[data-col=shout] input`).count()).toBe(0);
    await context.close();
  });
});
