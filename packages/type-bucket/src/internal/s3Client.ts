import { S3Client } from '@aws-sdk/client-s3';
import type { Logger } from '@svc/core';
import type { BucketSettings } from '../bucketType.js';
import { ProviderError } from './providerError.js';

/** Error bodies are small XML documents; anything longer is cut rather than buffered. */
const MAX_ERROR_BODY = 64 * 1024;

interface RawResponse {
  statusCode: number;
  headers: Record<string, string | undefined>;
  body?: AsyncIterable<Uint8Array> | { destroy?(): void };
}

/**
 * An S3 client for one bucket resource. Path-style addressing whenever an endpoint is set, so
 * MinIO, Ceph, R2 or a local test server work like AWS. Checksums are only sent when the
 * operation needs them (streamed aws-chunked trailers are not understood by every S3-compatible
 * service), and no retries: a request body is a one-shot stream that cannot be replayed.
 */
export function createS3Client(settings: BucketSettings, logger: Logger): S3Client {
  const client = new S3Client({
    // The SDK warns on every failed streamed upload; those failures reach the client already.
    logger: { debug() {}, info() {}, warn() {}, error: (...args: unknown[]) => logger.error(`S3 client: ${args.map(String).join(' ')}`) },
    region: settings.region,
    credentials: { accessKeyId: settings.key, secretAccessKey: settings.secret },
    ...(settings.endpoint ? { endpoint: settings.endpoint, forcePathStyle: true } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
  });
  // Sits inside the SDK's deserializer, so it sees the provider's raw error before the SDK turns
  // it into an exception object (which loses the original body).
  client.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      const response = result.response as RawResponse;
      if (response.statusCode >= 300) {
        const body = await readCapped(response.body);
        throw new ProviderError(response.statusCode, response.headers['content-type'], body);
      }
      return result;
    },
    { step: 'deserialize', priority: 'low', name: 'svcProviderErrorPassThrough' },
  );
  return client;
}

async function readCapped(body: RawResponse['body']): Promise<Buffer> {
  if (body === undefined || !(Symbol.asyncIterator in body)) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(Buffer.from(chunk));
    size += chunk.length;
    if (size >= MAX_ERROR_BODY) break;
  }
  return Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY);
}
