import { randomBytes } from 'node:crypto';

/** A new object id: 16 lowercase hex characters from the CSPRNG, as Deployd apps expect. */
export function createId(): string {
  return randomBytes(8).toString('hex');
}

/** A new session id: 64 random bytes in hex (128 characters), as Deployd's. */
export function createSessionId(): string {
  return randomBytes(64).toString('hex');
}
