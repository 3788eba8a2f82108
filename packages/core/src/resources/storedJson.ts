import type { EventOutcome } from './events.js';
import { applyHidden } from './updates.js';

/**
 * The JSON text of a list after On Get, from the stored objects' kept texts: an object the script
 * left as it was answers its stored text as it is, one it gave new properties answers that text
 * with them appended, and only the others are serialised again. Serialising 1,000 objects was the
 * largest part of a scripted list (bench/RESULTS.md, issue 21), though a typical On Get adds or
 * changes a property or two. Cancelled objects (null) are left out, as in the list of objects.
 *
 * `texts[i]` must be the JSON text of the i-th object as it was before the run (the run may have
 * changed the object itself: runGetBatch works in place).
 */
export function listJson(texts: readonly string[], outcomes: readonly (EventOutcome | null)[]): string {
  const patcher = new Patcher();
  let out = '[';
  let first = true;
  for (let i = 0; i < outcomes.length; i++) {
    const outcome = outcomes[i];
    if (outcome === null || outcome === undefined) continue;
    const text = patcher.patched(texts[i] as string, outcome) ?? JSON.stringify(applyHidden(outcome));
    out += first ? text : `,${text}`;
    first = false;
  }
  return `${out}]`;
}

/** The JSON text of one object after On Get (GET by id), from its stored text: see listJson. */
export function objectJson(text: string, outcome: EventOutcome, patcher = new Patcher()): string {
  return patcher.patched(text, outcome) ?? JSON.stringify(applyHidden(outcome));
}

/**
 * The stored text with the run's new properties appended, when that is exactly what
 * JSON.stringify would write for the outcome: nothing deleted or hidden, and every property the
 * script assigned new to the object (its name does not occur in the stored text at all) and not
 * an array-index name (objects list those first). Otherwise undefined: the caller serialises the
 * object.
 *
 * Runs of one list mostly assign the same properties the same values (the runtime hands out one
 * key list per distinct set of keys): the text appended for the previous object is reused while
 * its key list and primitive values are the same.
 */
export class Patcher {
  private lastKeys: readonly string[] | undefined;
  /** `"name":` of each key of lastKeys, for the test that the stored text has no such property. */
  private names: string[] = [];
  private readonly lastValues: unknown[] = [];
  private lastExtra: string | undefined;

  patched(text: string, outcome: EventOutcome): string | undefined {
    const changes = outcome.changes;
    if (changes === undefined || changes.deleted.length > 0 || outcome.hidden.length > 0) return undefined;
    const keys = changes.assigned;
    if (keys.length === 0) return text;
    if (keys !== this.lastKeys) this.learn(keys);
    const object = outcome.object;
    let same = this.lastExtra !== undefined;
    for (let k = 0; k < keys.length; k++) {
      // A property the stored object had (now changed): appending would name it twice.
      if (text.includes(this.names[k] as string)) return undefined;
      const value = object[keys[k] as string];
      if (same && (value !== this.lastValues[k] || (value !== null && typeof value === 'object'))) same = false;
    }
    const extra = same ? (this.lastExtra as string) : this.extraOf(keys, object);
    if (extra === undefined) return undefined;
    if (extra === '') return text;
    return text === '{}' ? `{${extra.slice(1)}}` : `${text.slice(0, -1)}${extra}}`;
  }

  private learn(keys: readonly string[]): void {
    this.lastKeys = keys;
    this.names = keys.map((key) => `${JSON.stringify(key)}:`);
    this.lastExtra = undefined;
  }

  /** The text to append for `keys`, or undefined when appending cannot be what JSON.stringify writes. */
  private extraOf(keys: readonly string[], object: Record<string, unknown>): string | undefined {
    let extra = '';
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k] as string;
      if (key === '__proto__' || isIndexName(key)) return (this.lastExtra = undefined);
      const value = object[key];
      this.lastValues[k] = value;
      const json = JSON.stringify(value) as string | undefined;
      // As in JSON.stringify of the object: a property whose value has no JSON is left out.
      if (json !== undefined) extra += `,${this.names[k] as string}${json}`;
    }
    this.lastExtra = extra;
    return extra;
  }
}

/** Names that objects list before the others, in numeric order ("0", "42", not "01"). */
function isIndexName(key: string): boolean {
  const first = key.charCodeAt(0);
  if (first < 48 || first > 57) return false;
  return String(Number(key)) === key && Number(key) < 4294967295;
}
