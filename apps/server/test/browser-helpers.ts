import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { defineResourceType, silentLogger } from '@svc/core';
import type { Context } from '@svc/core';
import { createRealtime } from '@svc/realtime';
import type { SocketRealtime } from '@svc/realtime';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';

const CHROMIUM = process.env.CHROME_PATH ?? '/usr/bin/chromium';

/** True when browser tests can run; under CI=true a missing chromium is an error, not a skip. */
export function chromiumAvailable(suite: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI === 'true') throw new Error(`CI=true but there is no chromium at ${CHROMIUM}: ${suite} cannot run`);
  process.stderr.write(`SKIPPED ${suite}: no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROME_PATH)\n`);
  return false;
}

/** Debian's chromium, headless, without any network of its own. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** What the echo resource answers: the request as the resource saw it. */
export interface Echo {
  method: string;
  url: string;
  query: Record<string, unknown>;
  body: unknown;
  isRoot: boolean;
}

/** A custom type echoing each request, with one RPC-style method; `fail` in body or query fails. */
export const echoType = defineResourceType({
  name: 'Echo',
  client: { methods: { shout: { method: 'POST', func: 'shout' } } },
  create: () => ({
    handle: (ctx: Context) => {
      const fail = (ctx.body as { fail?: unknown } | undefined)?.fail ?? ctx.query.fail;
      if (fail !== undefined) return Promise.resolve({ status: Number(fail), body: { status: Number(fail), message: 'asked to fail' } });
      const echo: Echo = { method: ctx.method, url: ctx.url, query: ctx.query, body: ctx.body, isRoot: ctx.isRoot };
      return Promise.resolve({ status: 200, body: echo });
    },
  }),
});

/** A page that only loads the client library. */
export const BLANK_PAGE = '<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body><script src="/svc.js"></script></body></html>';

/** A running app with the Socket.IO transport the test can emit through. */
export interface BrowserApp {
  app: RunningApp;
  dir: string;
  url: string;
  realtime: SocketRealtime;
  close(): Promise<void>;
}

/** Writes an app folder (path -> text or JSON) and starts it in this process on a free port. */
export async function startBrowserApp(files: Record<string, string | object>, options: { copyFrom?: string } = {}): Promise<BrowserApp> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-browser-'));
  const from = options.copyFrom;
  if (from) await cp(from, dir, { recursive: true, filter: (src) => !src.startsWith(join(from, 'data')) });
  for (const [path, content] of Object.entries(files)) {
    const file = join(dir, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  }
  const realtime = createRealtime();
  const app = await startApp({ appDir: dir, port: 0, logger: silentLogger, realtime, resourceTypes: [echoType] });
  return {
    app,
    dir,
    url: app.url,
    realtime,
    async close() {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** For the browser tests that import it from here. */
export { until } from './helpers/wait.js';
