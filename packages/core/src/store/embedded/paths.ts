/**
 * What the engine knows of the values stored at each property path of a collection: the kinds of
 * value ever written there (a bit each). The planner translates a condition to SQL exactly only
 * when these facts say the SQL means what the query language means there (no array on the way,
 * no booleans where numbers are compared: SQLite reads `true` as 1); elsewhere it asks SQL for a
 * superset, or nothing, and tests the objects in the process.
 *
 * The facts only grow: a kind seen once stays (an object removed or changed keeps its kinds
 * counted), so they are always a superset of what is stored, which is all the planner needs.
 * They are written in the same transaction as the objects (see Schema), so they hold after a
 * crash too.
 */

export const NULL = 1;
export const BOOL = 2;
export const NUMBER = 4;
export const STRING = 8;
export const OBJECT = 16;
export const ARRAY = 32;
export const DATE = 64;
/** Any kind: a path whose values are not known (see {@link PathFacts.kindsOf}). */
export const ANY = 127;

/** Paths are followed into nested objects this deep; deeper ones are not known (ANY). */
export const MAX_PATH_DEPTH = 4;
/** At most this many paths are known per collection; past it, unknown paths are ANY. */
export const MAX_PATHS = 512;

/** The kind bit of one value. */
export function kindOf(value: unknown): number {
  if (value === null || value === undefined) return NULL;
  switch (typeof value) {
    case 'boolean':
      return BOOL;
    case 'number':
      return NUMBER;
    case 'string':
      return STRING;
    default:
      if (Array.isArray(value)) return ARRAY;
      if (value instanceof Date) return DATE;
      return OBJECT;
  }
}

/** The kinds of values at each path of an object (nested objects followed, arrays not). */
export function kindsIn(doc: Record<string, unknown>, into: Map<string, number> = new Map(), prefix = '', depth = 1): Map<string, number> {
  for (const key in doc) {
    // The top-level `id` is the row's own column, not a path of the text's.
    if (!Object.hasOwn(doc, key) || (key === 'id' && prefix === '')) continue;
    const value = doc[key];
    if (value === undefined) continue;
    const path = prefix === '' ? key : `${prefix}.${key}`;
    const kind = kindOf(value);
    into.set(path, (into.get(path) ?? 0) | kind);
    if (kind === OBJECT && depth < MAX_PATH_DEPTH) kindsIn(value as Record<string, unknown>, into, path, depth + 1);
  }
  return into;
}

/** A collection's facts: kinds per path, and whether some paths went untracked (past the limits). */
export class PathFacts {
  readonly #kinds = new Map<string, number>();
  #overflow = false;

  /** The facts as stored (see Schema). */
  constructor(rows: Iterable<readonly [string, number]> = [], overflow = false) {
    for (const [path, kinds] of rows) this.#kinds.set(path, kinds);
    this.#overflow = overflow;
  }

  get overflow(): boolean {
    return this.#overflow;
  }

  /**
   * The kinds that may be stored at `path`: what was seen, or ANY when the path may hold values
   * that were not tracked (deeper than MAX_PATH_DEPTH, or past MAX_PATHS). A path never seen, and
   * within the limits, holds nothing in any object: its value is missing everywhere (0).
   */
  kindsOf(path: string): number {
    const known = this.#kinds.get(path);
    if (known !== undefined) return known;
    if (this.#overflow) return ANY;
    const segments = path.split('.');
    if (segments.length > MAX_PATH_DEPTH) {
      // Tracked down to MAX_PATH_DEPTH: below an object there, anything may be.
      const top = segments.slice(0, MAX_PATH_DEPTH).join('.');
      if (((this.#kinds.get(top) ?? 0) & OBJECT) !== 0) return ANY;
    }
    return 0;
  }

  /**
   * Whether no object holds an array (or an unknown value) on the way to `path`: a dotted path
   * then names one value per object, which SQLite's JSON path reaches.
   */
  plainWayTo(path: string): boolean {
    let at = path.indexOf('.');
    while (at >= 0) {
      if ((this.kindsOf(path.slice(0, at)) & ARRAY) !== 0) return false;
      at = path.indexOf('.', at + 1);
    }
    return true;
  }

  /** Adds what `doc` holds; answers the paths whose kinds grew (to be written), or undefined. */
  add(doc: Record<string, unknown>): Map<string, number> | undefined {
    // Almost every write adds nothing new: told without building the paths of the object.
    if (this.#knows(doc, '', 1)) return undefined;
    let grown: Map<string, number> | undefined;
    for (const [path, kinds] of kindsIn(doc)) {
      const known = this.#kinds.get(path);
      if (known !== undefined && (known | kinds) === known) continue;
      if (known === undefined && this.#kinds.size >= MAX_PATHS) {
        if (!this.#overflow) {
          this.#overflow = true;
          (grown ??= new Map()).set('', 0);
        }
        continue;
      }
      const next = (known ?? 0) | kinds;
      this.#kinds.set(path, next);
      (grown ??= new Map()).set(path, next);
    }
    return grown;
  }

  /** Whether every path of `doc` (as kindsIn walks them) is known with its kind already. */
  #knows(doc: Record<string, unknown>, prefix: string, depth: number): boolean {
    for (const key in doc) {
      if (!Object.hasOwn(doc, key) || (key === 'id' && prefix === '')) continue;
      const value = doc[key];
      if (value === undefined) continue;
      const path = prefix === '' ? key : `${prefix}.${key}`;
      const kind = kindOf(value);
      const known = this.#kinds.get(path);
      if (known === undefined || (known & kind) === 0) return false;
      if (kind === OBJECT && depth < MAX_PATH_DEPTH && !this.#knows(value as Record<string, unknown>, path, depth + 1)) return false;
    }
    return true;
  }
}
