import { ScriptRuntimeError } from '../errors.js';
import type { HostApi, RunChanges, RunInput, RunResult } from '../types.js';
import type { SourceUsage } from './analyze.js';
import type { JobOutput, JobTables, JobWire, PackedJob, RunWire } from './wire.js';
import { RUN_FLAGS } from './wire.js';
import { findStackPosition } from './wrap-source.js';

/** A job ready to send: the PackedJob JSON and the host tables it refers to by index. */
export interface EncodedJob {
  json: string;
  hosts: HostApi[];
}

/**
 * A table sent once per job, its entries referred to by index. Entries are found by key: a linear
 * search while the table is short (a job usually has one locals, one host, one label), a Map
 * beyond: jobs are mostly single runs, for which building Maps cost more than the search.
 */
class Table<T, K = T> {
  readonly list: T[] = [];
  private readonly keys: K[] = [];
  private index: Map<K, number> | undefined;

  constructor(private readonly keyOf: (value: T) => K) {}

  indexOf(value: T): number {
    const key = this.keyOf(value);
    let at = this.index ? (this.index.get(key) ?? -1) : this.keys.indexOf(key);
    if (at < 0) {
      at = this.list.push(value) - 1;
      this.keys.push(key);
      if (this.index) this.index.set(key, at);
      else if (this.keys.length > 8) this.index = new Map(this.keys.map((k, i) => [k, i]));
    }
    return at;
  }
}

const identity = <T>(value: T): T => value;

/**
 * Encodes a run or a batch as one JSON string. Locals, hosts and labels are deduplicated by
 * identity: an On Get batch usually shares one `locals` and one `host`, so they cross once. Only
 * the locals and the properties of `this` the script names cross (see analyze.ts).
 */
/** Runs of one job: one input each, or objects that share one input's locals, host and label. */
export type JobInputs = readonly RunInput[] | { shared: SharedInput; objects: readonly Record<string, unknown>[] };

/** What the objects of a runEach() share. */
export type SharedInput = Omit<RunInput, 'thisObj'>;

export function encodeJob(scriptId: number, jobId: number, inputs: JobInputs, usage: SourceUsage): EncodedJob {
  const many = isInputList(inputs) ? inputs : undefined;
  const count = many ? many.length : (inputs as { objects: readonly unknown[] }).objects.length;
  // Identity decides for locals and hosts, so shared objects are sent once.
  const locals = new Table<Record<string, unknown>>(identity);
  const hosts = new Table<HostApi>(identity);
  const labels = new Table<string>(identity);
  const combos = new Table<[number, number, number, number], string>((c) => c.join());
  const noHost: HostApi = {};
  const noLocals: Record<string, unknown> = {};
  const shapes = new Shapes(usage.thisProps);
  const items: unknown[] = [];
  let last: SharedInput | undefined;
  let li = 0;
  let hi = 0;
  let bi = 0;
  let combo = -1;
  let repeatAt = -1;
  for (let i = 0; i < count; i++) {
    const input: SharedInput = many ? (many[i] as RunInput) : (inputs as { shared: SharedInput }).shared;
    const thisObj = many ? (many[i] as RunInput).thisObj : ((inputs as { objects: readonly Record<string, unknown>[] }).objects[i] as Record<string, unknown>);
    // A batch shares its tables: look them up only when they differ from the previous input's.
    const changed = last === undefined || input.locals !== last.locals || input.host !== last.host || input.label !== last.label;
    if (changed) {
      li = locals.indexOf(input.locals ?? noLocals);
      hi = hosts.indexOf(input.host ?? noHost);
      bi = labels.indexOf(input.label ?? '');
    }
    last = input;
    const slot = items.push(combo) - 1;
    const si = shapes.encode(thisObj, items);
    const before = combo;
    if (changed || si !== combos.list[combo]?.[3]) combo = combos.indexOf([li, hi, bi, si]);
    if (combo === before && items.length === slot + 1 && shapes.list[si]?.length === 0) {
      // Another item like the previous one, without values: counted in a trailing -n instead.
      items.pop();
      if (repeatAt >= 0) items[repeatAt] = (items[repeatAt] as number) - 1;
      else repeatAt = items.push(-1) - 1;
      continue;
    }
    items[slot] = combo;
    repeatAt = -1;
  }
  const tables: JobTables = { H: hosts.list.map((host) => hostKey(host)), B: labels.list, K: shapes.list, C: combos.list };
  const L = locals.list.map((v) => localsTable(v, usage.names));
  const packed: PackedJob = [scriptId, jobId, usage.deferred ? 1 : 0, JSON.stringify(tables), isEmptyLocals(L) ? 0 : L, items];
  if (many?.some((input) => startOf(input) !== 0)) packed.push(many.map(startOf));
  return { json: JSON.stringify(packed), hosts: hosts.list };
}

