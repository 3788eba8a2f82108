import { randomBytes } from 'node:crypto';

/**
 * An incoming X-Request-Id is kept when it is short and made of token characters only (letters,
 * digits, `-._~+`): it goes back in a header and into log lines, so nothing that could split a
 * line, quote a field or hide in a terminal. Anything else is replaced, not cleaned.
 */
const SAFE_ID = /^[A-Za-z0-9._~+-]{1,128}$/;

/** Unique per process start, so that ids of several processes behind one balancer do not collide. */
const PREFIX = `${randomBytes(6).toString('hex')}-`;
let counter = 0;

/** The id of a request: the client's (or proxy's) own when safe, else a new one. */
export function requestIdOf(incoming: string | string[] | undefined): string {
  if (typeof incoming === 'string' && SAFE_ID.test(incoming)) return incoming;
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return PREFIX + counter.toString(36);
}
