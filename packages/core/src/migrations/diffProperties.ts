import { isPlainObject } from '../query/parseQueryString.js';
import type { PropertyType } from '../types.js';
import { conversionNote } from './convertValue.js';
import { MIGRATION_PROPERTY_TYPES } from './migration.js';
import type { MigrationStep } from './migration.js';

/** What of a property a migration cares about: its type and its index. */
export interface PropertyShape {
  type: PropertyType;
  index?: 'index' | 'unique';
}

/** A collection's properties as migrations see them. */
export type CollectionShape = Record<string, PropertyShape>;

/** A config.json `properties` object, read for migrations. */
export interface ReadShape {
  shape: CollectionShape;
  /** new name -> old name, from `$renameFrom` hints (Deployd's key, written by svc's dashboard). */
  renames: Record<string, string>;
  /**
   * property -> the value objects without one get, from `$default` hints (config.json, the
   * dashboard's "value for stored objects"): a migration `add` step with that default.
   */
  defaults: Record<string, unknown>;
  /** Properties of a type migrations leave alone (`file`: files are uploaded, not converted). */
  skipped: string[];
}

/**
 * The shape of a config.json `properties` object (already checked by the server: unknown types
 * are left out). `$renameFrom` and `$default` hints are answered apart.
 */
export function shapeOf(properties: unknown): ReadShape {
  const shape: CollectionShape = {};
  const renames: Record<string, string> = {};
  const defaults: Record<string, unknown> = {};
  const skipped: string[] = [];
  if (!isPlainObject(properties)) return { shape, renames, defaults, skipped };
  for (const [name, def] of Object.entries(properties)) {
    if (!isPlainObject(def) || typeof def.type !== 'string') continue;
    if (!MIGRATION_PROPERTY_TYPES.includes(def.type as PropertyType)) {
      skipped.push(name);
      continue;
    }
    const index = def.unique === true ? 'unique' : def.index === true ? 'index' : undefined;
    shape[name] = { type: def.type as PropertyType, ...(index ? { index } : {}) };
    const from = def.$renameFrom;
    if (typeof from === 'string' && from !== name) renames[name] = from;
    // null is no default: an add with null would write nothing (null stays null) and read as one.
    if (def.$default !== undefined && def.$default !== null) defaults[name] = def.$default;
  }
  return { shape, renames, defaults, skipped };
}

/**
 * The steps that take a collection's objects from shape `before` to shape `after`. A rename cannot
 * be told from a remove and an add by comparing: only `renames` (new name -> old name) make one;
 * a hint whose old name is not in `before` (done already) is ignored. Order: indexes dropped,
 * renames, conversions, removals, additions, indexes made (a unique index after its values are).
 * Type changes leave values that do not convert `unset` (kept for down); a removal keeps the values.
 * `defaults` (property -> value) makes each named property of `after` an `add` with that default:
 * a new one, or one that exists (the objects without a value get it, after any conversion).
 */
export function diffShapes(before: CollectionShape, after: CollectionShape, renames: Readonly<Record<string, string>> = {}, defaults: Readonly<Record<string, unknown>> = {}): MigrationStep[] {
  const drops: MigrationStep[] = [];
  const moves: MigrationStep[] = [];
  const converts: MigrationStep[] = [];
  const removes: MigrationStep[] = [];
  const adds: MigrationStep[] = [];
  const indexes: MigrationStep[] = [];
  // The old name of each property of `after`, or undefined for a new one.
  const origin = new Map<string, string>();
  const taken = new Set<string>();
  for (const [to, from] of Object.entries(renames)) {
    if (!(to in after) || !(from in before) || to in before || from in after || taken.has(from)) continue;
    origin.set(to, from);
    taken.add(from);
  }
  for (const name of Object.keys(after)) if (!origin.has(name) && name in before) origin.set(name, name);
  for (const [name, shape] of Object.entries(after)) {
    const from = origin.get(name);
    const old = from === undefined ? undefined : before[from];
    const fill = Object.hasOwn(defaults, name) ? { default: defaults[name] } : {};
    if (from === undefined || old === undefined) {
      adds.push({ op: 'add', property: name, type: shape.type, ...fill });
      if (shape.index) indexes.push({ op: 'addIndex', property: name, unique: shape.index === 'unique' });
      continue;
    }
    const indexMoves = from !== name || old.index !== shape.index;
    if (old.index && indexMoves) drops.push({ op: 'dropIndex', property: from, unique: old.index === 'unique' });
    if (from !== name) moves.push({ op: 'rename', from, to: name });
    if (old.type !== shape.type) converts.push({ op: 'convert', property: name, from: old.type, to: shape.type, invalid: 'unset', note: conversionNote(old.type, shape.type, 'unset') });
    if ('default' in fill) adds.push({ op: 'add', property: name, type: shape.type, ...fill });
    if (shape.index && indexMoves) indexes.push({ op: 'addIndex', property: name, unique: shape.index === 'unique' });
  }
  const kept = new Set(origin.values());
  for (const [name, old] of Object.entries(before)) {
    if (kept.has(name)) continue;
    if (old.index) drops.push({ op: 'dropIndex', property: name, unique: old.index === 'unique' });
    removes.push({ op: 'remove', property: name, type: old.type, keep: true });
  }
  return [...drops, ...moves, ...converts, ...removes, ...adds, ...indexes];
}

