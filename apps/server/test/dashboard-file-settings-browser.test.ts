import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable } from './browser-helpers.js';
import { openAppInChromium } from './helpers/appInChromium.js';
import type { AppInChromium } from './helpers/appInChromium.js';

// Issue 43: a file property's settings in the dashboard's property editor, in chromium: one file
// or many, the largest file, how many a list holds, the types allowed and the thumbnail sizes are
// set, saved to config.json, and enforced by the server on uploads that never went near the
// dashboard; a setting the server refuses is not saved.

const run = chromiumAvailable('dashboard file settings browser tests');
const ROOT = { 'svc-ssh-key': 'development' };
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

describe.skipIf(!run)('dashboard file property settings in the browser', () => {
  let app: RunningApp;
  let page: Page;
  let session: AppInChromium | undefined;
  let id: string;

  const config = async (): Promise<Record<string, Record<string, unknown>>> =>
    (JSON.parse(await readFile(join(session?.dir as string, 'resources', 'posts', 'config.json'), 'utf8')) as { properties: Record<string, Record<string, unknown>> }).properties;
  const upload = (path: string, body: Buffer, method = 'PUT', type = 'application/octet-stream'): Promise<Response> =>
    fetch(`${app.url}/posts/${id}/${path}`, { method, body, headers: { ...ROOT, 'content-type': type } });
  /** Saves, and waits until config.json holds what `check` expects. */
  const save = async (check: (saved: Record<string, Record<string, unknown>>) => boolean): Promise<void> => {
    await page.click('[data-test=save-properties]');
    await expect.poll(async () => check(await config()), { timeout: 20_000 }).toBe(true);
    await page.waitForSelector('[data-test=saved-note]');
  };

  beforeAll(async () => {
    const files = { 'resources/posts/config.json': { type: 'Collection', properties: { title: { type: 'string' }, photo: { type: 'file' }, docs: { type: 'string' } } } };
    session = await openAppInChromium(files, { prefix: 'svc-dashboard-file-settings-', viewport: { width: 1360, height: 900 }, timeout: 10_000 });
    ({ app, page } = session);
    id = ((await (await fetch(`${app.url}/posts`, { method: 'POST', headers: { ...ROOT, 'content-type': 'application/json' }, body: '{"title":"hello"}' })).json()) as { id: string }).id;
  });
  afterAll(async () => {
    await session?.close();
  });

  it('sets many, size, count, types and thumbnails; the server enforces them whatever sends the upload', async () => {
    await page.goto(`${app.url}/dashboard/#/r/posts/properties`);
    await page.waitForSelector('[data-test=file-photo]');
    expect(await page.isChecked('[aria-label="photo file many"]')).toBe(false);
    expect(await page.locator('[aria-label="photo file max files"]').count()).toBe(0);

    await page.fill('[aria-label="photo file max size"]', '0.001');
    await page.fill('[aria-label="photo file types"]', 'image/*');
    await page.fill('[aria-label="photo file thumbs"]', '64x64, 200x0');
    await page.selectOption('[aria-label="docs type"]', 'file');
    await page.check('[aria-label="docs file many"]');
    await page.fill('[aria-label="docs file max files"]', '2');
    await page.press('[aria-label="docs file max files"]', 'Tab');
    await save((c) => c.docs?.type === 'file');
    const saved = await config();
    expect(saved.photo).toEqual({ type: 'file', maxSize: 1049, types: ['image/*'], thumbs: ['64x64', '200x0'] });
    expect(saved.docs).toEqual({ type: 'file', many: true, maxFiles: 2 });

    // Enforced by the server on requests the dashboard never saw.
    expect((await upload('photo', Buffer.concat([PNG, Buffer.alloc(2000)]), 'PUT', 'image/png')).status).toBe(413);
    expect((await upload('photo', Buffer.from('<svg onload="alert(1)"></svg>'), 'PUT', 'image/png')).status).toBe(415);
    expect((await upload('photo?name=dot.png', PNG, 'PUT', 'image/png')).status).toBe(200);
    expect((await fetch(`${app.url}/posts/${id}/photo?thumb=300x300`, { headers: ROOT })).status).toBe(400);
    expect((await upload('docs?name=a.html', Buffer.from('<html><script>alert(1)</script></html>'), 'POST', 'text/html')).status).toBe(200);
    expect((await upload('docs?name=b.txt', Buffer.from('two'), 'POST')).status).toBe(200);
    expect((await upload('docs?name=c.txt', Buffer.from('three'), 'POST')).status).toBe(400);
    const post = (await (await fetch(`${app.url}/posts/${id}`, { headers: ROOT })).json()) as { docs: { name: string; url: string }[] };
    expect(post.docs.map((d) => d.name)).toEqual(['a.html', 'b.txt']);
    // Never served inline with the type its uploader claimed.
    const page1 = await fetch(app.url + (post.docs[0] as { url: string }).url, { headers: ROOT });
    expect(page1.headers.get('content-type')).toBe('application/octet-stream');
    expect(page1.headers.get('content-disposition')).toMatch(/^attachment/);
  });

  it('a malformed setting is shown and not saved; one the server refuses is answered and config.json kept', async () => {
    await page.goto(`${app.url}/dashboard/#/r/posts/properties`);
    await page.waitForSelector('[data-test=file-docs]');
    await page.fill('[aria-label="docs file types"]', 'html');
    await page.press('[aria-label="docs file types"]', 'Tab');
    await page.waitForSelector('[data-test=file-docs] [data-test=file-settings-error]');
    expect(await page.isDisabled('[data-test=save-properties]')).toBe(true);
    // Past the server's cap (1000): the form takes it, the server refuses the change and keeps the file.
    await page.fill('[aria-label="docs file max files"]', '5000');
    await page.press('[aria-label="docs file max files"]', 'Tab');
    await page.click('[data-test=save-properties]');
    await page.waitForSelector('.notice.error:has-text("maxFiles")');
    expect((await config()).docs).toEqual({ type: 'file', many: true, maxFiles: 2 });
    expect((await upload('docs?name=c.txt', Buffer.from('three'), 'POST')).status).toBe(400);
  });

  it('one file again drops the count; another type drops every file setting', async () => {
    await page.goto(`${app.url}/dashboard/#/r/posts/properties`);
    await page.waitForSelector('[data-test=file-docs]');
    await page.uncheck('[aria-label="docs file many"]');
    expect(await page.locator('[aria-label="docs file max files"]').count()).toBe(0);
    await page.selectOption('[aria-label="photo type"]', 'string');
    expect(await page.locator('[data-test=file-photo]').count()).toBe(0);
    await save((c) => c.photo?.type === 'string');
    const saved = await config();
    expect(saved.docs).toEqual({ type: 'file' });
    expect(saved.photo).toEqual({ type: 'string' });
  });
});
