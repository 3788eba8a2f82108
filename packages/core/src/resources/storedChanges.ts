import type { StoredTexts } from '../store/Store.js';
import type { GetChanges } from './events.js';
import { hideFrom } from './updates.js';

/**
 * The JSON text of a list after On Get, from the stored objects' kept texts and what each run
 * changed (runGetChanges), without the objects: an unchanged object answers its text as it is; a
 * changed one its text with the changes spliced in where that is exactly what JSON.stringify
 * writes for the changed object (a changed property keeps its place, a new one goes last, a
 * deleted or hidden one goes); only the others are parsed and serialised again. Cancelled objects
 * (null) are left out.
 *
 * `rows` is the store's findTexts answer for `keys` (the properties On Get reads): its spans say
 * where those properties' values are in each text.
 */
export function listFromChanges(rows: StoredTexts, keys: readonly string[], changes: readonly (GetChanges | null)[]): string {
  const splicer = new Splicer(rows, keys);
  // Joined once at the end: a string grown by += is a tree of 1,000 pieces that writing the
  // answer must flatten first (measured: join is the cheaper of the two here).
  const parts: string[] = [];
  for (let i = 0; i < changes.length; i++) {
    const change = changes[i];
    if (change === null || change === undefined) continue;
    const text = rows.texts[i] as string;
    parts.push(splicer.spliced(i, text, change) ?? reserialised(text, change));
  }
  return `[${parts.join(',')}]`;
}

/**
 * What the object path answers: the stored object (its text parsed: the text is that object's
 * JSON) with the run's changes set and deleted in place, then without its hidden properties.
 */
function reserialised(text: string, change: GetChanges): string {
  const object = JSON.parse(text) as Record<string, unknown>;
  for (let k = 0; k < change.assigned.length; k++) setOwn(object, change.assigned[k] as string, change.values[k]);
  for (const key of change.deleted) delete object[key];
  return JSON.stringify(hideFrom(object, change.hidden));
}

function setOwn(object: Record<string, unknown>, key: string, value: unknown): void {
  // An own "__proto__" stays a property; plain assignment would set the prototype.
  if (key === '__proto__') Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}

/** A piece of a text replaced: [start, end) by `with` ('' removes it). */
interface Edit {
  start: number;
  end: number;
  with: string;
}

/**
 * Splices runs' changes into stored texts. Runs of one list mostly make the same changes with the
 * same values (a shared outcome): the JSON of a primitive value is kept from the previous object.
 */
class Splicer {
  private readonly width: number;
  private lastChange: GetChanges | undefined;
  /** Per key of lastChange.assigned: its `"name":` and its value's JSON. */
  private names: string[] = [];
  private jsons: (string | undefined)[] = [];
  /** What is appended for lastChange when every property it assigned is new to the object. */
  private allNewExtra: string | undefined;
  /** The members lastChange appends when it only adds properties, and their columns in `rows`. */
  private appended: string | undefined;
  private appendedColumns: number[] = [];

  constructor(
    private readonly rows: StoredTexts,
    private readonly keys: readonly string[],
  ) {
    this.width = keys.length;
  }

  /** The text with the change spliced in, or undefined when splicing cannot be what JSON.stringify writes. */
  spliced(i: number, text: string, change: GetChanges): string | undefined {
    const { assigned, deleted, hidden } = change;
    if (assigned.length === 0 && deleted.length === 0 && hidden.length === 0) return text;
    if (change !== this.lastChange) this.learn(change);
    // The common case (On Get adds the same properties to every object): when the store says the
    // object has none of them, the text gets the change's members appended, made once.
    if (this.appended !== undefined && this.absentFromRow(i)) return text === '{}' ? `{${this.appended.slice(1)}}` : `${text.slice(0, -1)}${this.appended}}`;
    const edits: Edit[] = [];
    let extra = '';
    // Every assigned property new to the object so far: then the text appended is the one kept
    // for this change (objects of a list mostly get the same new properties and values).
    let allNew = true;
    for (let k = 0; k < assigned.length; k++) {
      const key = assigned[k] as string;
      if (hidden.includes(key)) continue; // removed below
      const span = this.spanOf(i, text, key);
      if (span === undefined) return undefined;
      const json = this.jsons[k];
      if (json === undefined) return undefined;
      if (span[0] >= 0) {
        if (allNew && this.allNewExtra !== undefined) extra = this.extraBefore(k, hidden);
        allNew = false;
        edits.push({ start: span[1], end: span[2], with: json });
      }
      // New: objects list array-index names first, and "__proto__" is set apart: the object path.
      else if (key === '__proto__' || isIndexName(key)) return undefined;
      else if (!allNew || this.allNewExtra === undefined) extra += `,${this.names[k] as string}${json}`;
    }
    if (allNew) {
      if (this.allNewExtra === undefined) this.allNewExtra = extra;
      else extra = this.allNewExtra;
    }
    for (const list of [deleted, hidden]) {
      for (const key of list) {
        if (list === hidden && deleted.includes(key)) continue;
        const span = this.spanOf(i, text, key);
        if (span === undefined) return undefined;
        if (span[0] < 0) continue; // not there: nothing to remove
        // The member and the comma before it; the first member's comma after it is dropped below.
        edits.push({ start: text.charCodeAt(span[0] - 1) === COMMA ? span[0] - 1 : span[0], end: span[2], with: '' });
      }
    }
    let out = apply(text, edits);
    // The first member went: the comma of the next one now follows the brace.
    if (out.charCodeAt(1) === COMMA) out = `{${out.slice(2)}`;
    if (extra === '') return out;
    return out === '{}' ? `{${extra.slice(1)}}` : `${out.slice(0, -1)}${extra}}`;
  }

