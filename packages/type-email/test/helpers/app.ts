import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger, ResourceType } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';

/** One resource folder: its config.json and event scripts (file name -> source). */
export interface ResourceSpec {
  config: Record<string, unknown>;
  files?: Record<string, string>;
}

/** A log line the app wrote. */
export interface LogLine {
  level: 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown> | undefined;
}

/** An app started from a temporary folder, with its log kept and a JSON fetch helper. */
export interface TestApp {
  app: RunningApp;
  url: string;
  logs: LogLine[];
  request(method: string, path: string, options?: { body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; headers: Headers; body: unknown; text: string }>;
  close(): Promise<void>;
}

/** Writes an app folder with the given resources to a temp dir and starts it on port 0. */
export async function startTestApp(
  resources: Record<string, ResourceSpec>,
  options: { types: readonly ResourceType[]; env?: 'development' | 'production'; appJson?: Record<string, unknown> },
): Promise<TestApp> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-type-test-'));
  if (options.appJson) await writeFile(join(dir, 'app.json'), JSON.stringify(options.appJson));
  for (const [name, spec] of Object.entries(resources)) {
    const folder = join(dir, 'resources', name);
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'config.json'), JSON.stringify(spec.config, null, 2));
    for (const [file, source] of Object.entries(spec.files ?? {})) await writeFile(join(folder, file), source);
  }
  const logs: LogLine[] = [];
  const logger: Logger = {
    info: (message, fields) => logs.push({ level: 'info', message, fields }),
    warn: (message, fields) => logs.push({ level: 'warn', message, fields }),
    error: (message, fields) => logs.push({ level: 'error', message, fields }),
  };
  let app: RunningApp;
  try {
    app = await startApp({ appDir: dir, port: 0, env: options.env ?? 'development', logger, resourceTypes: options.types });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    app,
    url: app.url,
    logs,
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${app.url}${path}`, {
        method,
        headers,
        ...(opts.body !== undefined ? { body: typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body) } : {}),
      });
      const text = await res.text();
      const isJson = (res.headers.get('content-type') ?? '').includes('application/json');
      return { status: res.status, headers: res.headers, body: isJson && text ? (JSON.parse(text) as unknown) : text, text };
    },
    async close() {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
