import { SvcError } from '../errors.js';
import { isPlainObject } from '../query/parseQueryString.js';
import type { UpdateOps } from '../store/Store.js';
import type { BodyKind } from '../http/readBody.js';
import type { PropertyDef } from '../types.js';

/** A request body reduced to a Collection's properties. */
export interface SanitizedBody {
  /** Property values to store, already of the right type. */
  values: Record<string, unknown>;
  /** Unique properties sent as null: removed rather than stored as null, so many objects may lack them. */
  cleared: string[];
  /** Update modifiers ($inc, $push, $pushAll, $pull, $pullAll, $addUnique) as store operations. */
  modifiers: Pick<UpdateOps, '$inc' | '$push' | '$pull' | '$addToSet'>;
  hasModifiers: boolean;
}

const MODIFIERS = new Set(['$inc', '$push', '$pushAll', '$pull', '$pullAll', '$addUnique']);

/**
 * Keeps only a body's known properties whose values fit their type; unknown properties and
 * mismatching values are ignored, as the spec says. A JSON string for a number property is read
 * with parseFloat, as Deployd did. A form body's strings are read as numbers
 * and booleans where the property says so ("5" -> 5, "true"/"on" -> true, "false"/"" -> false).
 * Modifier objects are taken only on update.
 */
export function sanitizeBody(
  body: Record<string, unknown>,
  properties: Record<string, PropertyDef>,
  options: { kind: BodyKind; update: boolean },
): SanitizedBody {
  const out: SanitizedBody = { values: {}, cleared: [], modifiers: {}, hasModifiers: false };
  for (const name of Object.keys(properties)) {
    if (!Object.hasOwn(body, name)) continue;
    const def = properties[name] as PropertyDef;
    const raw = body[name];
    if (isPlainObject(raw) && Object.keys(raw).some((k) => MODIFIERS.has(k))) {
      if (options.update) addModifier(out, name, def, raw);
      continue;
    }
    if (def.unique && (raw === null || (options.kind === 'form' && raw === ''))) {
      out.cleared.push(name);
      continue;
    }
    const value = options.kind === 'form' ? fromForm(raw, def) : raw;
    const accepted = acceptValue(name, value, def);
    if (accepted !== REJECT) out.values[name] = accepted;
  }
  return out;
}

const REJECT = Symbol('reject');

function acceptValue(name: string, value: unknown, def: PropertyDef): unknown {
  if (value === null || value === undefined) {
    // Boolean null/undefined is false; other types may be cleared with null.
    return def.type === 'boolean' ? false : null;
  }
  switch (def.type) {
    case 'string':
      return typeof value === 'string' ? value : REJECT;
    case 'number': {
      // A string is read with parseFloat, as Deployd did ("5" -> 5, "2.5kg" -> 2.5); one that
      // reads as no finite number is ignored (Deployd stored NaN).
      const n = typeof value === 'string' ? Number.parseFloat(value) : value;
      return typeof n === 'number' && Number.isFinite(n) ? n : REJECT;
    }
    case 'boolean':
      return typeof value === 'boolean' ? value : REJECT;
    case 'object':
      if (!isPlainObject(value)) return REJECT;
      assertStorableKeys(name, value, 0);
      return value;
    case 'array':
      if (!Array.isArray(value)) return REJECT;
      assertStorableKeys(name, value, 0);
      return value;
    case 'date':
      return toDate(value);
    case 'relation':
      // Ids are checked (shape, existence, readable by the writer) once the scripts ran.
      return value === '' ? null : value;
    case 'file':
      // Files of the object or of this request, by id: checked by the files part (files/CollectionFiles.ts resolve).
      return value;
    default:
      return REJECT;
  }
}

/** Deployd's `date` property: ISO strings and epoch milliseconds, stored as an ISO string. */
function toDate(value: unknown): unknown {
  if (typeof value !== 'string' && typeof value !== 'number') return REJECT;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? REJECT : date.toISOString();
}

function fromForm(value: unknown, def: PropertyDef): unknown {
  if (typeof value !== 'string') return value;
  if (def.type === 'number') return value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
  if (def.type === 'boolean') {
    if (value === 'true' || value === 'on' || value === '1') return true;
    if (value === 'false' || value === '' || value === '0') return false;
  }
  return value;
}