/** The shape a collection has after `steps` (what diffShapes would have to undo). */
export function advanceShape(shape: CollectionShape, steps: readonly MigrationStep[]): CollectionShape {
  const out: CollectionShape = structuredClone(shape);
  for (const step of steps) {
    switch (step.op) {
      case 'rename': {
        const moved = out[step.from];
        if (moved === undefined) break;
        delete out[step.from];
        out[step.to] = moved;
        break;
      }
      case 'remove':
        delete out[step.property];
        break;
      case 'add':
        // An add of a property that exists (a default for the objects without a value) keeps its index.
        out[step.property] = { ...out[step.property], type: step.type };
        break;
      case 'convert': {
        const prop = out[step.property];
        out[step.property] = { ...prop, type: step.to };
        break;
      }
      case 'addIndex': {
        const prop = out[step.property];
        if (prop) prop.index = step.unique ? 'unique' : 'index';
        break;
      }
      case 'dropIndex': {
        const prop = out[step.property];
        if (prop) delete prop.index;
        break;
      }
      case 'renameCollection':
        break;
    }
  }
  return out;
}

/** A short name of what the steps do, for a migration's file name: `rename-title-headline`, `convert-pages`. */
export function summarizeSteps(steps: readonly MigrationStep[]): string {
  const words = steps
    .filter((step) => step.op !== 'dropIndex' || !steps.some((s) => (s.op === 'remove' && s.property === step.property) || (s.op === 'rename' && s.from === step.property)))
    .map((step) => {
      switch (step.op) {
        case 'rename':
          return `rename-${step.from}-${step.to}`;
        case 'remove':
          return `remove-${step.property}`;
        case 'add':
          return `add-${step.property}`;
        case 'convert':
          return `convert-${step.property}`;
        case 'addIndex':
          return `index-${step.property}`;
        case 'dropIndex':
          return `drop-index-${step.property}`;
        case 'renameCollection':
          return `from-${step.from}`;
      }
    });
  const unique = [...new Set(words)];
  const text = unique.length > 2 ? `${unique.slice(0, 2).join('-')}-and-${unique.length - 2}-more` : unique.join('-');
  return (text.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 80).replace(/[-_]+$/, '') || 'change').replace(/^-+/, '');
}

/**
 * The id (file name without `.json`) of a new migration made at `now`:
 * `20261201T101500123-books-rename-title-headline`. Milliseconds keep two made in one second apart
 * and in order; the caller adds `-2`, `-3` when a file of that name exists.
 */
export function newMigrationId(collection: string, steps: readonly MigrationStep[], now: Date = new Date()): string {
  const time = now.toISOString().replace(/[-:]/g, '').replace(/\.(\d{3})Z$/, '$1').replace('Z', '');
  const words = `${collection.replaceAll('/', '_')}-${summarizeSteps(steps)}`.replace(/[^A-Za-z0-9_-]+/g, '_').replace(/-{2,}/g, '-').replace(/^-|-$/g, '');
  return `${time}-${words || 'change'}`;
}
