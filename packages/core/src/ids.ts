import { randomFillSync } from 'node:crypto';

// Ids come from a pool of CSPRNG bytes refilled 4 KiB at a time (as Node's own randomUUID keeps an
// entropy cache): a call to the CSPRNG per id cost more than the rest of making one. Each byte is
// handed out once; ids are made synchronously, so no two callers can take the same bytes.
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafeSlow(POOL_BYTES);
let offset = POOL_BYTES;

/** `bytes` fresh random bytes (at most 4096) as lowercase hex. */
export function randomHex(bytes: number): string {
  if (!(bytes > 0 && bytes <= POOL_BYTES)) throw new RangeError(`randomHex: 1 to ${POOL_BYTES} bytes, not ${bytes}`);
  if (offset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  // Used bytes are not left behind in memory (a session id is a secret).
  pool.fill(0, offset, offset + bytes);
  offset += bytes;
  return hex;
}

/** A new object id: 16 lowercase hex characters from the CSPRNG, as Deployd apps expect. */
export function createId(): string {
  return randomHex(8);
}

/** A new session id: 64 random bytes in hex (128 characters), as Deployd's. */
export function createSessionId(): string {
  return randomHex(64);
}
