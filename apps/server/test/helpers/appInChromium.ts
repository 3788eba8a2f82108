import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { silentLogger } from '@svc/core';
import { startApp } from '../../src/startApp.js';
import type { RunningApp, StartOptions } from '../../src/startApp.js';
import { launchChromium } from '../browser-helpers.js';

/** Options of {@link openAppInChromium}. */
export interface AppInChromiumOptions {
  /** The start of the temporary app folder's name (`svc-dashboard-rules-`). */
  prefix: string;
  viewport: { width: number; height: number };
  /** The page's default timeout (playwright), ms. */
  timeout: number;
  /** Options of the browser context besides the viewport (acceptDownloads). */
  context?: Omit<BrowserContextOptions, 'viewport'>;
  /** Options of startApp besides the folder, the port, the env (development) and the logger (silent). */
  start?: Omit<StartOptions, 'appDir' | 'port' | 'env' | 'logger'>;
}

/** An app started in this process and one chromium page (not yet navigated): the dashboard browser tests' setup. */
export interface AppInChromium {
  dir: string;
  app: RunningApp;
  browser: Browser;
  page: Page;
  /** Closes chromium and the app, and removes the app folder. */
  close(): Promise<void>;
}

/**
 * Writes an app folder (path -> text, or an object written as indented JSON), starts it in
 * development on a free port, launches chromium (browser-helpers.ts) and opens one page.
 */
export async function openAppInChromium(files: Record<string, string | object>, options: AppInChromiumOptions): Promise<AppInChromium> {
  const dir = await mkdtemp(join(tmpdir(), options.prefix));
  let app: RunningApp | undefined;
  let browser: Browser | undefined;
  const close = async (): Promise<void> => {
    await browser?.close();
    await app?.close();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    }
    app = await startApp({ ...options.start, appDir: dir, port: 0, env: 'development', logger: silentLogger });
    browser = await launchChromium();
    const page = await (await browser.newContext({ ...options.context, viewport: options.viewport })).newPage();
    page.setDefaultTimeout(options.timeout);
    return { dir, app, browser, page, close };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}
