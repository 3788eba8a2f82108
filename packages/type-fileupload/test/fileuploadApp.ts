import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingRealtime, silentLogger } from '@svc/core';
import type { Logger } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { fileuploadType } from '@svc/type-fileupload';

/** An app with one Fileupload resource at /fileupload, started on a free port. */
export interface FileuploadApp {
  app: RunningApp;
  url: string;
  dir: string;
  realtime: RecordingRealtime;
  close(): Promise<void>;
}

/** Options of {@link startFileuploadApp}. */
export interface FileuploadAppOptions {
  /** Keys of config.json besides "type". */
  config?: Record<string, unknown>;
  /** Event script files: 'upload.js' -> source. */
  scripts?: Record<string, string>;
  /** Other resources: folder -> config.json. */
  resources?: Record<string, Record<string, unknown>>;
  logger?: Logger;
  /** A MongoDB URL for the app's store; default the embedded store. */
  db?: string;
  /** Runs on the app folder before the server starts (a mount, a link). */
  beforeStart?: (dir: string) => Promise<void>;
}

/** Writes an app folder whose /fileupload resource is a Fileupload, and starts it. */
export async function startFileuploadApp(options: FileuploadAppOptions = {}): Promise<FileuploadApp> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-fileupload-app-'));
  const resource = join(dir, 'resources', 'fileupload');
  await mkdir(resource, { recursive: true });
  await writeFile(join(resource, 'config.json'), JSON.stringify({ type: 'Fileupload', ...options.config }));
  for (const [file, source] of Object.entries(options.scripts ?? {})) await writeFile(join(resource, file), source);
  for (const [name, config] of Object.entries(options.resources ?? {})) {
    await mkdir(join(dir, 'resources', name), { recursive: true });
    await writeFile(join(dir, 'resources', name, 'config.json'), JSON.stringify(config));
  }
  const realtime = new RecordingRealtime();
  try {
    await options.beforeStart?.(dir);
    const app = await startApp({ appDir: dir, port: 0, logger: options.logger ?? silentLogger, resourceTypes: [fileuploadType], realtime, ...(options.db ? { db: options.db } : {}) });
    return {
      app,
      url: app.url,
      dir,
      realtime,
      async close() {
        await app.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A raw multipart/form-data body, as any client writes it: `parts` in order. */
export function multipartBody(boundary: string, parts: ({ name: string; value: string } | { name: string; filename: string; type?: string; content: string | Buffer })[]): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    if ('filename' in part) {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"; filename="${part.filename}"\r\nContent-Type: ${part.type ?? 'application/octet-stream'}\r\n\r\n`, 'latin1'));
      chunks.push(Buffer.isBuffer(part.content) ? part.content : Buffer.from(part.content));
      chunks.push(Buffer.from('\r\n'));
    } else {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"\r\n\r\n${part.value}\r\n`));
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}
