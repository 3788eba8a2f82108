import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '@svc/core';
import { scheduleBackups } from '@svc/server';
import { startBucketApp } from './bucketApp.js';
import type { BucketApp } from './bucketApp.js';
import { startS3 } from './s3Server.js';
import type { TestS3 } from './s3Server.js';

// Issue 23 (6): app.json backups.bucket stores each scheduled backup in a Bucket resource too.

let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.close();
});

function recorder(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { lines, logger: { info: (m) => lines.push(m), warn: (m) => lines.push(`warn ${m}`), error: (m) => lines.push(`error ${m}`) } };
}

/** Runs the schedule of `app` (every 1.1 s, keep 2) until `count` backups were written. */
async function runSchedule(app: BucketApp, bucket: string, count: number): Promise<string[]> {
  const { logger, lines } = recorder();
  const stop = scheduleBackups({
    dir: join(app.dir, 'backups'),
    source: { kind: 'embedded', dir: join(app.dir, 'data') },
    intervalMs: 1100,
    keep: 2,
    logger,
    bucket: { name: bucket, files: () => app.app.server.resources.find((r) => r.path === `/${bucket}`)?.files },
  });
  try {
    // Backups are named to the second: bounded, a little over 1.1 s each.
    for (let i = 0; i < 400 && lines.filter((l) => l.startsWith('backup: wrote')).length < count; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await stop();
  }
  return lines;
}

describe('scheduled backups stored in a Bucket resource (app.json backups.bucket)', () => {
  it('stores each backup as backups/<file> and keeps the newest `keep` there, leaving other keys alone', async () => {
    const app = await startBucketApp(s3);
    try {
      // A key of the app's own under backups/ that is not a scheduled backup stays.
      expect((await fetch(`${app.url}/files/backups/mine.txt`, { method: 'POST', body: 'mine' })).status).toBe(200);
      const lines = await runSchedule(app, 'files', 4);
      expect(lines.filter((l) => l.startsWith('warn') || l.startsWith('error'))).toEqual([]);
      expect(lines.filter((l) => l.startsWith('backup: stored')).length).toBeGreaterThanOrEqual(4);
      const local = (await readdir(join(app.dir, 'backups'))).filter((f) => f.startsWith('scheduled-')).sort();
      expect(local).toHaveLength(2);
      // s3rver keeps an object as <key>._S3rver_object.
      const remote = (await readdir(join(s3.directory, s3.bucket, 'backups')))
        .filter((f) => f.endsWith('._S3rver_object'))
        .map((f) => f.slice(0, -'._S3rver_object'.length))
        .sort();
      expect(remote.filter((f) => f.startsWith('scheduled-'))).toEqual(local);
      expect(remote).toContain('mine.txt');
      // The stored object is the local file, byte for byte (downloaded through the Bucket).
      const newest = local[1] as string;
      const served = await fetch(`${app.url}/files/backups/${newest}`);
      expect(served.status).toBe(200);
      expect(await served.text()).toBe(await readFile(join(app.dir, 'backups', newest), 'utf8'));
    } finally {
      await app.close();
    }
  });

  it('a failed upload is logged and the local backup kept; so is a name that is no Bucket', async () => {
    const app = await startBucketApp(s3, { config: { bucket: 'no-such-bucket' } });
    try {
      const lines = await runSchedule(app, 'files', 1);
      expect(lines.some((l) => /^warn backup: storing backups\/scheduled-.*\.jsonl in the bucket files failed .*the local file .* is kept$/.test(l))).toBe(true);
      expect((await readdir(join(app.dir, 'backups'))).filter((f) => f.startsWith('scheduled-'))).toHaveLength(1);

      await writeFile(join(app.dir, 'backups', 'keep-me'), 'x');
      const missing = await runSchedule(app, 'nothing-here', 1);
      expect(missing.some((l) => l.startsWith('warn backup: app.json backups.bucket names nothing-here, which is not a Bucket resource'))).toBe(true);
      expect((await readdir(join(app.dir, 'backups'))).filter((f) => f.startsWith('scheduled-')).length).toBeGreaterThanOrEqual(1);
    } finally {
      await app.close();
    }
  });

  it('app.json backups.bucket: the start says where backups go, and warns when the name is no Bucket', async () => {
    for (const [bucket, expected] of [
      ['files', /^backups: every 60 min into .* and the bucket files, the newest 7 kept$/],
      ['files', /^warn app\.json backups\.bucket: files has no get\.js, so anyone can download the backups stored there/],
      ['nope', /^warn app\.json backups\.bucket: nope is not a Bucket resource of this app; backups stay local only$/],
    ] as const) {
      const { logger, lines } = recorder();
      const app = await startBucketApp(s3, { logger, appJson: { backups: { intervalMinutes: 60, bucket } } });
      await app.close();
      expect(lines.some((l) => expected.test(l)), lines.join('\n')).toBe(true);
    }
    // With a get.js (it refuses), no warning about it.
    const { logger, lines } = recorder();
    const app = await startBucketApp(s3, { logger, appJson: { backups: { intervalMinutes: 60, bucket: 'files' } }, scripts: { 'get.js': "cancelUnless(isRoot, 'not allowed', 403);" } });
    try {
      expect(lines.filter((l) => l.includes('get.js'))).toEqual([]);
      expect((await fetch(`${app.url}/files/backups/anything.jsonl`)).status).toBe(403);
    } finally {
      await app.close();
    }
  });
});