function addModifier(out: SanitizedBody, name: string, def: PropertyDef, raw: Record<string, unknown>): void {
  for (const op of Object.keys(raw)) {
    const arg = raw[op];
    if (!MODIFIERS.has(op)) throw new SvcError('BAD_REQUEST', `${name}: unknown update modifier ${op}`);
    if (op === '$inc') {
      if (def.type !== 'number' || typeof arg !== 'number' || !Number.isFinite(arg)) continue;
      (out.modifiers.$inc ??= {})[name] = arg;
    } else {
      if (def.type !== 'array' && !(def.type === 'relation' && def.many === true)) continue;
      // $addUnique (Deployd) takes one value or an array of values.
      const values = op === '$pushAll' || op === '$pullAll' || (op === '$addUnique' && Array.isArray(arg)) ? arg : [arg];
      if (!Array.isArray(values)) throw new SvcError('BAD_REQUEST', `${name}: ${op} needs an array`);
      assertStorableKeys(name, values, 0);
      const kind = op === '$push' || op === '$pushAll' ? '$push' : op === '$addUnique' ? '$addToSet' : '$pull';
      // One array operation per property and request: a store cannot apply two to one field at once.
      for (const other of ['$push', '$addToSet', '$pull'] as const) {
        if (other !== kind && out.modifiers[other]?.[name] !== undefined) throw new SvcError('BAD_REQUEST', `${name}: only one of $push/$pushAll, $pull/$pullAll and $addUnique at a time`);
      }
      const target = (out.modifiers[kind] ??= {});
      target[name] = [...(target[name] ?? []), ...values];
    }
    out.hasModifiers = true;
  }
}

/** Stored objects may not hold keys that a document store reads as operators. */
function assertStorableKeys(name: string, value: unknown, depth: number): void {
  if (depth > 64) throw new SvcError('BAD_REQUEST', `${name}: value nested too deeply`);
  if (Array.isArray(value)) {
    for (const v of value) assertStorableKeys(name, v, depth + 1);
  } else if (isPlainObject(value)) {
    for (const k of Object.keys(value)) {
      if (k.startsWith('$') || k === '__proto__') {
        throw new SvcError('BAD_REQUEST', `${name}: keys starting with $ cannot be stored`, { errors: { [name]: 'keys starting with $ cannot be stored' } });
      }
      assertStorableKeys(name, value[k], depth + 1);
    }
  }
}

/**
 * Deployd 1.2's check of an updated object (its Collection.validate on PUT: the body and its
 * modifiers merged into the stored object, before On Validate): a property holding a value
 * (anything but undefined, null, '', false, NaN: Deployd's `exists`) must be of its type, else
 * `must be a <type>`. Numbers and dates are read as Deployd read them (`Number(v)`, `new Date(v)`),
 * so "5" passes as a number. A body's own values have their type already (sanitizeBody): what
 * fails is a stored value, set by a script or stored before the property's type changed.
 * Relations are checked by Relations.checkWrite. `skip`: names not checked.
 */
export function typeErrors(object: Record<string, unknown>, properties: Record<string, PropertyDef>, skip?: ReadonlySet<string>): Record<string, string> | undefined {
  let errors: Record<string, string> | undefined;
  for (const name of Object.keys(properties)) {
    const type = (properties[name] as PropertyDef).type;
    const value = object[name];
    if (type === 'relation' || type === 'file' || skip?.has(name) === true || !(value || value === 0)) continue;
    if (!hasDeploydType(value, type)) (errors ??= {})[name] = `must be a ${type}`;
  }
  return errors;
}

/** Deployd's `validation.isType` (validation@0.0.1) after its coercion of numbers and dates. */
function hasDeploydType(value: unknown, type: Exclude<PropertyDef['type'], 'relation' | 'file'>): boolean {
  switch (type) {
    case 'number': {
      const n = Number(value);
      return n !== Infinity && !Number.isNaN(n);
    }
    case 'date':
      return Number.isFinite(new Date(value as string | number).getTime());
    case 'object':
      return Object.prototype.toString.call(value) === '[object Object]' && 'isPrototypeOf' in (value as object);
    case 'array':
      return Array.isArray(value);
    default:
      return typeof value === type;
  }
}

/** The properties a sanitized body names: set, cleared or changed by a modifier. */
export function namedBy(body: SanitizedBody): Set<string> {
  const named = new Set([...Object.keys(body.values), ...body.cleared]);
  for (const ops of Object.values(body.modifiers)) for (const name of Object.keys(ops ?? {})) named.add(name);
  return named;
}

/**
 * The `required` rule: undefined, null and '' are missing; false and 0 are values. `skip`: names
 * not checked (on an update, properties the caller may not read and did not send).
 */
export function requiredErrors(object: Record<string, unknown>, properties: Record<string, PropertyDef>, skip?: ReadonlySet<string>): Record<string, string> | undefined {
  let errors: Record<string, string> | undefined;
  for (const name of Object.keys(properties)) {
    if (!properties[name]?.required || skip?.has(name) === true) continue;
    const v = object[name];
    if (v === undefined || v === null || v === '') (errors ??= {})[name] = 'is required';
  }
  return errors;
}
