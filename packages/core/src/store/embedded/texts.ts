import type { Doc, StoredTexts } from '../Store.js';
import { answerText, decodeDoc } from './codec.js';
import type { HotTexts } from './hotTexts.js';

const ABSENT = -1;
const UNKNOWN = -2;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * findTexts' answer for objects given by their stored texts (and the objects, when already read):
 * each answer text, the picked values (copies), and where each value is in its text (see
 * StoredTexts). Nothing is kept between reads: the stored text is the kept text, and a write
 * replaces it in the same transaction, so there is nothing to invalidate.
 *
 * An object is parsed only when its text cannot tell (see pickFromText): parsing every object of
 * a list for an On Get was most of the list's CPU (bench/RESULTS.md, "On Get lists", i39-cpu-4).
 */
export function textsOf(stored: readonly string[], docs: readonly (Doc | undefined)[], pick: readonly string[], kept?: KeptFacts): StoredTexts {
  const count = stored.length;
  const width = pick.length;
  const texts = new Array<string>(count);
  const values = new Array<unknown>(count * width);
  const spans = new Array<number>(count * width * 2);
  const names = pick.map((key) => `${JSON.stringify(key)}:`);
  const keep = kept !== undefined && width > 0 && width <= MAX_KEPT_NAMES;
  for (let i = 0; i < count; i++) {
    const seq = keep ? (kept.seqs[i] as number) : 0;
    const known = keep ? kept.hot.picked(seq, stored[i] as string, pick) : undefined;
    if (known !== undefined) {
      // Kept with the facts: the answer text (no search of each text for a date again).
      texts[i] = known[width * 3] as string;
      for (let s = 0; s < width * 2; s++) spans[i * width * 2 + s] = known[s] as number;
      for (let k = 0; k < width; k++) values[i * width + k] = known[width * 2 + k];
      continue;
    }
    const text = answerText(stored[i] as string);
    texts[i] = text;
    if (width === 0) continue;
    pickRow(stored[i] as string, text, docs[i], pick, names, i * width, values, spans);
    if (keep) keepRow(kept, seq, stored[i] as string, text, pick, i * width, values, spans);
  }
  return { texts, values, spans };
}

/** Where textsOf may keep what it found, with the texts kept of rows read lately (see HotTexts.keepPicked). */
export interface KeptFacts {
  readonly hot: HotTexts;
  /** Each stored text's row. */
  readonly seqs: readonly number[];
}

/** Facts kept per text for at most this many names (an On Get names a few properties), each string value at most MAX_KEPT_CHARS. */
const MAX_KEPT_NAMES = 4;
const MAX_KEPT_CHARS = 256;

/** The picked values and spans of one object, written at `at` (values) and `at * 2` (spans). */
function pickRow(
  stored: string,
  text: string,
  given: Doc | undefined,
  pick: readonly string[],
  names: readonly string[],
  base: number,
  values: unknown[],
  spans: number[],
): void {
  // A text holding a date answers a text written anew; its values are Dates: parsed.
  let doc = text === stored ? given : (given ?? decodeDoc(stored));
  for (let k = 0; k < pick.length; k++) {
    const key = pick[k] as string;
    const at = base + k;
    const name = names[k] as string;
    const fromText = doc === undefined && pickFromText(text, name, values, at, spans);
    if (key === 'id') {
      // Its place is not given (nothing splices an id).
      if (!fromText) values[at] = (doc ??= decodeDoc(stored)).id;
      spans[at * 2] = UNKNOWN;
      spans[at * 2 + 1] = UNKNOWN;
      continue;
    }
    if (fromText) continue;
    doc ??= decodeDoc(stored);
    const own = Object.hasOwn(doc, key);
    values[at] = own ? doc[key] : undefined;
    const [start, end] = findSpan(doc, own, text, key, name);
    spans[at * 2] = start;
    spans[at * 2 + 1] = end;
  }
}

/**
 * Keeps one object's spans, values and answer text with its stored text when every value is
 * primitive (an object value is handed out as a new copy each time: callers may change it) and
 * short.
 */