/** One locals table without names: what a script that names no request data gets (PackedJob's 0). */
function isEmptyLocals(L: JobWire['L']): boolean {
  return L.length === 1 && (L[0] as JobWire['L'][number]).k.length === 0;
}

/** The tables text of a script's last single run, reused while the next one has the same tables. */
interface LastTables {
  hostKey: string;
  label: string;
  keys: string[];
  text: string;
}
/** A script's usage, holding its last tables (one per script: no table of every script's). */
type UsageWithTables = SourceUsage & { lastTables?: LastTables };
const NO_HOST: HostApi = Object.freeze({});
const NO_LOCALS: Record<string, unknown> = Object.freeze({});

/**
 * encodeJob for one run (an event of one request), the same PackedJob without the tables
 * encodeJob needs to share entries among many runs: each request pays for its own encoding, and a
 * script's runs mostly send the same tables text, which is then reused.
 */
export function encodeRun(scriptId: number, jobId: number, input: RunInput, usage: SourceUsage): EncodedJob {
  const host = input.host ?? NO_HOST;
  const key = hostKey(host);
  const label = input.label ?? '';
  const item: unknown[] = [0];
  const keys = ownValues(input.thisObj, usage.thisProps, item);
  let last = (usage as UsageWithTables).lastTables;
  if (last === undefined || last.hostKey !== key || last.label !== label || !sameKeys(last.keys, keys)) {
    const tables: JobTables = { H: [key], B: [label], K: [keys], C: [[0, 0, 0, 0]] };
    last = { hostKey: key, label, keys, text: JSON.stringify(JSON.stringify(tables)) };
    (usage as UsageWithTables).lastTables = last;
  }
  const locals = localsTable(input.locals ?? NO_LOCALS, usage.names);
  const L = locals.k.length === 0 ? '0' : JSON.stringify([locals]);
  const start = startOf(input);
  const S = start === 0 ? '' : `,${JSON.stringify([start])}`;
  return { json: `[${scriptId},${jobId},${usage.deferred ? 1 : 0},${last.text},${L},${JSON.stringify(item)}${S}]`, hosts: [host] };
}

/**
 * encodeJob for objects given as columns (runColumns): `values[i * keys.length + k]` is object i's
 * value of keys[k]. The same PackedJob as encodeJob of objects with just those properties, made
 * without any object: a list's stored objects are neither copied nor kept for the run.
 */
export function encodeColumns(
  scriptId: number,
  jobId: number,
  shared: SharedInput,
  keys: readonly string[],
  values: readonly unknown[],
  count: number,
  usage: SourceUsage,
): EncodedJob {
  const host = shared.host ?? NO_HOST;
  const shapes = new Table<string[], string>((list) => list.join('\n'));
  /** The combination of each shape (one locals, host and label table: only the shape varies). */
  const comboOf: number[] = [];
  const combos: [number, number, number, number][] = [];
  const items: unknown[] = [];
  const width = keys.length;
  let lastKeys: string[] | undefined;
  let lastShape = -1;
  let lastCombo = -1;
  let repeatAt = -1;
  for (let i = 0; i < count; i++) {
    const slot = items.push(0) - 1;
    let n = 0;
    let matches = lastKeys !== undefined;
    for (let k = 0; k < width; k++) {
      const value = values[i * width + k];
      if (value === undefined || typeof value === 'function') continue;
      if (matches && lastKeys?.[n] !== keys[k]) matches = false;
      n++;
      items.push(value);
    }
    if (!matches || n !== lastKeys?.length) {
      const present: string[] = [];
      for (let k = 0; k < width; k++) {
        const value = values[i * width + k];
        if (value !== undefined && typeof value !== 'function') present.push(keys[k] as string);
      }
      lastShape = shapes.indexOf(present);
      lastKeys = shapes.list[lastShape];
    }
    let combo = comboOf[lastShape];
    if (combo === undefined) combo = comboOf[lastShape] = combos.push([0, 0, 0, lastShape]) - 1;
    if (combo === lastCombo && n === 0) {
      // Another object like the previous one, without values: counted in a trailing -n.
      items.pop();
      if (repeatAt >= 0) items[repeatAt] = (items[repeatAt] as number) - 1;
      else repeatAt = items.push(-1) - 1;
      continue;
    }
    items[slot] = combo;
    lastCombo = combo;
    repeatAt = -1;
  }
  const tables: JobTables = { H: [hostKey(host)], B: [shared.label ?? ''], K: shapes.list, C: combos };
  const L = [localsTable(shared.locals ?? NO_LOCALS, usage.names)];
  const packed: PackedJob = [scriptId, jobId, usage.deferred ? 1 : 0, JSON.stringify(tables), isEmptyLocals(L) ? 0 : L, items];
  return { json: JSON.stringify(packed), hosts: [host] };
}

