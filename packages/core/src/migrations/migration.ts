import { createHash } from 'node:crypto';
import { isPlainObject } from '../query/parseQueryString.js';
import { isCollectionName } from '../store/Store.js';
import type { PropertyType } from '../types.js';

/** The property types a migration may name (config.json's). */
export const MIGRATION_PROPERTY_TYPES: readonly PropertyType[] = ['string', 'number', 'boolean', 'object', 'array', 'date', 'relation'];

/**
 * What a type change does with a value that does not convert (see convertValue): `unset` removes
 * it (kept, so that `down` puts it back), `keep` leaves it as it is (of the old type), `fail` fails
 * the migration before anything is written, `{set: v}` stores `v` instead (the old value kept).
 */
export type InvalidValues = 'unset' | 'keep' | 'fail' | { set: unknown };

/** One step of a migration: what it does to every stored object of its collection. */
export type MigrationStep =
  /** The property's values move to another name (objects holding both: `to` is overwritten). */
  | { op: 'rename'; from: string; to: string }
  /**
   * The property is removed from every object. `keep` (the default): the values are kept in the
   * store's `_migration_values`, so that `svc migrate down` puts them back; false: gone for good.
   */
  | { op: 'remove'; property: string; type?: PropertyType; keep: boolean }
  /** A new property; with `default`, objects lacking it get that value (null stays null). */
  | { op: 'add'; property: string; type: PropertyType; default?: unknown }
  /** The property's type changes; each value is converted (convertValue), the others as `invalid` says. */
  | { op: 'convert'; property: string; from: PropertyType; to: PropertyType; invalid: InvalidValues; note?: string }
  /** An index on the property (unique: no two objects share a value; made after the values are). */
  | { op: 'addIndex'; property: string; unique: boolean }
  /** The property's index is removed (`unique`: what it was, for `down`). */
  | { op: 'dropIndex'; property: string; unique: boolean }
  /** The objects of store collection `from` move into this migration's collection (a resource renamed). */
  | { op: 'renameCollection'; from: string };

/** A migration file, read and checked. */
export interface Migration {
  /** The file name without `.json`: `20261201T101500-books-rename-title`. Migrations apply in this order. */
  readonly id: string;
  /** The store collection it changes (the resource path without its leading /). */
  readonly collection: string;
  readonly steps: readonly MigrationStep[];
  /** SHA-256 of what the steps do (notes left out): a file changed after it was applied is told apart. */
  readonly checksum: string;
}

/** The format marker of a migration file. */
export const MIGRATION_FORMAT = 1;

/** A migration file's name: a sortable time first, then words of `[A-Za-z0-9_-]`. */
const MIGRATION_ID = /^\d{8}T\d{6}(?:\d{3})?(?:-[A-Za-z0-9_]+)+$/;
const PROPERTY_NAME = /^[^$.][^.]*$/;
const STEP_KEYS: Record<MigrationStep['op'], readonly string[]> = {
  rename: ['op', 'from', 'to'],
  remove: ['op', 'property', 'type', 'keep'],
  add: ['op', 'property', 'type', 'default'],
  convert: ['op', 'property', 'from', 'to', 'invalid', 'note'],
  addIndex: ['op', 'property', 'unique'],
  dropIndex: ['op', 'property', 'unique'],
  renameCollection: ['op', 'from'],
};

/** Whether `id` can name a migration (what its file is called, without `.json`). */
export function isMigrationId(id: string): boolean {
  return MIGRATION_ID.test(id) && id.length <= 200;
}

/**
 * Reads a migration file's text: `{"svcMigration": 1, "collection": "books", "steps": [...]}`.
 * Throws an Error naming the file, the step and what is wrong: nothing of a file that does not
 * read is applied.
 */
