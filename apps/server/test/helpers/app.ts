import { afterAll, beforeAll, expect } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { silentLogger } from '@svc/core';
import type { Logger, Realtime, ResourceType } from '@svc/core';
import { loadApp, startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';

/** The folders writeApp made in this test file: removed after its last test (after its own afterAll hooks). */
const written: string[] = [];
afterAll(async () => {
  for (const dir of written.splice(0)) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
});

/** An app folder written from a map of relative path -> content (objects become JSON); removed after the test file. */
export async function writeApp(files: Record<string, string | object>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-app-'));
  written.push(dir);
  for (const [path, content] of Object.entries(files)) {
    const file = join(dir, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

/** Options of {@link runApp}. */
export interface RunAppOptions {
  /** 'embedded' (default) or 'mongodb' (needs SVC_TEST_MONGODB_URL). */
  store?: string;
  env?: 'development' | 'production';
  logger?: Logger;
  realtime?: Realtime;
  resourceTypes?: ResourceType[];
  /** A MongoDB URL of the test's own (wins over `store`); the test drops nothing there. */
  db?: string;
}

/** A running app on a free port with a cookie-keeping fetch client. */
export interface AppHandle {
  app: RunningApp;
  dir: string;
  url: string;
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: unknown; headers: Headers }>;
  /** A fresh client with its own cookie jar. */
  client(): AppHandle['request'];
  close(): Promise<void>;
}

/** Writes an app, starts it in-process on port 0 and answers a handle. */
export async function runApp(files: Record<string, string | object>, options: RunAppOptions = {}): Promise<AppHandle> {
  const dir = await writeApp(files);
  const mongo = process.env.SVC_TEST_MONGODB_URL;
  const db = options.db ?? (options.store === 'mongodb' && mongo ? `${mongo.replace(/\/$/, '')}/svc_app_${randomBytes(5).toString('hex')}` : undefined);
  const app = await startApp({
    appDir: dir,
    port: 0,
    host: '127.0.0.1',
    env: options.env ?? 'development',
    logger: options.logger ?? silentLogger,
    ...(db ? { db } : {}),
    ...(options.realtime ? { realtime: options.realtime } : {}),
    ...(options.resourceTypes ? { resourceTypes: options.resourceTypes } : {}),
  });
  const client = (): AppHandle['request'] => {
    let sid: string | undefined;
    return async (method, path, body, headers = {}) => {
      const res = await fetch(app.url + path, {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(sid ? { cookie: `sid=${sid}` } : {}), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith('sid='));
      if (cookie) sid = cookie.slice(4, cookie.indexOf(';')) || undefined;
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: text && (res.headers.get('content-type') ?? '').includes('json') ? (JSON.parse(text) as unknown) : text };
    };
  };
  return {
    app,
    dir,
    url: app.url,
    request: client(),
    client,
    async close() {
      await app.close();
      if (db && mongo && !options.db) {
        const { MongoClient } = await import('mongodb');
        const c = new MongoClient(mongo);
        await c.db(db.slice(db.lastIndexOf('/') + 1)).dropDatabase().catch(() => undefined);
        await c.close();
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The stores app-level suites run on: embedded, and mongodb when SVC_TEST_MONGODB_URL is set (required in CI). */
export function appStores(): string[] {
  if (process.env.SVC_TEST_MONGODB_URL) return ['embedded', 'mongodb'];
  if (process.env.CI === 'true') throw new Error('CI=true but SVC_TEST_MONGODB_URL is not set');
  return ['embedded'];
}

/** A logger that keeps lines, for asserting what the server logged. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (m: string, f?: Record<string, unknown>) => lines.push(`${level} ${m}${f ? ` ${JSON.stringify(f)}` : ''}`);
  return { lines, info: push('info'), warn: push('warn'), error: push('error') };
}

/**
 * Loads an app folder made of `files` (plus a todos collection) and answers 'loaded', or the
 * start error with the folder written as `<app>`; the folder is removed either way.
 */
export async function loadOutcome(files: Record<string, string | object>): Promise<string> {
  const dir = await writeApp({ 'resources/todos/config.json': { type: 'Collection', properties: {} }, ...files });
  try {
    await loadApp(dir, silentLogger);
    return 'loaded';
  } catch (err) {
    return (err as Error).message.replace(dir, '<app>');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * For a describe block: an app on `store` with `seeds` posted to `resource` before its tests (their
 * ids in `ids`, in order), closed after them; `text(path)` answers a GET's status and body text.
 */
export function seededApp(files: Record<string, string | object>, store: string, resource: string, seeds: readonly object[]) {
  const app = { h: undefined as unknown as AppHandle, ids: [] as string[] };
  beforeAll(async () => {
    app.h = await runApp(files, { store });
    for (const seed of seeds) {
      const res = await app.h.request('POST', resource, seed);
      expect(res.status).toBe(200);
      app.ids.push((res.body as { id: string }).id);
    }
  });
  afterAll(async () => {
    await app.h.close();
  });
  const text = async (path: string): Promise<{ status: number; text: string }> => {
    const res = await fetch(app.h.url + path);
    return { status: res.status, text: await res.text() };
  };
  return { app, ids: app.ids, text };
}
