import { ScriptRuntimeError } from '../errors.js';
import type { HostApi, RunInput, RunResult } from '../types.js';
import type { SourceUsage } from './analyze.js';
import type { JobOutput, JobWire, RunWire } from './wire.js';
import { RUN_FLAGS } from './wire.js';
import { findStackPosition } from './wrap-source.js';

/** A job ready to send: the JSON string and the host tables it refers to by index. */
export interface EncodedJob {
  json: string;
  hosts: HostApi[];
}

/** Returns the index of `value` in `list`, adding it when new; identity decides, so shared objects are sent once. */
function indexOf<T>(list: T[], index: Map<T, number>, value: T): number {
  let at = index.get(value);
  if (at === undefined) {
    at = list.push(value) - 1;
    index.set(value, at);
  }
  return at;
}

/**
 * Encodes a run or a batch as one JSON string. Locals, hosts and labels are deduplicated by
 * identity: an On Get batch usually shares one `locals` and one `host`, so they cross once. Only
 * the locals and the properties of `this` the script names cross (see analyze.ts).
 */
export function encodeJob(scriptId: number, jobId: number, inputs: readonly RunInput[], usage: SourceUsage): EncodedJob {
  const locals: Record<string, unknown>[] = [];
  const localsIndex = new Map<Record<string, unknown>, number>();
  const hosts: HostApi[] = [];
  const hostsIndex = new Map<HostApi, number>();
  const labels: string[] = [];
  const labelsIndex = new Map<string, number>();
  const noHost: HostApi = {};
  const noLocals: Record<string, unknown> = {};
  const shapes = new Shapes(usage.thisProps);
  const combos: [number, number, number, number][] = [];
  const comboIndex = new Map<string, number>();
  const items: unknown[] = [];
  let last: RunInput | undefined;
  let li = 0;
  let hi = 0;
  let bi = 0;
  let combo = -1;
  for (const input of inputs) {
    // A batch shares its tables: look them up only when they differ from the previous input's.
    const changed = last === undefined || input.locals !== last.locals || input.host !== last.host || input.label !== last.label;
    if (changed) {
      li = indexOf(locals, localsIndex, input.locals ?? noLocals);
      hi = indexOf(hosts, hostsIndex, input.host ?? noHost);
      bi = indexOf(labels, labelsIndex, input.label ?? '');
    }
    last = input;
    const slot = items.push(combo) - 1;
    const si = shapes.encode(input.thisObj, items);
    if (changed || si !== combos[combo]?.[3]) {
      const key = `${li},${hi},${bi},${si}`;
      let at = comboIndex.get(key);
      if (at === undefined) {
        at = combos.push([li, hi, bi, si]) - 1;
        comboIndex.set(key, at);
      }
      combo = at;
    }
    items[slot] = combo;
  }
  const wire: JobWire = {
    s: scriptId,
    j: jobId,
    m: usage.deferred ? 1 : 0,
    L: locals.map((v) => localsTable(v, usage.names)),
    H: hosts.map((host) => hostKey(host)),
    B: labels,
    K: shapes.list,
    C: combos,
    I: items,
  };
  return { json: JSON.stringify(wire), hosts };
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
  readonly list: string[][] = [];
  private readonly byKey = new Map<string, number>();
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
      if (value === undefined || typeof value === 'function' || (this.props !== undefined && !Object.hasOwn(source, key))) continue;
      if (matches && last?.[count] !== key) matches = false;
      count++;
      items.push(value);
    }
    if (matches && count === last?.length) return this.last;
    const keys: string[] = [];
    for (const key of names) {
      const value = source[key];
      if (value === undefined || typeof value === 'function' || (this.props !== undefined && !Object.hasOwn(source, key))) continue;
      keys.push(key);
    }
    return this.indexOf(keys);
  }

  private indexOf(keys: string[]): number {
    const last = this.list[this.last];
    if (last !== undefined && sameKeys(last, keys)) return this.last;
    const id = keys.join('\n');
    let at = this.byKey.get(id);
    if (at === undefined) {
      at = this.list.push(keys) - 1;
      this.byKey.set(id, at);
    }
    this.last = at;
    return at;
  }
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The names of a host table's functions as one string: requests build a new host object each time,
 * but with the same names, so the isolate keeps one tree per distinct string instead of
 * rebuilding it per run (about 1 µs per name per run otherwise).
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
  inputs: readonly RunInput[],
  script: { filename: string; prefixLength: number },
): RunResult[] {
  const results: RunResult[] = [];
  let at = 0;
  for (let i = 0; at < flat.length; i++) {
    const flags = flat[at++] as number;
    const input = inputs[i]?.thisObj;
    let thisObj: Record<string, unknown> = input !== null && typeof input === 'object' ? input : {};
    if (flags & (RUN_FLAGS.SET | RUN_FLAGS.UNSET)) {
      thisObj = { ...thisObj };
      if (flags & RUN_FLAGS.SET) {
        const keys = shapes[flat[at++] as number] ?? [];
        for (const key of keys) setOwn(thisObj, key, flat[at++]);
      }
      if (flags & RUN_FLAGS.UNSET) for (const key of flat[at++] as string[]) delete thisObj[key];
    }
    const result: RunResult = {
      thisObj,
      hidden: flags & RUN_FLAGS.HIDDEN ? (flat[at++] as string[]) : NONE,
      protected: flags & RUN_FLAGS.PROTECT ? (flat[at++] as string[]) : NONE,
    };
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
    results.push(result);
  }
  if (results.length !== inputs.length) throw new ScriptRuntimeError(`script runtime: ${results.length} outcomes for ${inputs.length} runs`, { filename: script.filename });
  return results;
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
