import { isDeepStrictEqual } from 'node:util';
import type { Doc, UpdateOps } from '../Store.js';

/**
 * The object after `ops`, as MongoDB applies them (a new object; `doc` is not changed). Keys are
 * top-level property names. Throws an Error for what MongoDB refuses too: `$inc` on a value that
 * is not a number, `$push`/`$addToSet`/`$pull` on one that is not an array, two operators on one
 * property, any change of `id`.
 */
export function applyUpdate(doc: Doc, ops: UpdateOps): Doc {
  const out: Record<string, unknown> = { ...doc };
  const touched = new Set<string>();
  const touch = (field: string): void => {
    if (field === 'id') throw new Error('an update cannot change id');
    if (touched.has(field)) throw new Error(`update would change property ${field} twice`);
    touched.add(field);
  };
  for (const [field, value] of entries(ops.$set)) {
    touch(field);
    if (value === undefined) delete out[field];
    else out[field] = value;
  }
  for (const [field] of entries(ops.$unset)) {
    touch(field);
    delete out[field];
  }
  for (const [field, by] of entries(ops.$inc)) {
    touch(field);
    const current = out[field];
    if (typeof by !== 'number') throw new Error(`$inc needs a number for property ${field}`);
    if (current !== undefined && typeof current !== 'number') throw new Error(`cannot $inc property ${field}: not a number`);
    out[field] = (current ?? 0) + by;
  }
  for (const [field, values] of entries(ops.$push)) {
    touch(field);
    out[field] = [...arrayAt(out, field, '$push'), ...values];
  }
  for (const [field, values] of entries(ops.$addToSet)) {
    touch(field);
    const array = [...arrayAt(out, field, '$addToSet')];
    for (const value of values) if (!array.some((el) => isDeepStrictEqual(el, value))) array.push(value);
    out[field] = array;
  }
  for (const [field, values] of entries(ops.$pull)) {
    touch(field);
    // A missing property is left missing (MongoDB does nothing).
    if (out[field] === undefined) continue;
    out[field] = arrayAt(out, field, '$pull').filter((el) => !values.some((v) => isDeepStrictEqual(el, v)));
  }
  return out as Doc;
}

/** Whether `ops` changes nothing at all (no operator with a property). */
export function isEmptyUpdate(ops: UpdateOps): boolean {
  for (const fields of Object.values(ops) as (object | undefined)[]) if (fields !== undefined && Object.keys(fields).length > 0) return false;
  return true;
}

function entries<T>(fields: Record<string, T> | undefined): [string, T][] {
  return fields === undefined ? [] : Object.entries(fields);
}

function arrayAt(doc: Record<string, unknown>, field: string, op: string): unknown[] {
  const value = doc[field];
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new Error(`cannot ${op} property ${field}: not an array`);
  return value as unknown[];
}
