import { describe, expect, it } from 'vitest';
import { createId, createSessionId, randomHex } from '../src/ids.js';

describe('ids from the pooled CSPRNG', () => {
  it('object ids are 16 hex characters and never repeat, across many refills of the pool', () => {
    const ids = new Set<string>();
    // 8 bytes each: 4096-byte pool refilled every 512 ids; 20,000 ids cross it ~40 times.
    for (let i = 0; i < 20_000; i++) {
      const id = createId();
      expect(id).toMatch(/^[0-9a-f]{16}$/);
      ids.add(id);
    }
    expect(ids.size).toBe(20_000);
  });

  it('session ids are 128 hex characters, unique, and mixed sizes never share bytes', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const sid = createSessionId();
      expect(sid).toMatch(/^[0-9a-f]{128}$/);
      seen.add(sid);
      // An odd size in between moves the pool's offset off any alignment.
      seen.add(randomHex(3));
    }
    expect([...seen].filter((s) => s.length === 128)).toHaveLength(2_000);
  });

  it('the bytes look random: every hex digit about equally often', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 4_000; i++) for (const ch of createId()) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    // 64,000 digits: 4,000 of each expected; a stuck or zeroed pool would be far off.
    expect(counts.size).toBe(16);
    for (const n of counts.values()) expect(Math.abs(n - 4_000)).toBeLessThan(400);
  });

  it('refuses sizes it cannot serve', () => {
    expect(() => randomHex(0)).toThrow(RangeError);
    expect(() => randomHex(4097)).toThrow(RangeError);
  });
});
