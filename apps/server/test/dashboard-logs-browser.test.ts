import { mkdir } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable, until } from './browser-helpers.js';
import { openAppInChromium } from './helpers/appInChromium.js';
import type { AppInChromium } from './helpers/appInChromium.js';

// Issue 23 (4): the dashboard's Logs page in a real browser: entries shown as text (paths and
// messages come from clients, so markup in them stays inert), filters, live entries.

const run = chromiumAvailable('dashboard Logs page browser tests');
const SHOTS = fileURLToPath(new URL('../test-output/dashboard/', import.meta.url));

/** A request with the path exactly as given (fetch would percent-encode `<` and `>`). */
function rawGet(url: string, path: string): Promise<{ status: number; id: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/`, { path, method: 'GET' }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, id: String(res.headers['x-request-id']) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe.skipIf(!run)('dashboard Logs page in the browser', () => {
  let app: RunningApp;
  let page: Page;
  let session: AppInChromium | undefined;

  beforeAll(async () => {
    const files: Record<string, object | string> = {
      'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
      // A script's console line is a server log line: markup in it must stay text too.
      'resources/todos/post.js': 'console.log("<img src=x onerror=window.__pwnedLog=1>" + this.title);',
    };
    session = await openAppInChromium(files, { prefix: 'svc-dash-logs-browser-', viewport: { width: 1360, height: 860 }, timeout: 10_000 });
    ({ app, page } = session);
  });
  afterAll(async () => {
    await session?.close();
  });

  it('shows a hostile path and message as text: no element is made of them, no script runs', async () => {
    const hostile = await rawGet(app.url, '/<script>window.__pwned=1</script>');
    const img = await rawGet(app.url, '/x<img/src=x/onerror=window.__pwnedImg=1>');
    expect(hostile.status).toBe(404);
    await fetch(`${app.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'one' }) });

    await page.goto(`${app.url}/dashboard/#/logs`);
    await page.waitForSelector('[data-test=logs-table]');
    await page.waitForSelector(`td:has-text("${hostile.id}")`);
    await page.waitForSelector(`td:has-text("${img.id}")`);
    await page.waitForSelector('td:has-text("onerror=window.__pwnedLog=1>one")');
    const table = page.locator('[data-test=logs-table]');
    expect(await table.locator('script').count()).toBe(0);
    expect(await table.locator('img').count()).toBe(0);
    expect(await table.textContent()).toContain('GET /<script>window.__pwned=1</script>');
    expect(await table.textContent()).toContain('GET /x<img/src=x/onerror=window.__pwnedImg=1>');
    const ran = await page.evaluate(() => {
      const g = globalThis as unknown as Record<string, unknown>;
      return [g.__pwned, g.__pwnedImg, g.__pwnedLog];
    });
    expect(ran).toEqual([undefined, undefined, undefined]);
    // The stream replays recent server lines when it connects: shown once all the same. A request
    // seen live comes after the replay on the stream, so by then the replay was handled.
    await page.waitForSelector('.live.on');
    const later = await fetch(`${app.url}/todos`);
    await page.waitForSelector(`td:has-text("${later.headers.get('x-request-id') as string}")`);
    expect(await table.locator('td:has-text("onerror=window.__pwnedLog=1>one")').count()).toBe(1);
    await mkdir(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, '12-logs.png') });
  });

  it('filters by status on the server, and follows new requests live through the same filter', async () => {
    await page.fill('[aria-label=status]', '404');
    await page.click('[data-test=logs-apply]');
    await until(async () => (await page.locator('[data-test=logs-table] td:has-text("/todos")').count()) === 0);
    const rows = page.locator('[data-test=logs-table] tbody tr');
    expect(await rows.count()).toBeGreaterThan(0);
    for (const status of await page.locator('[data-test=logs-table] tbody tr td:nth-child(3)').allTextContents()) expect(status).toBe('404');

    // Live: a new 404 appears without a reload; a 200 does not pass the filter.
    const ok = await fetch(`${app.url}/todos`);
    const missing = await fetch(`${app.url}/live-missing`);
    await page.waitForSelector(`td:has-text("${missing.headers.get('x-request-id') as string}")`);
    expect(await page.locator(`td:has-text("${ok.headers.get('x-request-id') as string}")`).count()).toBe(0);
  });
});