export function parseMigration(id: string, text: string): Migration {
  const where = `migrations/${id}.json`;
  if (!isMigrationId(id)) throw new Error(`${where}: a migration file is named <yyyymmdd>T<hhmmss>-<words>.json (letters, digits, _ and - between words)`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`${where}: invalid JSON (${(err as Error).message})`, { cause: err });
  }
  if (!isPlainObject(raw)) throw new Error(`${where}: must be a JSON object {"svcMigration": 1, "collection": ..., "steps": [...]}`);
  if (raw.svcMigration !== MIGRATION_FORMAT) throw new Error(`${where}: "svcMigration" must be ${MIGRATION_FORMAT} (the format this svc reads)`);
  const unknown = Object.keys(raw).filter((k) => !['svcMigration', 'collection', 'steps', 'note'].includes(k));
  if (unknown.length > 0) throw new Error(`${where}: unknown keys ${unknown.join(', ')}`);
  const collection = raw.collection;
  if (typeof collection !== 'string' || !isCollectionName(collection) || collection.startsWith('_')) throw new Error(`${where}: "collection" must name a collection (a resource path without its leading /)`);
  if (!Array.isArray(raw.steps)) throw new Error(`${where}: "steps" must be a list`);
  const steps = raw.steps.map((step, i) => checkStep(step, `${where}: step ${i + 1}`, collection));
  return { id, collection, steps, checksum: checksumOf(collection, steps) };
}

/** The text of a migration file (what `parseMigration` reads), ending in a newline. */
export function formatMigration(collection: string, steps: readonly MigrationStep[], note?: string): string {
  return `${JSON.stringify({ svcMigration: MIGRATION_FORMAT, collection, ...(note !== undefined ? { note } : {}), steps }, null, 2)}\n`;
}

/** The checksum of what a migration does (its notes left out). */
export function checksumOf(collection: string, steps: readonly MigrationStep[]): string {
  const canonical = steps.map((step) => {
    const { note: _note, ...rest } = step as MigrationStep & { note?: string };
    return sortKeys(rest);
  });
  return createHash('sha256').update(JSON.stringify([collection, canonical])).digest('hex');
}

/** Whether `svc migrate down` can undo the step (a remove with `keep: false` cannot). */
export function isReversible(step: MigrationStep): boolean {
  return !(step.op === 'remove' && !step.keep);
}

/** One line saying what a step does, for logs and `svc migrate status`. */
export function describeStep(step: MigrationStep): string {
  switch (step.op) {
    case 'rename':
      return `rename ${step.from} -> ${step.to}`;
    case 'remove':
      return `remove ${step.property}${step.keep ? ' (values kept for down)' : ' (values not kept)'}`;
    case 'add':
      return `add ${step.property} (${step.type})${step.default !== undefined ? ` default ${JSON.stringify(step.default)}` : ''}`;
    case 'convert':
      return `convert ${step.property} ${step.from} -> ${step.to} (values that do not convert: ${invalidWords(step.invalid)})`;
    case 'addIndex':
      return `add ${step.unique ? 'unique ' : ''}index on ${step.property}`;
    case 'dropIndex':
      return `drop ${step.unique ? 'unique ' : ''}index on ${step.property}`;
    case 'renameCollection':
      return `move the objects of ${step.from} here`;
  }
}

/** What `invalid` does, in words. */
export function invalidWords(invalid: InvalidValues): string {
  if (typeof invalid === 'object') return `set to ${JSON.stringify(invalid.set)} (old value kept for down)`;
  return { unset: 'removed (kept for down)', keep: 'left as they are', fail: 'the migration fails' }[invalid];
}

