import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startScriptCollector } from './scriptCollector.js';
import type { ScriptCollector } from './scriptCollector.js';
import { chromiumAvailable, launchChromium, until } from '../apps/server/test/browser-helpers.js';
import { startFileuploadApp } from '../packages/type-fileupload/test/fileuploadApp.js';
import type { FileuploadApp } from '../packages/type-fileupload/test/fileuploadApp.js';

// Issue 22, in a real browser: a page of the app uploads to a Fileupload resource as pages
// written for dpd-fileupload do (a browser FormData from an <input type=file>, with query
// parameters), lists the records and shows the image; uploaded pages (html, svg) opened at their
// URL are downloads whose script never runs on the app's origin.

const run = chromiumAvailable('Fileupload uploads in chromium (issue 22)');

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>upload</title></head><body>
<form id="f"><input type="file" id="file" name="file" multiple><input name="title" value="from a form"></form>
<img id="shown">
<script>
  window.upload = async function () {
    const data = new FormData(document.getElementById('f'));
    const res = await fetch('/fileupload?subdir=photos&album=' + encodeURIComponent('"summer"'), { method: 'POST', body: data });
    const uploaded = await res.json();
    const list = await (await fetch('/fileupload?subdir=photos')).json();
    const img = document.getElementById('shown');
    await new Promise(function (done) { img.onload = img.onerror = done; img.src = '/fileupload/photos/' + encodeURIComponent(uploaded[0].filename); });
    return { status: res.status, uploaded: uploaded, listed: list.length, imageWidth: img.naturalWidth };
  };
  window.uploadBlob = async function (name, type, text) {
    const data = new FormData();
    data.append('file', new Blob([text], { type: type }), name);
    const res = await fetch('/fileupload?subdir=pages', { method: 'POST', body: data });
    return res.status;
  };
</script></body></html>`;

// A 1x1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

describe.skipIf(!run)('Fileupload in chromium: browser FormData uploads, uploaded pages never run', () => {
  let app: FileuploadApp;
  let browser: Browser;
  let collector: ScriptCollector;

  beforeAll(async () => {
    collector = await startScriptCollector();
    app = await startFileuploadApp({
      beforeStart: async (dir) => {
        await mkdir(join(dir, 'public'), { recursive: true });
        await writeFile(join(dir, 'public', 'index.html'), PAGE);
      },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await collector?.close();
  });

  it('an <input type=file> form posted as FormData stores every file with the form and query fields', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${app.url}/`);
      await page.setInputFiles('#file', [
        { name: 'dot.png', mimeType: 'image/png', buffer: PNG },
        { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('some notes') },
      ]);
      const result = await page.evaluate(() => (globalThis as unknown as { upload(): Promise<{ status: number; uploaded: Record<string, unknown>[]; listed: number; imageWidth: number }> }).upload());
      expect(result.status).toBe(200);
      expect(result.uploaded).toEqual([
        expect.objectContaining({ filename: 'dot.png', filesize: PNG.length, subdir: 'photos', album: 'summer', title: 'from a form', type: 'image/png' }),
        expect.objectContaining({ filename: 'notes.txt', filesize: 10, subdir: 'photos' }),
      ]);
      expect(result.listed).toBe(2);
      expect(result.imageWidth).toBe(1);
      expect(await readFile(join(app.dir, 'upload', 'photos', 'dot.png'))).toEqual(PNG);
    } finally {
      await page.close();
    }
  });

  it('x.html and s.svg uploaded from the page are downloads when opened; their script never runs', async () => {
    const script = (tag: string): string => collector.script(tag);
    const uploads = [
      { name: 'x.html', type: 'text/html', body: `<!doctype html><html><body><script>${script('html')}</script></body></html>` },
      { name: 's.svg', type: 'image/svg+xml', body: `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script><![CDATA[${script('svg')}]]></script></svg>` },
    ];
    const context = await browser.newContext({ acceptDownloads: true });
    try {
      const uploader = await context.newPage();
      await uploader.goto(`${app.url}/`);
      for (const u of uploads) {
        const status = await uploader.evaluate(([n, t, b]) => (globalThis as unknown as { uploadBlob(n: string, t: string, b: string): Promise<number> }).uploadBlob(n, t, b), [u.name, u.type, u.body] as const);
        expect(status).toBe(200);
      }
      await writeFile(join(app.dir, 'public', 'control.html'), `<!doctype html><html><body><script>${script('control')}</script></body></html>`);
      const outcome: Record<string, boolean> = {};
      for (const u of uploads) {
        const page = await context.newPage();
        const download = page.waitForEvent('download', { timeout: 15_000 }).then(
          () => true,
          () => false,
        );
        // A download aborts the navigation: goto rejects, and the download event tells why.
        const opened = await page.goto(`${app.url}/fileupload/pages/${u.name}`, { waitUntil: 'load' }).then(
          () => true,
          () => false,
        );
        outcome[u.name] = !opened && (await download);
        await page.close();
      }
      // The app's own page runs the same script: the collector sees a script that runs.
      const control = await context.newPage();
      await control.goto(`${app.url}/control.html`, { waitUntil: 'load' });
      await until(() => collector.hits.some((h) => h.tag === 'control'), 15_000);
      expect(collector.hits).toEqual([{ tag: 'control', origin: app.url }]);
      expect(outcome).toEqual({ 'x.html': true, 's.svg': true });
    } finally {
      await context.close();
    }
  });
});
