import { describe, expect, it } from 'vitest';
import { answerText, decodeDoc, encodeDoc, holdsDate, isAnswerText } from '../../../src/store/embedded/codec.js';

/**
 * holdsDate is the engine's test for a date in a stored text, run on every text a list answers: it
 * must answer exactly what `text.includes('"$$date"')` answers (the simple test it replaced, 3-6x
 * slower: bench/RESULTS.md round 9), on texts the codec writes and on any other text.
 */
describe('codec: holdsDate', () => {
  const plain = (text: string) => text.includes('"$$date"');

  it('answers as includes(\'"$$date"\') on tricky texts', () => {
    const texts = [
      '',
      '$$date"',
      '"$$date"',
      '$$date""$$date"',
      'x$$date"y"$$date"',
      '"$$date\\"',
      '\\"$$date\\"',
      '$$date"$$date"$$date"',
      '{"id":"a","s":"$$date\\""}',
      '{"id":"a","at":{"$$date":1}}',
      '{"id":"a","s":"a\\"$$date\\"b"}',
      '"$$dat"',
      '"$$date',
      '$$$date"',
      '"$$$date"',
    ];
    for (const text of texts) expect(holdsDate(text), text).toBe(plain(text));
  });

  it('answers as includes on 20,000 random texts over the characters that matter', () => {
    const alphabet = ['"', '$', 'd', 'a', 't', 'e', '\\', 'x', '{', ':'];
    let seed = 7;
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    let withDate = 0;
    for (let n = 0; n < 20_000; n++) {
      let text = '';
      const length = Math.floor(next() * 24);
      for (let i = 0; i < length; i++) text += next() < 0.15 ? '$$date"' : (alphabet[Math.floor(next() * alphabet.length)] as string);
      if (plain(text)) withDate++;
      expect(holdsDate(text)).toBe(plain(text));
    }
    // Both answers were exercised.
    expect(withDate).toBeGreaterThan(1000);
    expect(withDate).toBeLessThan(19_000);
  });

  it('texts the codec writes: dates found, values that only look like the key are not', () => {
    const dated = encodeDoc({ id: 'a', at: new Date(5) });
    expect(holdsDate(dated)).toBe(true);
    expect(isAnswerText(dated)).toBe(false);
    expect(decodeDoc(dated)).toEqual({ id: 'a', at: new Date(5) });
    expect(answerText(dated)).toBe(JSON.stringify({ id: 'a', at: new Date(5) }));
    for (const s of ['"$$date"', '$$date"', 'a"$$date":1']) {
      const text = encodeDoc({ id: 'b', s });
      expect(holdsDate(text)).toBe(false);
      expect(answerText(text)).toBe(text);
      expect(decodeDoc(text)).toEqual({ id: 'b', s });
    }
  });
});