function checkStep(step: unknown, where: string, collection: string): MigrationStep {
  if (!isPlainObject(step)) throw new Error(`${where}: must be an object with an "op"`);
  const op = step.op;
  if (typeof op !== 'string' || !Object.hasOwn(STEP_KEYS, op)) throw new Error(`${where}: "op" must be one of ${Object.keys(STEP_KEYS).join(', ')}`);
  const allowed = STEP_KEYS[op as MigrationStep['op']];
  const unknown = Object.keys(step).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) throw new Error(`${where} (${op}): unknown keys ${unknown.join(', ')}`);
  const name = (key: string): string => {
    const value = step[key];
    if (typeof value !== 'string' || value === '' || value === 'id' || !PROPERTY_NAME.test(value) || value === '__proto__') throw new Error(`${where} (${op}): "${key}" must name a property (not id, no $ first, no .)`);
    return value;
  };
  const type = (key: string, optional = false): PropertyType | undefined => {
    const value = step[key];
    if (value === undefined && optional) return undefined;
    if (typeof value !== 'string' || !MIGRATION_PROPERTY_TYPES.includes(value as PropertyType)) throw new Error(`${where} (${op}): "${key}" must be one of ${MIGRATION_PROPERTY_TYPES.join(', ')}`);
    return value as PropertyType;
  };
  const flag = (key: string, fallback: boolean): boolean => {
    const value = step[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') throw new Error(`${where} (${op}): "${key}" must be true or false`);
    return value;
  };
  switch (op as MigrationStep['op']) {
    case 'rename': {
      const from = name('from');
      const to = name('to');
      if (from === to) throw new Error(`${where} (rename): "from" and "to" are the same`);
      return { op: 'rename', from, to };
    }
    case 'remove': {
      const t = type('type', true);
      return { op: 'remove', property: name('property'), ...(t !== undefined ? { type: t } : {}), keep: flag('keep', true) };
    }
    case 'add': {
      if (step.default !== undefined) checkValue(step.default, `${where} (add): "default"`, 0);
      return { op: 'add', property: name('property'), type: type('type') as PropertyType, ...(step.default !== undefined ? { default: step.default } : {}) };
    }
    case 'convert': {
      const from = type('from') as PropertyType;
      const to = type('to') as PropertyType;
      if (from === to) throw new Error(`${where} (convert): "from" and "to" are the same type`);
      const invalid = step.invalid ?? 'unset';
      const policy = invalid === 'unset' || invalid === 'keep' || invalid === 'fail' ? invalid : isPlainObject(invalid) && Object.keys(invalid).join() === 'set' ? { set: invalid.set } : undefined;
      if (policy === undefined) throw new Error(`${where} (convert): "invalid" must be "unset", "keep", "fail" or {"set": <value>}`);
      if (typeof policy === 'object') checkValue(policy.set, `${where} (convert): "invalid.set"`, 0);
      if (step.note !== undefined && typeof step.note !== 'string') throw new Error(`${where} (convert): "note" must be a text`);
      return { op: 'convert', property: name('property'), from, to, invalid: policy, ...(typeof step.note === 'string' ? { note: step.note } : {}) };
    }
    case 'addIndex':
      return { op: 'addIndex', property: name('property'), unique: flag('unique', false) };
    case 'dropIndex':
      return { op: 'dropIndex', property: name('property'), unique: flag('unique', false) };
    case 'renameCollection': {
      const from = step.from;
      if (typeof from !== 'string' || !isCollectionName(from) || from.startsWith('_') || from === collection) throw new Error(`${where} (renameCollection): "from" must name another collection`);
      return { op: 'renameCollection', from };
    }
  }
}

/**
 * Checks a value a migration stores (a default, an `invalid.set`): JSON with no key a document
 * store reads as an operator or a path, nested 32 deep at most. Throws an Error starting with `where`.
 */
export function checkValue(value: unknown, where: string, depth = 0): void {
  if (depth > 32) throw new Error(`${where}: nested too deeply`);
  if (Array.isArray(value)) for (const v of value) checkValue(v, where, depth + 1);
  else if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (k.startsWith('$') || k.includes('.') || k === '__proto__') throw new Error(`${where}: key ${JSON.stringify(k)} cannot be stored`);
      checkValue(v, where, depth + 1);
    }
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortKeys(value[k])]),
  );
}
