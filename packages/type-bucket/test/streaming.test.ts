import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3 } from './s3Server.js';
import type { TestS3 } from './s3Server.js';
import { startSvcWithBucket } from './svcProcess.js';
import type { SvcProcess } from './svcProcess.js';

const MiB = 1024 * 1024;
/** 200 MiB; SVC_BUCKET_STREAM_MIB=600 shows that the growth does not follow the file size. */
const FILE_MIB = Number(process.env.SVC_BUCKET_STREAM_MIB ?? 200);
/**
 * The peak may grow by 60% of the file at most. A streaming server grows by a constant amount
 * (~70-90 MiB here, for 200 MiB and for 600 MiB alike): spent buffers wait for V8's next
 * collection, which external memory only triggers every 64 MiB or so. A buffering server grows
 * by the whole file or more.
 */
const MAX_GROWTH = 0.6 * FILE_MIB * MiB;

let s3: TestS3;
let svc: SvcProcess;

beforeAll(async () => {
  s3 = await startS3();
  svc = await startSvcWithBucket({ bucket: s3.bucket, key: s3.key, secret: s3.secret, endpoint: s3.endpoint });
});
afterAll(async () => {
  await svc?.close();
  await s3?.close();
});

/** FILE_MIB distinct 1 MiB chunks made on the fly (the test never holds the file either). */
function bigFile(): { stream: Readable; digest: Promise<string> } {
  const block = randomBytes(MiB);
  const hash = createHash('sha256');
  let resolveDigest: (d: string) => void = () => {};
  const digest = new Promise<string>((r) => (resolveDigest = r));
  function* chunks(): Generator<Buffer> {
    for (let i = 0; i < FILE_MIB; i++) {
      const chunk = Buffer.from(block);
      chunk.writeUInt32BE(i, 0);
      hash.update(chunk);
      yield chunk;
    }
    resolveDigest(hash.digest('hex'));
  }
  return { stream: Readable.from(chunks(), { objectMode: false }), digest };
}

function send(method: string, url: string, headers: Record<string, string>, body?: Readable): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, resolve);
    req.on('error', reject);
    if (body) body.pipe(req);
    else req.end();
  });
}

async function drain(res: IncomingMessage): Promise<{ text: string; digest: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  let text = '';
  for await (const chunk of res as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
    if (text.length < 1000) text += chunk.toString();
  }
  return { text, digest: hash.digest('hex'), size };
}

describe('Bucket streaming: a 200 MiB file through a separate svc process', () => {
  it('uploads (Content-Length and chunked) and downloads the file with the server growing far less than the file', { timeout: 240_000 }, async () => {
    // Warm up: load the SDK and open a connection, so the baseline is the working server.
    const warm = await send('POST', `${svc.url}/files/warm.txt`, { 'content-type': 'text/plain', 'content-length': '4' }, Readable.from([Buffer.from('warm')]));
    await drain(warm);
    await drain(await send('GET', `${svc.url}/files/warm.txt`, {}));
    const before = await svc.memory();
    let sampledMax = before.rss;
    const sampler = setInterval(() => {
      svc.memory().then((m) => (sampledMax = Math.max(sampledMax, m.rss)), () => {});
    }, 100);
    const started = Date.now();
    try {
      const raw = bigFile();
      const up = await send('POST', `${svc.url}/files/big.bin`, { 'content-type': 'application/x-big', 'content-length': String(FILE_MIB * MiB) }, raw.stream);
      const upBody = await drain(up);
      expect(up.statusCode, upBody.text).toBe(200);
      expect(JSON.parse(upBody.text)).toMatchObject({ fileName: 'big.bin', size: FILE_MIB * MiB, contentType: 'application/octet-stream' });
      const uploadSeconds = (Date.now() - started) / 1000;

      const down = await send('GET', `${svc.url}/files/big.bin`, {});
      expect(down.statusCode).toBe(200);
      // The type comes from the name's extension, not from the uploader: .bin is a download.
      expect(down.headers['content-type']).toBe('application/octet-stream');
      expect(down.headers['content-length']).toBe(String(FILE_MIB * MiB));
      const got = await drain(down);
      expect(got.size).toBe(FILE_MIB * MiB);
      expect(got.digest).toBe(await raw.digest);

      const chunked = bigFile();
      const upChunked = await send('POST', `${svc.url}/files/big-chunked.bin`, { 'content-type': 'application/x-big' }, chunked.stream);
      const chunkedBody = await drain(upChunked);
      expect(upChunked.statusCode, chunkedBody.text).toBe(200);
      expect(JSON.parse(chunkedBody.text)).toMatchObject({ size: FILE_MIB * MiB });
      const downChunked = await drain(await send('GET', `${svc.url}/files/big-chunked.bin`, {}));
      expect(downChunked.digest).toBe(await chunked.digest);

      const after = await svc.memory();
      const growth = after.peak - before.peak;
      const report = {
        file: `${FILE_MIB} MiB`,
        baselineRssMiB: +(before.rss / MiB).toFixed(1),
        peakRssMiB: +(after.peak / MiB).toFixed(1),
        peakGrowthMiB: +(growth / MiB).toFixed(1),
        sampledMaxRssMiB: +(sampledMax / MiB).toFixed(1),
        uploadSeconds,
        totalSeconds: (Date.now() - started) / 1000,
      };
      console.log(`bucket streaming: ${JSON.stringify(report)}`);
      expect(growth).toBeLessThan(MAX_GROWTH);
    } finally {
      clearInterval(sampler);
    }
  });
});
