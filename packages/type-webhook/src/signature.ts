import { createHmac, timingSafeEqual } from 'node:crypto';

/** The header that carries a delivery's signature: `t=<unix seconds>,v1=<hex HMAC-SHA256>`. */
export const SIGNATURE_HEADER = 'svc-signature';

/** How old a signature a receiver accepts by default (seconds): 5 minutes. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * The `svc-signature` value of `body` sent at `timestamp` (unix seconds): the HMAC-SHA256 under
 * `secret` of `<timestamp>.<body>`, in hex. The timestamp is signed with the body, so a captured
 * delivery cannot be replayed later than the receiver's tolerance.
 */
export function signPayload(secret: string, body: string, timestamp: number): string {
  return `t=${timestamp},v1=${hmac(secret, timestamp, body)}`;
}

/** What {@link verifySignature} checks. */
export interface VerifyOptions {
  secret: string;
  /** The `svc-signature` header as received. */
  header: string | undefined;
  /** The request body exactly as received (before any JSON parsing). */
  body: string | Buffer;
  /** Oldest (and furthest in the future) timestamp accepted, seconds; default 300. */
  toleranceSeconds?: number;
  /** Now, unix seconds (tests). */
  now?: number;
}

/**
 * Whether a delivery is one the webhook signed with `secret`, sent within the tolerance: for
 * receivers written in Node. Constant-time comparison; several `v1=` (a secret being rotated on
 * the receiver's side) are accepted when one matches.
 */
export function verifySignature(options: VerifyOptions): boolean {
  const header = options.header;
  if (typeof header !== 'string' || header.length > 1024) return false;
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  if (timestamp === undefined || signatures.length === 0) return false;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(hmac(options.secret, timestamp, options.body), 'hex');
  return signatures.some((s) => timingSafeEqual(Buffer.from(s, 'hex'), expected));
}

function hmac(secret: string, timestamp: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}