function keepRow(
  kept: KeptFacts,
  seq: number,
  stored: string,
  text: string,
  pick: readonly string[],
  base: number,
  values: readonly unknown[],
  spans: readonly number[],
): void {
  const width = pick.length;
  // Spans, values, then the answer text (the stored text itself unless it holds a date).
  const row = new Array<unknown>(width * 3 + 1);
  let bytes = 16 * row.length + (text === stored ? 0 : text.length);
  row[width * 3] = text;
  for (let k = 0; k < width; k++) {
    const value = values[base + k];
    if (value !== null && typeof value === 'object') return;
    if (typeof value === 'string') {
      if (value.length > MAX_KEPT_CHARS) return;
      bytes += value.length;
    }
    row[width * 2 + k] = value;
  }
  for (let s = 0; s < width * 2; s++) row[s] = spans[base * 2 + s];
  kept.hot.keepPicked(seq, stored, pick, row, bytes);
}

/**
 * What findSpan and the parsed object would give for `name` (`"key":`), read from the text alone
 * when it can tell; false when not (the name occurs twice). The text is JSON.stringify of the
 * object with no date (see codec.ts), which writes each own property once as `"key":` at the top
 * level and escapes every `"` inside strings, so:
 * - a name not in the text is not the object's (ABSENT, undefined);
 * - a name found once at the top level (depth 1, outside any string) is the object's property, and
 *   the JSON value after it is JSON.stringify of its value, parsed here alone (a copy, as parsing
 *   the object gives);
 * - a name found once elsewhere (a nested object's key, or inside a key such as `x"key`) is not
 *   the object's: UNKNOWN spans, as findSpan answers for it.
 */
function pickFromText(text: string, name: string, values: unknown[], at: number, spans: number[]): boolean {
  const found = text.indexOf(name);
  if (found < 0) {
    values[at] = undefined;
    spans[at * 2] = ABSENT;
    spans[at * 2 + 1] = ABSENT;
    return true;
  }
  if (text.includes(name, found + name.length)) return false;
  if (!atTopLevel(text, found)) {
    values[at] = undefined;
    spans[at * 2] = UNKNOWN;
    spans[at * 2 + 1] = UNKNOWN;
    return true;
  }
  const start = found + name.length;
  const end = valueEnd(text, start);
  values[at] = JSON.parse(text.slice(start, end));
  spans[at * 2] = start;
  spans[at * 2 + 1] = end;
  return true;
}

/** Whether position `at` of an object's JSON text is directly in the object, outside any string. */
function atTopLevel(text: string, at: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < at; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  // i stopped past `at` when the last character before it was an escaping backslash: in a string.
  return !inString && depth === 1;
}

/** The end of the JSON value starting at `start` of a member of a JSON.stringify object text. */
function valueEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) {
        inString = false;
        if (depth === 0) return i + 1;
      }
    } else if (c === QUOTE) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      // The object's own closing brace ends a last primitive member.
      if (depth === 0) return i;
      if (--depth === 0) return i + 1;
    } else if (c === 0x2c && depth === 0) return i;
  }
  return text.length;
}

/**
 * Where the value of `key` is in the text: [start, end), ABSENT when the text does not name it,
 * UNKNOWN when a search cannot tell (the name occurs twice: a nested object's key; or is not
 * followed by the value). Inside JSON strings every `"` is escaped, so a name found once, of a
 * property the object has, is that property's.
 */
function findSpan(doc: Doc, own: boolean, text: string, key: string, name: string): [number, number] {
  const at = text.indexOf(name);
  if (at < 0) return own ? [UNKNOWN, UNKNOWN] : [ABSENT, ABSENT];
  if (!own || text.includes(name, at + name.length)) return [UNKNOWN, UNKNOWN];
  const value = JSON.stringify(doc[key]) as string | undefined;
  const start = at + name.length;
  return value !== undefined && text.startsWith(value, start) ? [start, start + value.length] : [UNKNOWN, UNKNOWN];
}
