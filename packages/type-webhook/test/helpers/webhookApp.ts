import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { defineResourceType, silentLogger } from '@svc/core';
import type { Logger } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { createWebhook, webhookType } from '@svc/type-webhook';
import type { WebhookTimings } from '@svc/type-webhook';

/** The folders startWebhookApp wrote in this test file: removed after its last test (a test may keep one with close({ keepDir })). */
const written: string[] = [];
afterAll(async () => {
  for (const dir of written.splice(0)) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
});

export const SECRET = 'test-secret-0123456789abcdef';

/** An app with a /todos collection and a /hooks Webhook on it, started on a free port. */
export interface WebhookApp {
  app: RunningApp;
  url: string;
  dir: string;
  /** Calls the app's REST API. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: unknown }>;
  /** The dashboard's API of the webhook (as root, from this machine in development). */
  deliveries(query?: string): Promise<DeliveriesAnswer>;
  close(options?: { keepDir?: boolean }): Promise<void>;
}

export interface DeliveriesAnswer {
  counts: Record<string, number>;
  deliveries: Record<string, unknown>[];
  delivering: { here: boolean } | null;
  [key: string]: unknown;
}

export interface WebhookAppOptions {
  /** Keys of hooks/config.json besides "type" (collection, url and secret have defaults). */
  hook?: Record<string, unknown>;
  /** todos/config.json (default: title, done, a private note). */
  todos?: Record<string, unknown>;
  /** Other resources: folder -> config.json. */
  resources?: Record<string, Record<string, unknown>>;
  /** Files under resources/: 'todos/get.js' -> source. */
  files?: Record<string, string>;
  /** app.json. */
  appJson?: Record<string, unknown>;
  /** An app folder to start again (a restart). */
  dir?: string;
  db?: string;
  timings?: WebhookTimings;
  logger?: Logger;
}

export const TODOS = {
  type: 'Collection',
  properties: { title: { type: 'string' }, done: { type: 'boolean' }, note: { type: 'string', private: true } },
};

/** Writes (unless `dir` is given) and starts the app. */
export async function startWebhookApp(receiverUrl: string, allow: string[], options: WebhookAppOptions = {}): Promise<WebhookApp> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'svc-webhook-app-')));
  if (options.dir === undefined) {
    written.push(dir);
    const write = async (name: string, config: Record<string, unknown>): Promise<void> => {
      await mkdir(join(dir, 'resources', name), { recursive: true });
      await writeFile(join(dir, 'resources', name, 'config.json'), JSON.stringify(config));
    };
    await write('todos', options.todos ?? TODOS);
    await write('hooks', { type: 'Webhook', collection: 'todos', url: receiverUrl, secret: SECRET, retryBaseMs: 100, retryMaxMs: 1000, ...options.hook });
    for (const [name, config] of Object.entries(options.resources ?? {})) await write(name, config);
    for (const [file, source] of Object.entries(options.files ?? {})) await writeFile(join(dir, 'resources', file), source);
    await writeFile(join(dir, 'app.json'), JSON.stringify({ outbound: { allow }, ...options.appJson }));
  }
  const type = options.timings === undefined ? webhookType : defineResourceType({ ...webhookType, create: (context) => createWebhook(context as never, options.timings) });
  const app = await startApp({ appDir: dir, port: 0, logger: options.logger ?? silentLogger, resourceTypes: [type], ...(options.db ? { db: options.db } : {}) });
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${app.url}${path}`, { method, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };
  return {
    app,
    url: app.url,
    dir,
    call,
    async deliveries(query = '') {
      const answer = await call('GET', `/dashboard/api/resources/hooks/-/deliveries${query}`, undefined, { 'svc-ssh-key': 'development' });
      if (answer.status !== 200) throw new Error(`deliveries: ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body as DeliveriesAnswer;
    },
    async close(closeOptions = {}) {
      await app.close();
      if (!closeOptions.keepDir) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `check` until it answers true (every 50 ms, up to `timeoutMs`). */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 20_000, what = 'the condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`${what} did not hold within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
