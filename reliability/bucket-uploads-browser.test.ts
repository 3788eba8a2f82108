import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startScriptCollector } from './scriptCollector.js';
import type { ScriptCollector } from './scriptCollector.js';
import { chromiumAvailable, launchChromium, until } from '../apps/server/test/browser-helpers.js';
import { startBucketApp } from '../packages/type-bucket/test/bucketApp.js';
import type { BucketApp } from '../packages/type-bucket/test/bucketApp.js';
import { startS3 } from '../packages/type-bucket/test/s3Server.js';
import type { TestS3 } from '../packages/type-bucket/test/s3Server.js';

// Issue 21.1, in a real browser: files an anonymous visitor uploads to a Bucket (an html page,
// an svg, an html page named evil.png and declared text/html) are opened by chromium at their
// URL. Their script would set document.title and call a collector on another port with the
// origin it runs on; none may run. A page of the app's own public/ folder with the same script
// shows that the collector does see a script that runs.

const run = chromiumAvailable('bucket uploads in chromium (issue 21.1)');

describe.skipIf(!run)('Bucket uploads opened in chromium run no script on the app origin', () => {
  let s3: TestS3;
  let app: BucketApp;
  let browser: Browser;
  let collector: ScriptCollector;

  beforeAll(async () => {
    collector = await startScriptCollector();
    s3 = await startS3();
    app = await startBucketApp(s3);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await s3?.close();
    await collector?.close();
  });

  const script = (tag: string): string => collector.script(tag);

  it('x.html, s.svg and evil.png (declared text/html): downloads or an image, never a page that runs', async () => {
    const uploads = [
      { name: 'x.html', type: 'text/html', body: `<!doctype html><html><body><script>${script('html')}</script></body></html>` },
      { name: 's.svg', type: 'image/svg+xml', body: `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script><![CDATA[${script('svg')}]]></script></svg>` },
      { name: 'evil.png', type: 'text/html', body: `<!doctype html><html><body><script>${script('png')}</script></body></html>` },
    ];
    for (const u of uploads) {
      const res = await fetch(`${app.url}/files/${u.name}`, { method: 'POST', body: u.body, headers: { 'content-type': u.type } });
      expect(res.status).toBe(200);
    }
    // The app's own page: public/ is read at each request, so it may be written after the start.
    await mkdir(join(app.dir, 'public'), { recursive: true });
    await writeFile(join(app.dir, 'public', 'control.html'), `<!doctype html><html><body><script>${script('control')}</script></body></html>`);

    const context = await browser.newContext({ acceptDownloads: true });
    try {
      const outcome: Record<string, { downloaded: boolean; title: string }> = {};
      for (const u of uploads) {
        const page = await context.newPage();
        const download = page.waitForEvent('download', { timeout: 15_000 }).then(
          () => true,
          () => false,
        );
        // A download aborts the navigation: goto rejects, and the download event tells why.
        const opened = await page.goto(`${app.url}/files/${u.name}`, { waitUntil: 'load' }).then(
          () => true,
          () => false,
        );
        const downloaded = !opened && (await download);
        outcome[u.name] = { downloaded, title: opened ? await page.title() : '' };
        await page.close();
      }
      // The control page runs the same script on the app's origin; its hit comes after any other.
      const control = await context.newPage();
      await control.goto(`${app.url}/control.html`, { waitUntil: 'load' });
      expect(await control.title()).toBe('pwned-control');
      await until(() => collector.hits.some((h) => h.tag === 'control'), 15_000);
      expect(collector.hits).toEqual([{ tag: 'control', origin: app.url }]);
      for (const [name, seen] of Object.entries(outcome)) expect(seen.title, name).not.toMatch(/^pwned/);
      expect(outcome).toEqual({
        'x.html': { downloaded: true, title: '' },
        's.svg': { downloaded: true, title: '' },
        // Chromium shows a picture it cannot decode as an image document, not as a page.
        'evil.png': { downloaded: false, title: expect.not.stringMatching(/^pwned/) as unknown as string },
      });
    } finally {
      await context.close();
    }
  });
});
