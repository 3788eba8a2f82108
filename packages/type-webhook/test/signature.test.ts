import { describe, expect, it } from 'vitest';
import { retryDelay, signPayload, verifySignature } from '@svc/type-webhook';

// The signature receivers check (docs/webhooks.md), against a vector computed elsewhere (Python's
// hmac), and the retry schedule.

const SECRET = 'whsec-0123456789abcdef';
const BODY = '{"a":1}';
const VECTOR = 't=1700000000,v1=d77c78ac4da074c56908b55eac30358b2a7bfc573be4c76819af5102e8dcf939';

describe('signPayload / verifySignature', () => {
  it('signs `<t>.<body>` with HMAC-SHA256 in hex, as other languages compute it', () => {
    expect(signPayload(SECRET, BODY, 1700000000)).toBe(VECTOR);
  });

  it('accepts the signature within the tolerance, and refuses every altered part', () => {
    const now = 1700000000;
    expect(verifySignature({ secret: SECRET, header: VECTOR, body: BODY, now })).toBe(true);
    expect(verifySignature({ secret: SECRET, header: VECTOR, body: Buffer.from(BODY), now: now + 300 })).toBe(true);
    expect(verifySignature({ secret: SECRET, header: VECTOR, body: BODY, now: now + 301 })).toBe(false);
    expect(verifySignature({ secret: SECRET, header: VECTOR, body: BODY, now: now - 301 })).toBe(false);
    expect(verifySignature({ secret: SECRET, header: VECTOR, body: BODY, now: now + 3000, toleranceSeconds: 3600 })).toBe(true);
    expect(verifySignature({ secret: `${SECRET}!`, header: VECTOR, body: BODY, now })).toBe(false);
    expect(verifySignature({ secret: SECRET, header: VECTOR, body: '{"a":2}', now })).toBe(false);
    // The timestamp is signed: moving it breaks the signature.
    expect(verifySignature({ secret: SECRET, header: VECTOR.replace('t=1700000000', 't=1700000001'), body: BODY, now })).toBe(false);
    for (const header of [undefined, '', 't=1700000000', 'v1=d77c', `${VECTOR.slice(0, -1)}0`, 'x'.repeat(5000), 't=abc,v1=' + 'a'.repeat(64)]) {
      expect(verifySignature({ secret: SECRET, header, body: BODY, now }), String(header).slice(0, 40)).toBe(false);
    }
    // Several v1 values: accepted when one matches.
    expect(verifySignature({ secret: SECRET, header: `t=1700000000,v1=${'0'.repeat(64)},${VECTOR.split(',')[1] as string}`, body: BODY, now })).toBe(true);
  });
});

describe('retryDelay', () => {
  it.each([
    [1, 0, 500],
    [1, 1, 1000],
    [2, 0, 1000],
    [3, 1, 4000],
    [10, 1, 60_000],
    [60, 0, 30_000],
  ])('attempt %i, random %f: %i ms (base 1000, at most 60000)', (attempt, random, expected) => {
    expect(retryDelay(attempt, 1000, 60_000, undefined, () => random)).toBe(expected);
  });

  it('waits at least what Retry-After asked, within the maximum', () => {
    expect(retryDelay(1, 1000, 60_000, 20_000, () => 0)).toBe(20_000);
    expect(retryDelay(1, 1000, 60_000, 3_600_000, () => 0)).toBe(60_000);
  });
});
