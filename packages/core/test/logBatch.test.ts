import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AccessEntry } from '@svc/core';
import { accessText, BATCH_BYTES, LogBatch } from '../src/logBatch.js';

// Lines wait in the batch as UTF-8 bytes; what it gives back must be the lines as they were
// queued, for every entry and text: control characters, text beyond ASCII (lone surrogates too),
// any number, lines past the batch's size.

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  // Latin-1 only: one byte in a Buffer's latin1, two in UTF-8.
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 20 }),
  // Latin-1 only: one byte in a Buffer's latin1, two in UTF-8.
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 20 }),
  fc.string({ unit: fc.constantFrom('a', '/', '\n', '\u0000', '\u007f', '\u2028', 'é', '€', '\ud800', '😀'), maxLength: 20 }),
);
const number = fc.oneof(
  fc.nat({ max: 2000 }),
  fc.integer({ min: 0, max: 2 ** 32 }),
  fc.integer({ min: -1000, max: 0 }),
  fc.double({ noDefaultInfinity: false }),
  fc.constantFrom(0, -0, 0.1, 1.5, 9.9, 10, 2 ** 30, 2 ** 30 + 1, 2 ** 31 + 0.5, 1e21, Number.NaN, 1 / 3),
  fc.nat({ max: 10 ** 7 }).map((n) => n / 10),
);
const entry: fc.Arbitrary<AccessEntry> = fc.record({
  time: fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), text),
  id: fc.oneof(fc.stringMatching(/^[a-f0-9]{12}-[a-z0-9]{1,8}$/), text),
  method: fc.oneof(fc.constantFrom('GET', 'POST', 'DELETE'), text),
  path: fc.oneof(fc.webPath(), text, fc.string({ maxLength: 1200 })),
  status: number,
  ms: number,
  uid: fc.option(text, { nil: undefined }),
  client: fc.oneof(fc.ipV4(), fc.ipV6(), text),
  bytes: number,
  aborted: fc.boolean(),
});

describe('LogBatch', () => {
  it('an access line in the batch is the text formatter\'s line, for any entry', () => {
    fc.assert(
      fc.property(entry, (e) => {
        const batch = new LogBatch();
        batch.addText(accessText(e));
        expect(batch.lines).toBe(1);
        expect(batch.take()).toBe(Buffer.from(accessText(e), 'utf8').toString('utf8'));
      }),
      { numRuns: 3000 },
    );
  });

  it('many lines, text and access mixed, past its size: all of them, in order, and empty after take', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(entry, text.map((t) => `${t}\n`)), { minLength: 1, maxLength: 400 }), (items) => {
        const batch = new LogBatch();
        let expected = '';
        for (const item of items) {
          if (typeof item === 'string') {
            batch.addText(item);
            expected += item;
          } else {
            batch.addText(accessText(item));
            expected += accessText(item);
          }
        }
        expect(batch.lines).toBe(items.length);
        expect(batch.take()).toBe(Buffer.from(expected, 'utf8').toString('utf8'));
        expect(batch.lines).toBe(0);
        expect(batch.take()).toBe('');
      }),
      { numRuns: 200 },
    );
  });

  it('is full past its size, and a line longer than the whole batch is kept whole', () => {
    const batch = new LogBatch();
    const line: AccessEntry = { time: '2026-11-27T00:00:00.000Z', id: 'a-1', method: 'GET', path: '/p', status: 200, ms: 0.5, uid: undefined, client: '127.0.0.1', bytes: 300, aborted: false };
    while (!batch.full) batch.addText(accessText(line));
    expect(batch.lines).toBeGreaterThan(BATCH_BYTES / 100);
    const long = `${'x'.repeat(3 * BATCH_BYTES)}\n`;
    batch.addText(long);
    const taken = batch.take();
    expect(taken.endsWith(long)).toBe(true);
    expect(taken.startsWith(accessText(line))).toBe(true);
  });
});
