import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { silentLogger } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { importerType } from '@svc/type-importer';
import type { ImportStatus } from '@svc/type-importer';

/** Root in development: any svc-ssh-key is accepted. */
export const ROOT = { 'svc-ssh-key': 'root' };

/** Writes resources/<name>/config.json. */
export async function writeResource(appDir: string, name: string, config: Record<string, unknown>): Promise<void> {
  await mkdir(join(appDir, 'resources', name), { recursive: true });
  await writeFile(join(appDir, 'resources', name, 'config.json'), JSON.stringify(config));
}

/** Starts the app in `appDir` with the Importer type registered. */
export function startImporterApp(appDir: string, db?: string): Promise<RunningApp> {
  return startApp({ appDir, port: 0, logger: silentLogger, resourceTypes: [importerType], ...(db ? { db } : {}) });
}

/** Fetches JSON. */
export async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

/** Polls GET <importer>/status until the run is over; answers the final status. */
export async function waitForImport(base: string, timeoutMs = 240_000): Promise<ImportStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await json(`${base}/status`, { headers: ROOT });
    const status = body as ImportStatus;
    if (status.state !== 'running') return status;
    if (Date.now() > deadline) throw new Error(`import still running after ${timeoutMs} ms: ${JSON.stringify(status)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
