import { randomBytes } from 'node:crypto';

/** A new object id: 16 lowercase hex characters from the CSPRNG, as Deployd apps expect. */
export function createId(): string {
  return randomBytes(8).toString('hex');
}

/** A new session id: 128 random bytes in hex would be Deployd's; 32 bytes is ample and shorter. */
export function createSessionId(): string {
  return randomBytes(32).toString('hex');
}
