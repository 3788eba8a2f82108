import type { Doc, StoredTexts } from '../Store.js';
import { answerText, decodeDoc } from './codec.js';

const ABSENT = -1;
const UNKNOWN = -2;

/**
 * findTexts' answer for objects given by their stored texts (and the objects, when already read):
 * each answer text, the picked values (copies), and where each value is in its text (see
 * StoredTexts). Nothing is kept between reads: the stored text is the kept text, and a write
 * replaces it in the same transaction, so there is nothing to invalidate.
 */
export function textsOf(stored: readonly string[], docs: readonly (Doc | undefined)[], pick: readonly string[]): StoredTexts {
  const count = stored.length;
  const width = pick.length;
  const texts = new Array<string>(count);
  const values = new Array<unknown>(count * width);
  const spans = new Array<number>(count * width * 2);
  for (let i = 0; i < count; i++) {
    const text = answerText(stored[i] as string);
    texts[i] = text;
    if (width === 0) continue;
    const doc = docs[i] ?? decodeDoc(stored[i] as string);
    for (let k = 0; k < width; k++) {
      const key = pick[k] as string;
      const at = (i * width + k) * 2;
      if (key === 'id') {
        values[i * width + k] = doc.id;
        spans[at] = UNKNOWN;
        spans[at + 1] = UNKNOWN;
        continue;
      }
      const own = Object.hasOwn(doc, key);
      values[i * width + k] = own ? doc[key] : undefined;
      const [start, end] = findSpan(doc, own, text, key);
      spans[at] = start;
      spans[at + 1] = end;
    }
  }
  return { texts, values, spans };
}

/**
 * Where the value of `key` is in the text: [start, end), ABSENT when the text does not name it,
 * UNKNOWN when a search cannot tell (the name occurs twice: a nested object's key; or is not
 * followed by the value). Inside JSON strings every `"` is escaped, so a name found once, of a
 * property the object has, is that property's.
 */
function findSpan(doc: Doc, own: boolean, text: string, key: string): [number, number] {
  const name = `${JSON.stringify(key)}:`;
  const at = text.indexOf(name);
  if (at < 0) return own ? [UNKNOWN, UNKNOWN] : [ABSENT, ABSENT];
  if (!own || text.includes(name, at + name.length)) return [UNKNOWN, UNKNOWN];
  const value = JSON.stringify(doc[key]) as string | undefined;
  const start = at + name.length;
  return value !== undefined && text.startsWith(value, start) ? [start, start + value.length] : [UNKNOWN, UNKNOWN];
}
