import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The slice of s3rver's API the tests use (it ships no type declarations). */
interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverConstructor = new (options: Record<string, unknown>) => S3rverInstance;

/** A real S3-compatible server on a free loopback port, and the settings that reach it. */
export interface TestS3 {
  endpoint: string;
  bucket: string;
  key: string;
  secret: string;
  /** Files on disk, under one folder per bucket. */
  directory: string;
  close(): Promise<void>;
}

/**
 * Starts s3rver (an S3 implementation on the local file system, checking SigV4 signatures with
 * the fixed credentials S3RVER/S3RVER) with one empty bucket.
 */
export async function startS3(bucket = 'test-bucket'): Promise<TestS3> {
  const S3rver = createRequire(import.meta.url)('s3rver') as S3rverConstructor;
  const directory = await mkdtemp(join(tmpdir(), 'svc-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    key: 'S3RVER',
    secret: 'S3RVER',
    directory,
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
