import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger, ResourceType } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';

/** One HTTP answer; JSON bodies parsed, others left as text. */
export interface TestResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

/** A browser-like client: keeps its sid cookie. */
export interface TestClient {
  request(method: string, path: string, options?: { body?: unknown; form?: Record<string, string>; headers?: Record<string, string> }): Promise<TestResponse>;
}

/** A fixture app running from a temp copy. */
export interface FixtureApp {
  app: RunningApp;
  logs: string[];
  client(): TestClient;
  close(): Promise<void>;
}

/** Copies a committed fixture app to a temp dir and starts it on a free loopback port. */
export async function startFixture(fixture: string, types: readonly ResourceType[]): Promise<FixtureApp> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-event-'));
  await cp(fixture, dir, { recursive: true });
  const logs: string[] = [];
  const logger: Logger = {
    info: (m) => logs.push(`info ${m}`),
    warn: (m) => logs.push(`warn ${m}`),
    error: (m) => logs.push(`error ${m}`),
  };
  let app: RunningApp;
  try {
    app = await startApp({ appDir: dir, port: 0, env: 'development', logger, resourceTypes: types });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    app,
    logs,
    client() {
      let cookie: string | undefined;
      return {
        async request(method, path, opts = {}) {
          const headers: Record<string, string> = { ...opts.headers };
          if (cookie) headers.cookie = cookie;
          let body: string | undefined;
          if (opts.form) {
            body = new URLSearchParams(opts.form).toString();
            headers['content-type'] = 'application/x-www-form-urlencoded';
          } else if (opts.body !== undefined) {
            body = JSON.stringify(opts.body);
            headers['content-type'] = 'application/json';
          }
          const res = await fetch(`${app.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
          const sid = /(?:^|,\s*)sid=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')?.[1];
          if (sid !== undefined) cookie = sid ? `sid=${sid}` : undefined;
          const text = await res.text();
          const json = (res.headers.get('content-type') ?? '').includes('application/json');
          return { status: res.status, headers: res.headers, text, body: json && text ? (JSON.parse(text) as unknown) : text };
        },
      };
    },
    async close() {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
