import { describe, expect, it } from 'vitest';
import { etagOf as serverEtagOf } from '@svc/core';
import { etagOf } from '../src/offline/etag.js';

// The client names the version its offline write was based on with the server's ETag (If-Match):
// the two implementations must give the same tag for every text, whichever of them changes.
describe('etagOf', () => {
  it('gives the tag the server gives, on many texts (leading zero digits, high bits, non-ASCII)', () => {
    let leadingZero = 0;
    for (let i = 0; i < 5000; i++) {
      const text = JSON.stringify({ id: i.toString(16), title: `t ${i} \u00e9\u{1F600}\u2028`.repeat(i % 7) });
      const tag = etagOf(text);
      expect(tag).toBe(serverEtagOf(text));
      if (tag[1] === '0' || tag[9] === '0') leadingZero++;
    }
    // Tags whose 32-bit halves start with a zero digit were among them (the padding's case).
    expect(leadingZero).toBeGreaterThan(0);
    expect(etagOf('')).toBe(serverEtagOf(''));
  });
});
