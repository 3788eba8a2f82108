import { createHmac, timingSafeEqual } from 'node:crypto';
import bcrypt from 'bcrypt';

/** bcrypt's cost (app.json `passwordCost`; what a check takes: bench/RESULTS.md, "Figures from code comments"). */
export const DEFAULT_PASSWORD_COST = 10;

/** Deployd's hash: 256 hex characters of salt, then HMAC-SHA256(password, salt) in hex. */
const DEPLOYD_HASH = /^[0-9a-f]{256}[0-9a-f]{64}$/;

/** Hashes a password with bcrypt (off the event loop). */
export function hashPassword(password: string, cost: number): Promise<string> {
  return bcrypt.hash(password, cost);
}

/** True when `stored` is Deployd's format, to be replaced by bcrypt after a successful login. */
export function isLegacyHash(stored: string): boolean {
  return DEPLOYD_HASH.test(stored);
}

/** Checks a password against a bcrypt hash or a Deployd hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if (isLegacyHash(stored)) {
    const salt = stored.slice(0, 256);
    const expected = Buffer.from(stored.slice(256), 'hex');
    const actual = createHmac('sha256', salt).update(password).digest();
    return timingSafeEqual(expected, actual);
  }
  if (!stored.startsWith('$2')) return false;
  return bcrypt.compare(password, stored);
}

/** A real bcrypt hash to compare against when the username is unknown, so both cases take as long. */
export function dummyHash(cost: number): Promise<string> {
  return bcrypt.hash('svc-no-such-user', cost);
}