  /** The text appended for the assigned properties before the k-th, all of them new to the object. */
  private extraBefore(k: number, hidden: readonly string[]): string {
    let extra = '';
    for (let j = 0; j < k; j++) if (!hidden.includes(this.lastChange?.assigned[j] as string)) extra += `,${this.names[j] as string}${this.jsons[j] as string}`;
    return extra;
  }

  private learn(change: GetChanges): void {
    this.allNewExtra = undefined;
    const keep = this.lastChange !== undefined && this.lastChange.assigned === change.assigned;
    const previous = this.lastChange;
    this.lastChange = change;
    if (!keep) this.names = change.assigned.map((key) => `${JSON.stringify(key)}:`);
    const jsons: (string | undefined)[] = [];
    for (let k = 0; k < change.assigned.length; k++) {
      const value = change.values[k];
      const same = keep && (value === null || typeof value !== 'object') && value === previous?.values[k];
      jsons.push(same ? this.jsons[k] : (JSON.stringify(value) as string | undefined));
    }
    this.jsons = jsons;
    this.appended = undefined;
    if (change.deleted.length > 0 || change.hidden.length > 0) return;
    const columns: number[] = [];
    let appended = '';
    for (let k = 0; k < change.assigned.length; k++) {
      const key = change.assigned[k] as string;
      const column = this.keys.indexOf(key);
      const json = jsons[k];
      // Array-index names and "__proto__" are not appended last by JSON.stringify: the general path.
      if (column < 0 || json === undefined || key === '__proto__' || isIndexName(key)) return;
      columns.push(column);
      appended += `,${this.names[k] as string}${json}`;
    }
    this.appendedColumns = columns;
    this.appended = appended;
  }

  /** Whether the store's spans say text i has none of the properties `appended` adds. */
  private absentFromRow(i: number): boolean {
    const base = i * this.width;
    for (const column of this.appendedColumns) if (this.rows.spans[(base + column) * 2] !== -1) return false;
    return true;
  }

  /**
   * Where the top-level property `key` is in text i: [name start, value start, value end], or
   * [-1, -1, -1] when the object has no such property; undefined when the text cannot be read.
   * From the store's spans when they tell, else by reading the text's members.
   */
  private spanOf(i: number, text: string, key: string): readonly [number, number, number] | undefined {
    const k = this.keys.indexOf(key);
    if (k >= 0) {
      const at = (i * this.width + k) * 2;
      const start = this.rows.spans[at] as number;
      if (start === -1) return NONE;
      if (start >= 0) {
        const name = JSON.stringify(key).length + 1;
        return [start - name, start, this.rows.spans[at + 1] as number];
      }
    }
    return memberSpan(text, key);
  }
}

const COMMA = 44;
const NONE: readonly [number, number, number] = [-1, -1, -1];

/** The text with the edits made (they do not overlap: each is a different member). */
function apply(text: string, edits: Edit[]): string {
  if (edits.length === 0) return text;
  if (edits.length > 1) edits.sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const edit of edits) {
    out += text.slice(at, edit.start) + edit.with;
    at = edit.end;
  }
  return out + text.slice(at);
}

/**
 * The top-level member `key` of an object's JSON text as JSON.stringify writes it (no white
 * space): [name start, value start, value end], [-1, -1, -1] when there is none, undefined when
 * the text is not such an object.
 */
export function memberSpan(text: string, key: string): readonly [number, number, number] | undefined {
  if (text.charCodeAt(0) !== 123 /* { */) return undefined;
  const name = JSON.stringify(key);
  let at = 1;
  if (text.charCodeAt(at) === 125 /* } */) return NONE;
  while (at < text.length) {
    const nameStart = at;
    const nameEnd = skipString(text, at);
    if (nameEnd < 0 || text.charCodeAt(nameEnd) !== 58 /* : */) return undefined;
    const valueStart = nameEnd + 1;
    const valueEnd = skipValue(text, valueStart);
    if (valueEnd < 0) return undefined;
    if (nameEnd - nameStart === name.length && text.startsWith(name, nameStart)) return [nameStart, valueStart, valueEnd];
    const next = text.charCodeAt(valueEnd);
    if (next === 125 /* } */) return NONE;
    if (next !== COMMA) return undefined;
    at = valueEnd + 1;
  }
  return undefined;
}

/** The end of the JSON string starting at `at` (after its closing quote), -1 if none starts there. */
function skipString(text: string, at: number): number {
  if (text.charCodeAt(at) !== 34 /* " */) return -1;
  for (let i = at + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 92 /* \ */) i++;
    else if (c === 34) return i + 1;
  }
  return -1;
}

/** The end of the JSON value starting at `at`, -1 if the text ends first. */
function skipValue(text: string, at: number): number {
  const c = text.charCodeAt(at);
  if (c === 34) return skipString(text, at);
  if (c !== 123 && c !== 91 /* [ */) {
    // A number, true, false or null: up to the next delimiter.
    let i = at;
    while (i < text.length) {
      const d = text.charCodeAt(i);
      if (d === COMMA || d === 125 || d === 93 /* ] */) break;
      i++;
    }
    return i > at ? i : -1;
  }
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const d = text.charCodeAt(i);
    if (d === 34) {
      i = skipString(text, i) - 1;
      if (i < 0) return -1;
    } else if (d === 123 || d === 91) depth++;
    else if (d === 125 || d === 93) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** Names that objects list before the others, in numeric order ("0", "42", not "01"). */
function isIndexName(key: string): boolean {
  const first = key.charCodeAt(0);
  if (first < 48 || first > 57) return false;
  return String(Number(key)) === key && Number(key) < 4294967295;
}
