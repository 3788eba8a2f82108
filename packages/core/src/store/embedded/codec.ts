import type { Doc } from '../Store.js';

/**
 * How the embedded engine keeps an object: one JSON text, `id` first, as `JSON.stringify` writes
 * it, except that a Date is `{"$$date": <ms>}` (the old store's line format, so converted files
 * need no rewriting of dates). Property names may not start with `$` nor contain `.` (the old
 * store refused them too): `{"$$date": n}` is then always a date, and a dotted path always names
 * nested properties.
 *
 * The stored text is also what text reads answer (`findJson` joins them), so `JSON.stringify` of
 * what `find` answers must equal it: `find` parses the text, and `JSON.parse` then `JSON.stringify`
 * gives back the same text. A text holding a date is the exception: its answer is written anew
 * (see {@link answerText}).
 */

/**
 * Whether a stored text holds a date (its key `"$$date"`). Searched from the key's `$` and the
 * quote before it checked: a search for a text that starts with `"` stops at every quote of the
 * text (each key and string has two), and over a list of 1,000 objects that was 21% of the CPU of
 * a GET (bench/RESULTS.md, "Round 9 ... GET /todos"); `$` is rare in stored texts (no property
 * name starts with it). The same answer as `text.includes('"$$date"')` (codec.test.ts).
 */
export function holdsDate(text: string): boolean {
  for (let i = text.indexOf('$$date"'); i !== -1; i = text.indexOf('$$date"', i + 1)) if (text.charCodeAt(i - 1) === 34) return true;
  return false;
}

/** The stored text of an object about to be written; throws a TypeError for names it refuses. */
export function encodeDoc(doc: Doc): string {
  const dated = checkNames(doc, 0);
  const ordered = idFirst(doc) ? doc : reorder(doc);
  return dated ? JSON.stringify(ordered, dateReplacer) : JSON.stringify(ordered);
}

/** Whether `id` is the first key (objects made by svc have it there: no copy needed). */
function idFirst(doc: Doc): boolean {
  for (const key in doc) return key === 'id';
  return false;
}

function reorder(doc: Doc): Doc {
  const { id, ...rest } = doc;
  return { id, ...rest };
}

/** The object a stored text holds (a new object at each call: callers may change it). */
export function decodeDoc(text: string): Doc {
  return (holdsDate(text) ? JSON.parse(text, dateReviver) : JSON.parse(text)) as Doc;
}

/** `JSON.stringify(decodeDoc(text))`, made only when the text holds a date. */
export function answerText(text: string): string {
  return holdsDate(text) ? JSON.stringify(JSON.parse(text, dateReviver)) : text;
}

/** Whether the stored text answers as it is (it holds no date). */
export function isAnswerText(text: string): boolean {
  return !holdsDate(text);
}

function dateReplacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  return raw instanceof Date ? { $$date: raw.getTime() } : value;
}

function dateReviver(_key: string, value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const date = (value as Record<string, unknown>).$$date;
  if (typeof date !== 'number') return value;
  for (const key in value) if (key !== '$$date') return value;
  return new Date(date);
}

const MAX_DEPTH = 200;

/**
 * Refuses property names the engine cannot keep (see above) and nesting deeper than SQLite's JSON
 * functions read (they stop at 1,000 levels); answers whether the object holds a Date.
 */
function checkNames(value: unknown, depth: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (value instanceof Date) return true;
  if (depth > MAX_DEPTH) throw new TypeError(`objects nested more than ${MAX_DEPTH} levels deep cannot be stored`);
  let dated = false;
  if (Array.isArray(value)) {
    for (const item of value) if (checkNames(item, depth + 1)) dated = true;
    return dated;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (key.startsWith('$')) throw new TypeError(`property names cannot begin with the $ character (${JSON.stringify(key)})`);
    if (key.includes('.')) throw new TypeError(`property names cannot contain a . (${JSON.stringify(key)})`);
    if (checkNames((value as Record<string, unknown>)[key], depth + 1)) dated = true;
  }
  return dated;
}
