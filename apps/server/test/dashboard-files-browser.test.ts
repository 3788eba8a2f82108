import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable } from './browser-helpers.js';
import { openAppInChromium } from './helpers/appInChromium.js';
import type { AppInChromium } from './helpers/appInChromium.js';

// Issue 43: file properties in the dashboard's data grid, in chromium: an image shows a preview,
// a file is uploaded (replacing a one-file property's, added to a list), removed, and saved as a
// download; all as root through the app's file paths.

const run = chromiumAvailable('dashboard file properties browser tests');
const ROOT = { 'svc-ssh-key': 'development' };
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

type FileInfo = { id: string; name: string; url: string };

describe.skipIf(!run)('dashboard file properties in the browser', () => {
  let app: RunningApp;
  let page: Page;
  let session: AppInChromium | undefined;
  let id: string;

  const get = async (): Promise<{ photo?: FileInfo | null; docs?: FileInfo[] }> => (await (await fetch(`${app.url}/posts/${id}`, { headers: ROOT })).json()) as { photo?: FileInfo | null; docs?: FileInfo[] };
  const cell = (col: string) => `tr[data-id="${id}"] td[data-col="${col}"]`;

  beforeAll(async () => {
    const files = { 'resources/posts/config.json': { type: 'Collection', properties: { title: { type: 'string' }, photo: { type: 'file', types: ['image/*'] }, docs: { type: 'file', many: true } } } };
    session = await openAppInChromium(files, { prefix: 'svc-dashboard-files-', viewport: { width: 1360, height: 900 }, timeout: 10_000, context: { acceptDownloads: true } });
    ({ app, page } = session);
    id = ((await (await fetch(`${app.url}/posts`, { method: 'POST', headers: { ...ROOT, 'content-type': 'application/json' }, body: '{"title":"hello"}' })).json()) as { id: string }).id;
  });
  afterAll(async () => {
    await session?.close();
  });

  it('uploads, previews, downloads and removes files; a refused type is shown on its cell', async () => {
    await page.goto(`${app.url}/dashboard/#/r/posts/data`);
    await page.setInputFiles(`${cell('photo')} [aria-label="upload photo"]`, { name: 'dot.png', mimeType: 'image/png', buffer: PNG });
    await page.waitForSelector(`${cell('photo')} [data-test=file-preview]`);
    const photo = (await get()).photo as FileInfo;
    expect(photo.name).toBe('dot.png');
    // A text is not an image: the server's 415 on the cell, the photo kept.
    await page.setInputFiles(`${cell('photo')} [aria-label="upload photo"]`, { name: 'x.png', mimeType: 'image/png', buffer: Buffer.from('<svg onload="alert(1)"></svg>') });
    await page.waitForSelector(`${cell('photo')} .cell-error`);
    expect((await get()).photo?.id).toBe(photo.id);
    await page.setInputFiles(`${cell('docs')} [aria-label="upload docs"]`, [
      { name: 'a.txt', mimeType: 'text/plain', buffer: Buffer.from('alpha') },
      { name: 'b.html', mimeType: 'text/html', buffer: Buffer.from('<html><script>alert(1)</script></html>') },
    ]);
    await page.waitForSelector(`${cell('docs')} [data-test=file]:has-text("b.html")`);
    expect(((await get()).docs ?? []).map((f) => f.name)).toEqual(['a.txt', 'b.html']);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click(`${cell('docs')} a:has-text("b.html")`)]);
    expect(download.suggestedFilename()).toBe('b.html');
    expect(page.url()).toContain('/dashboard/');
    await page.click(`${cell('docs')} [aria-label="remove a.txt"]`);
    await page.waitForSelector(`${cell('docs')}:not(:has([data-test=file]:has-text("a.txt")))`);
    expect(await page.locator(`${cell('docs')} [data-test=file]`).count()).toBe(1);
    expect(((await get()).docs ?? []).map((f) => f.name)).toEqual(['b.html']);
    await page.click(`${cell('photo')} [aria-label="remove dot.png"]`);
    await page.waitForSelector(`${cell('photo')}:not(:has([data-test=file]))`);
    expect((await get()).photo).toBeNull();
  });
});
