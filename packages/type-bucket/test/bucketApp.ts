import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingRealtime, silentLogger } from '@svc/core';
import type { Logger } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { bucketType } from '@svc/type-bucket';
import type { TestS3 } from './s3Server.js';

/** An app with one Bucket resource at /files, started on a free port. */
export interface BucketApp {
  app: RunningApp;
  url: string;
  dir: string;
  realtime: RecordingRealtime;
  close(): Promise<void>;
}

/** Options of {@link startBucketApp}. */
export interface BucketAppOptions {
  /** Overrides of config.json (a wrong secret, another bucket, ...). */
  config?: Record<string, unknown>;
  /** Event script files: 'upload.js' -> source. */
  scripts?: Record<string, string>;
  /** Where the app logs; silent by default. */
  logger?: Logger;
  /** app.json's settings. */
  appJson?: Record<string, unknown>;
}

/** Writes an app folder whose /files resource is a Bucket on `s3`, and starts it. */
export async function startBucketApp(s3: TestS3, options: BucketAppOptions = {}): Promise<BucketApp> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bucket-app-'));
  const resource = join(dir, 'resources', 'files');
  await mkdir(resource, { recursive: true });
  const config = { type: 'Bucket', bucket: s3.bucket, key: s3.key, secret: s3.secret, endpoint: s3.endpoint, ...options.config };
  await writeFile(join(resource, 'config.json'), JSON.stringify(config));
  for (const [file, source] of Object.entries(options.scripts ?? {})) await writeFile(join(resource, file), source);
  if (options.appJson) await writeFile(join(dir, 'app.json'), JSON.stringify(options.appJson));
  const realtime = new RecordingRealtime();
  try {
    const app = await startApp({ appDir: dir, port: 0, logger: options.logger ?? silentLogger, resourceTypes: [bucketType], realtime });
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
