import type { IsolateJob, IsolateRun, OutcomeWriter, RunFlags } from './isolate-types.js';

/**
 * How a run's outcome is written into its job's output (see JobOutput in wire.ts), INSIDE the
 * isolate. Serialised with Function.prototype.toString like isolateMain, so it must not reference
 * anything outside its own body. `itemValues` is where an item's values start (see JobWire.I), `F` wire.ts RUN_FLAGS.
 */
export function makeOutcome(itemValues: number, F: RunFlags): OutcomeWriter {
  const ITEM_VALUES = itemValues;

  /**
   * An outcome equal to the previous one becomes one REPEAT: a trivial On Get over a list (the
   * same property set, the same hide() on every object) then crosses as one number per object.
   * Only outcomes made of SET (primitive values), HIDDEN and PROTECT qualify.
   */
  function repeatIfSame(job: IsolateJob, at: number): void {
    const out = job.out;
    const flags = out[at] as number;
    const last = job.lastPiece;
    job.lastPiece = at;
    if (flags === 0 || (flags & (F.UNSET | F.REST)) !== 0 || last < 0 || out[last] !== flags) return;
    // Equal flags and (with SET) equal key lists mean equal lengths.
    const length = out.length - at;
    for (let i = 1; i < length; i++) {
      const a = out[at + i];
      const b = out[last + i];
      if (a === b && (a === null || typeof a !== 'object')) continue;
      if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return;
      for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return;
    }
    // pop, not `length =`: shortening an array by its length is a runtime call and may shrink its store.
    while (out.length > at) out.pop();
    out.push(F.REPEAT);
    job.lastPiece = last;
  }

  /**
   * Pushes `this`'s changes against the values that were sent onto `out`: the keys set (as a
   * shape index) and their values, then the keys deleted. Returns the flags for what it pushed.
   */
  function diff(run: IsolateRun, out: unknown[]): number {
    const obj = run.thisObj;
    const shape = run.shape;
    const job = run.job;
    const items = job.items;
    const base = run.base + ITEM_VALUES;
    // Changed values go straight to `out` behind a slot for their key list, which is usually the
    // previous run's: it is compared on the way, and the keys are only gathered when it differs.
    const last = job.outShapes[job.lastShape];
    const slot = out.push(job.lastShape) - 1;
    let matches = last !== undefined;
    let changed = 0;
    let kept = 0;
    let i = 0;
    // for-in reads the enum cache (no array per run); inherited keys are skipped.
    for (const key in obj) {
      if (!Object.prototype.hasOwnProperty.call(obj, key)) continue;
      const at = shape[i] === key ? i : shape.indexOf(key);
      i++;
      const value = obj[key];
      // As in JSON, a property set to undefined (or a function) is no property: it stays out, or counts as deleted.
      if (absent(value)) continue;
      if (at >= 0) {
        kept++;
        if (same(value, items[base + at])) continue;
      }
      if (matches && last?.[changed] !== key) matches = false;
      changed++;
      out.push(value);
    }
    let flags = 0;
    if (changed === 0) {
      out.pop();
    } else {
      flags |= F.SET;
      if (!matches || changed !== last?.length) out[slot] = shapeIndex(job, changedKeys(run));
    }
    if (kept < shape.length) {
      flags |= F.UNSET;
      out.push(shape.filter((key) => !Object.prototype.hasOwnProperty.call(obj, key) || absent(obj[key])));
    }
    return flags;
  }

  /** The keys `diff` found changed, found again (only when they differ from the previous run's). */
  function changedKeys(run: IsolateRun): string[] {
    const obj = run.thisObj;
    const base = run.base + ITEM_VALUES;
    const keys: string[] = [];
    for (const key in obj) {
      if (!Object.prototype.hasOwnProperty.call(obj, key) || absent(obj[key])) continue;
      const at = run.shape.indexOf(key);
      if (at < 0 || !same(obj[key], run.job.items[base + at])) keys.push(key);
    }
    return keys;
  }

  const absent = (value: unknown): boolean => value === undefined || typeof value === 'function' || typeof value === 'symbol';

  function shapeIndex(job: IsolateJob, keys: string[]): number {
    const last = job.outShapes[job.lastShape];
    if (last !== undefined && last.length === keys.length) {
      let i = 0;
      while (i < keys.length && last[i] === keys[i]) i++;
      if (i === keys.length) return job.lastShape;
    }
    const id = keys.join('\n');
    let at = (job.outShapeIndex ??= new Map()).get(id);
    if (at === undefined) {
      at = job.outShapes.push(keys) - 1;
      job.outShapeIndex.set(id, at);
    }
    job.lastShape = at;
    return at;
  }

  /** Equality of a value after the run with the JSON value it started from. */
  function same(a: unknown, b: unknown): boolean {
    if (a === b) return true;
    if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
    if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    const ra = a as Record<string, unknown>;
    const rb = b as Record<string, unknown>;
    for (let i = 0; i < ka.length; i++) {
      const k = ka[i] as string;
      if (k !== kb[i] || !same(ra[k], rb[k])) return false;
    }
    return true;
  }

  /** A fresh copy of a JSON value: the item keeps the original to compare with after the run. */
  function copy(value: unknown): unknown {
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map(copy);
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) setOwn(out, key, copy((value as Record<string, unknown>)[key]));
    return out;
  }

  function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
    // "__proto__" from JSON is an own property; plain assignment would set the prototype.
    if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
    else obj[key] = value;
  }

  return { diff, repeatIfSame, copy, setOwn };
}
