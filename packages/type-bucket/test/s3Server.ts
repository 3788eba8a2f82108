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

/** A request the proxy forwarded, and the status the S3 server answered (0 while none). */
export interface ProxiedRequest {
  method: string;
  url: string;
  status: number;
}

/** An HTTP proxy in front of an S3 server that records what reached it. */
export interface RecordingProxy {
  endpoint: string;
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

/**
 * Forwards every request to `target` as it comes (bodies streamed both ways) and records it, so
 * a test can see which S3 calls a server made: a PutObject, a multipart upload and its abort.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const { createServer, request } = await import('node:http');
  const requests: ProxiedRequest[] = [];
  const server = createServer((req, res) => {
    const seen: ProxiedRequest = { method: req.method ?? '', url: req.url ?? '', status: 0 };
    requests.push(seen);
    const out = request(`${target}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (answer) => {
      seen.status = answer.statusCode ?? 0;
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    // A request cut on its way in is cut on its way out: the S3 server sees it broken off too.
    req.on('aborted', () => out.destroy());
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
