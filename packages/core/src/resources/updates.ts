import type { Doc, UpdateOps } from '../store/Store.js';
import type { EventOutcome } from './events.js';

/**
 * The store operations that turn `previous` into `next`: scripts may change or add properties (all
 * kept), `guardedProps` (protect(), store-only fields) stay unchanged, and modifiers go to the
 * store as such so concurrent increments are never lost.
 */
export function diffUpdate(previous: Doc, next: Record<string, unknown>, modifiers: UpdateOps, guardedProps: readonly string[]): UpdateOps {
  const ops: UpdateOps = {};
  const guarded = new Set([...guardedProps, 'id']);
  const modified = new Set(
    [...Object.keys(modifiers.$inc ?? {}), ...Object.keys(modifiers.$push ?? {}), ...Object.keys(modifiers.$pull ?? {}), ...Object.keys(modifiers.$addToSet ?? {})],
  );
  for (const key of Object.keys(next)) {
    if (guarded.has(key) || modified.has(key)) continue;
    const value = next[key];
    if (value === undefined) continue;
    if (!deepEqual(previous[key], value)) (ops.$set ??= {})[key] = value;
  }
  for (const key of Object.keys(previous)) {
    if (!guarded.has(key) && !modified.has(key) && !Object.hasOwn(next, key)) (ops.$unset ??= {})[key] = true;
  }
  for (const kind of ['$inc', '$push', '$pull', '$addToSet'] as const) {
    const source = modifiers[kind];
    if (!source) continue;
    for (const key of Object.keys(source)) {
      if (guarded.has(key)) continue;
      (ops[kind] ??= {} as never)[key] = source[key] as never;
    }
  }
  return ops;
}

/** The values scripts see on update: the modifiers applied to a copy (the store applies them for real). */
export function applyModifiersLocally(object: Record<string, unknown>, modifiers: UpdateOps): void {
  for (const [key, by] of Object.entries(modifiers.$inc ?? {})) {
    const current = object[key];
    object[key] = (typeof current === 'number' ? current : 0) + by;
  }
  for (const [key, values] of Object.entries(modifiers.$push ?? {})) {
    const current = object[key];
    object[key] = [...(Array.isArray(current) ? current : []), ...values];
  }
  for (const [key, values] of Object.entries(modifiers.$addToSet ?? {})) {
    const current = object[key];
    const next = Array.isArray(current) ? [...current] : [];
    for (const v of values) if (!next.some((item) => deepEqual(v, item))) next.push(v);
    object[key] = next;
  }
  for (const [key, values] of Object.entries(modifiers.$pull ?? {})) {
    const current = object[key];
    if (Array.isArray(current)) object[key] = current.filter((item) => !values.some((v) => deepEqual(v, item)));
  }
}

export function applyHidden(outcome: EventOutcome): Record<string, unknown> {
  return outcome.hidden.length === 0 ? outcome.object : hideFrom(outcome.object, outcome.hidden);
}

export function hideFrom(object: Record<string, unknown>, hidden: readonly string[]): Record<string, unknown> {
  if (hidden.length === 0) return object;
  const out = { ...object };
  for (const key of hidden) delete out[key];
  return out;
}

/** Structural equality of JSON values. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