/** What a run starts with hidden and protected (PackedJob's 6): 0 for nothing, most runs. */
function startOf(input: RunInput): 0 | [string[], string[]] {
  const hidden = input.hidden ?? NONE;
  const guarded = input.protected ?? NONE;
  return hidden.length === 0 && guarded.length === 0 ? 0 : [hidden.map(String), guarded.map(String)];
}

/** Shapes.encode for one object: pushes its values onto `item`, returns its keys. */
function ownValues(obj: Record<string, unknown>, props: readonly string[] | undefined, item: unknown[]): string[] {
  const source = obj !== null && typeof obj === 'object' ? obj : {};
  const keys: string[] = [];
  for (const key of props ?? Object.keys(source)) {
    const value = source[key];
    if (value === undefined || typeof value === 'function') continue;
    keys.push(key);
    item.push(value);
  }
  return keys;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function isInputList(inputs: JobInputs): inputs is readonly RunInput[] {
  return Array.isArray(inputs);
}

/** The locals the script can name; a key with an undefined value still declares the variable. */
function localsTable(values: Record<string, unknown>, names: ReadonlySet<string> | undefined): JobWire['L'][number] {
  if (names === undefined) return { k: Object.keys(values), v: values };
  const k: string[] = [];
  const v: Record<string, unknown> = {};
  for (const key in values) {
    if (!names.has(key)) continue;
    k.push(key);
    v[key] = values[key];
  }
  return { k, v };
}

/**
 * The shapes of a job's objects. With `props` (the properties the script names) an item carries
 * those of them the object has; without, all of its own properties. Objects of one collection
 * mostly share a shape, so the last one is tried first.
 */
class Shapes {
  private readonly table = new Table<string[], string>((keys) => keys.join('\n'));
  readonly list = this.table.list;
  private last = -1;

  constructor(private readonly props: readonly string[] | undefined) {}

  /** Appends the object's values to `items`; returns the index of its shape. */
  encode(obj: Record<string, unknown>, items: unknown[]): number {
    const source = obj !== null && typeof obj === 'object' ? obj : {};
    const names = this.props ?? Object.keys(source);
    // Most objects have the previous object's shape: compare while pushing, make keys only if not.
    const last = this.list[this.last];
    let count = 0;
    let matches = last !== undefined;
    for (const key of names) {
      const value = source[key];
      // Inherited names never get here: analyze.ts sends the whole object for those.
      if (value === undefined || typeof value === 'function') continue;
      if (matches && last?.[count] !== key) matches = false;
      count++;
      items.push(value);
    }
    if (matches && count === last?.length) return this.last;
    const keys: string[] = [];
    for (const key of names) {
      const value = source[key];
      if (value === undefined || typeof value === 'function') continue;
      keys.push(key);
    }
    return this.indexOf(keys);
  }

  private indexOf(keys: string[]): number {
    this.last = this.table.indexOf(keys);
    return this.last;
  }
}


/**
 * The names of a host table's functions as one string: requests build a new host object each time,
 * but with the same names, so the isolate keeps one tree per distinct string instead of
 * rebuilding it per run (bench/RESULTS.md, "Figures from code comments").
 */
function hostKey(host: HostApi): string {
  let key = '';
  for (const name in host) {
    if (typeof host[name] !== 'function') continue;
    key = key === '' ? name : `${key}\n${name}`;
  }
  return key;
}

/**
 * Turns a finished job into RunResults in input order (see JobOutput), or throws the
 * ScriptRuntimeError of the first run that threw. `thisObj` is the input object with the run's
 * changes applied, the input object itself when the script changed nothing.
 */
export function decodeJob(
  [shapes, flat]: JobOutput,
  objects: readonly Record<string, unknown>[],
  script: { filename: string; prefixLength: number },
  inPlace = false,
): RunResult[] {
  const results: RunResult[] = [];
  const reader = { at: 0 };
  let last = -1;
  for (let i = 0; reader.at < flat.length; i++) {
    const input = objects[i];
    const base = input !== null && typeof input === 'object' ? input : {};
    if (flat[reader.at] === RUN_FLAGS.REPEAT) {
      // The same outcome as the previous run (primitive values only): read that one again.
      const next = reader.at + 1;
      reader.at = last;
      results.push(readRun(shapes, flat, reader, base, script, inPlace));
      reader.at = next;
    } else {
      last = reader.at;
      results.push(readRun(shapes, flat, reader, base, script, inPlace));
    }
  }
  if (results.length !== objects.length) throw new ScriptRuntimeError(`script runtime: ${results.length} outcomes for ${objects.length} runs`, { filename: script.filename });
  return results;
}

/**
 * decodeJob for runColumns: each run's changes as they came (RunChanges), applied to nothing.
 * A REPEAT shares the previous outcome's lists (they are read only).
 */
export function decodeChanges([shapes, flat]: JobOutput, count: number, script: { filename: string; prefixLength: number }): RunChanges[] {
  const results: RunChanges[] = [];
  let previous: RunChanges | undefined;
  let at = 0;
  while (at < flat.length) {
    if (flat[at] === RUN_FLAGS.REPEAT) {
      if (previous === undefined) throw new ScriptRuntimeError('script runtime: a repeat before any outcome', { filename: script.filename });
      results.push(previous);
      at++;
      continue;
    }
    const flags = flat[at++] as number;
    const changes: RunChanges = { hidden: NONE, protected: NONE };
    if (flags & RUN_FLAGS.SET) {
      const assigned = shapes[flat[at++] as number] ?? [];
      const values: unknown[] = [];
      for (let k = 0; k < assigned.length; k++) values.push(flat[at++]);
      changes.assigned = assigned;
      changes.values = values;
    }
    if (flags & RUN_FLAGS.UNSET) changes.deleted = flat[at++] as string[];
    if (flags & RUN_FLAGS.HIDDEN) changes.hidden = flat[at++] as string[];
    if (flags & RUN_FLAGS.PROTECT) changes.protected = flat[at++] as string[];
    if (flags & RUN_FLAGS.REST) {
      const rest = flat[at++] as RunWire;
      if (rest.x) throw runError(rest.x, script);
      if (rest.c) changes.cancelled = rest.c;
      if (rest.e) changes.errors = rest.e;
      if (rest.s) {
        changes.setResultCalled = true;
        changes.result = rest.r;
      }
    }
    results.push(changes);
    previous = changes;
  }
  if (results.length !== count) throw new ScriptRuntimeError(`script runtime: ${results.length} outcomes for ${count} runs`, { filename: script.filename });
  return results;
}

/** Reads the run outcome at `reader.at` and moves `reader.at` past it. */
function readRun(
  shapes: string[][],
  flat: unknown[],
  reader: { at: number },
  input: Record<string, unknown>,
  script: { filename: string; prefixLength: number },
  inPlace: boolean,
): RunResult {
  let at = reader.at;
  const flags = flat[at++] as number;
  let thisObj = input;
  let assigned: string[] | undefined;
  let deleted: string[] | undefined;
  if (flags & (RUN_FLAGS.SET | RUN_FLAGS.UNSET)) {
    if (!inPlace) thisObj = { ...input };
    if (flags & RUN_FLAGS.SET) {
      assigned = shapes[flat[at++] as number] ?? [];
      for (const key of assigned) setOwn(thisObj, key, flat[at++]);
    }
    if (flags & RUN_FLAGS.UNSET) {
      deleted = flat[at++] as string[];
      for (const key of deleted) delete thisObj[key];
    }
  }
  const result: RunResult = {
    thisObj,
    hidden: flags & RUN_FLAGS.HIDDEN ? (flat[at++] as string[]) : NONE,
    protected: flags & RUN_FLAGS.PROTECT ? (flat[at++] as string[]) : NONE,
  };
  if (assigned !== undefined) result.assigned = assigned;
  if (deleted !== undefined) result.deleted = deleted;
  if (flags & RUN_FLAGS.REST) {
    const rest = flat[at++] as RunWire;
    if (rest.x) throw runError(rest.x, script);
    if (rest.c) result.cancelled = rest.c;
    if (rest.e) result.errors = rest.e;
    if (rest.s) {
      result.setResultCalled = true;
      result.result = rest.r;
    }
  }
  reader.at = at;
  return result;
}

/** hidden/protected of the many runs that call neither hide() nor protect(). */
const NONE: readonly string[] = Object.freeze([]);

function runError(x: NonNullable<RunWire['x']>, script: { filename: string; prefixLength: number }): ScriptRuntimeError {
  const filename = script.filename;
  const position = findStackPosition(x.s, filename, script.prefixLength);
  return new ScriptRuntimeError(x.m, { filename, ...position }, { scriptStack: x.s || undefined });
}

function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  // An own "__proto__" from JSON stays a property; plain assignment would set the prototype.
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** The JSON shape of an error thrown by a host function, as the script's callback receives it. */
export function hostErrorToWire(err: unknown): unknown {
  if (err instanceof Error) {
    const extra = err as Error & { status?: unknown; statusCode?: unknown; errors?: unknown };
    const status = typeof extra.status === 'number' ? extra.status : extra.statusCode;
    return {
      message: err.message,
      ...(typeof status === 'number' ? { status } : {}),
      ...(extra.errors !== undefined ? { errors: extra.errors } : {}),
    };
  }
  if (err !== null && typeof err === 'object') return err;
  return { message: String(err) };
}
