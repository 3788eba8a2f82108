import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { mkdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { webhookType } from '@svc/type-webhook';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable, until } from './browser-helpers.js';
import { openAppInChromium } from './helpers/appInChromium.js';
import type { AppInChromium } from './helpers/appInChromium.js';

// Issue 43: a Webhook's Deliveries tab in a real browser: the deliveries with their status, the
// receiver's code and answer (shown as text: a receiver's answer is not trusted), a dead letter
// sent again with its Retry button.

const run = chromiumAvailable('dashboard Deliveries page browser tests');
const SHOTS = fileURLToPath(new URL('../test-output/dashboard/', import.meta.url));

describe.skipIf(!run)('a Webhook\'s Deliveries tab in the browser', () => {
  let app: RunningApp;
  let page: Page;
  let session: AppInChromium | undefined;
  let receiver: Server;
  let failing = true;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (failing) res.writeHead(500, { 'content-type': 'text/html' }).end('<img src=x onerror=window.__pwnedHook=1>broken');
        else res.writeHead(200).end('thanks');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as AddressInfo).port;
    const files: Record<string, object> = {
      'app.json': { outbound: { allow: [`127.0.0.1:${port}`] } },
      'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
      'resources/hooks/config.json': { type: 'Webhook', collection: 'todos', url: `http://127.0.0.1:${port}/hook`, secret: 'browser-test-secret-0123456789', maxAttempts: 1 },
    };
    session = await openAppInChromium(files, { prefix: 'svc-dash-deliveries-', viewport: { width: 1360, height: 860 }, timeout: 10_000, start: { resourceTypes: [webhookType] } });
    ({ app, page } = session);
  });
  afterAll(async () => {
    await session?.close();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it('lists a dead letter with the receiver\'s code and answer as text; Retry sends it again', async () => {
    const created = (await (await fetch(`${app.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'one' }) })).json()) as { id: string };
    await page.goto(`${app.url}/dashboard/#/r/hooks`);
    // The type's own page is its first tab.
    await page.waitForSelector('[data-test=deliveries-page]');
    const row = page.locator(`[data-test=deliveries] tr[data-status=dead]`);
    await row.waitFor();
    expect(await row.textContent()).toContain(created.id);
    expect(await row.textContent()).toContain('500');
    expect(await row.textContent()).toContain('<img src=x onerror=window.__pwnedHook=1>broken');
    expect(await page.locator('[data-test=deliveries] img').count()).toBe(0);
    await mkdir(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, '20-webhook-deliveries-dead.png') });
    failing = false;
    await row.locator('[data-test=retry]').click();
    await page.waitForSelector('[data-test=deliveries] tr[data-status=delivered]');
    await until(async () => (await page.locator('[data-test=deliveries] tr[data-status=delivered]').textContent())?.includes('thanks') === true);
    await page.screenshot({ path: join(SHOTS, '21-webhook-deliveries-retried.png') });
    expect(await page.evaluate(() => (globalThis as unknown as Record<string, unknown>).__pwnedHook)).toBeUndefined();
  });
});
