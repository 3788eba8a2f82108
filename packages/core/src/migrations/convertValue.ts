import { isPlainObject } from '../query/parseQueryString.js';
import type { PropertyType } from '../types.js';
import { invalidWords } from './migration.js';
import type { InvalidValues } from './migration.js';

/** What a type change makes of one stored value. */
export type Conversion = { kind: 'same' } | { kind: 'changed'; value: unknown } | { kind: 'invalid' };

const SAME: Conversion = { kind: 'same' };
const INVALID: Conversion = { kind: 'invalid' };
/** A decimal number as people write it: no hex, no Infinity, nothing after it. */
const NUMBER_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const TRUE_TEXT = new Set(['true', '1', 'yes', 'on']);
const FALSE_TEXT = new Set(['false', '0', 'no', 'off', '']);

/**
 * Converts a stored value to a property type, whatever type it has now (a value already of the
 * new type is left as it is; null stays null). The rules, which `conversionNote` states in words:
 *
 * | to | from string | from number | from boolean | from date (ISO text) | object, array |
 * |---|---|---|---|---|---|
 * | string | same | `String(n)` | "true"/"false" | same | invalid |
 * | number | a decimal number, spaces around allowed ("12", " 1.5e3 "); else invalid ("abc", "", "12kg", "0x10") | same | 1/0 | ms since 1970 | invalid |
 * | boolean | "true"/"1"/"yes"/"on" (any case) true; "false"/"0"/"no"/"off"/"" false; else invalid | 0 false, 1 true, else invalid | same | invalid | invalid |
 * | date | a text `new Date()` reads, as ISO text; else invalid | ms since 1970, as ISO text | invalid | — | invalid |
 * | array | `[value]` | `[value]` | `[value]` | `[value]` | object: invalid |
 * | object | invalid | invalid | invalid | invalid | array: invalid |
 * | relation | same (an id) | invalid | invalid | invalid | an array of texts: same (many ids) |
 */
export function convertValue(value: unknown, to: PropertyType): Conversion {
  if (value === null || value === undefined) return SAME;
  switch (to) {
    case 'string':
      if (typeof value === 'string') return SAME;
      if (typeof value === 'number') return Number.isFinite(value) ? { kind: 'changed', value: String(value) } : INVALID;
      if (typeof value === 'boolean') return { kind: 'changed', value: String(value) };
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? INVALID : { kind: 'changed', value: value.toISOString() };
      return INVALID;
    case 'number':
      if (typeof value === 'number') return Number.isFinite(value) ? SAME : INVALID;
      if (typeof value === 'string') {
        const text = value.trim();
        return NUMBER_TEXT.test(text) && Number.isFinite(Number(text)) ? { kind: 'changed', value: Number(text) } : INVALID;
      }
      if (typeof value === 'boolean') return { kind: 'changed', value: value ? 1 : 0 };
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? INVALID : { kind: 'changed', value: value.getTime() };
      return INVALID;
    case 'boolean':
      if (typeof value === 'boolean') return SAME;
      if (typeof value === 'string') {
        const text = value.trim().toLowerCase();
        if (TRUE_TEXT.has(text)) return { kind: 'changed', value: true };
        if (FALSE_TEXT.has(text)) return { kind: 'changed', value: false };
        return INVALID;
      }
      if (value === 0 || value === 1) return { kind: 'changed', value: value === 1 };
      return INVALID;
    case 'date':
      return toDate(value);
    case 'array':
      if (Array.isArray(value)) return SAME;
      return isPlainObject(value) ? INVALID : { kind: 'changed', value: [value instanceof Date ? value.toISOString() : value] };
    case 'object':
      return isPlainObject(value) ? SAME : INVALID;
    case 'relation':
      if (typeof value === 'string') return SAME;
      return Array.isArray(value) && value.every((v) => typeof v === 'string') ? SAME : INVALID;
    case 'file':
      // A file is uploaded: no value converts to one (migrations leave file properties alone).
      return INVALID;
  }
}

/** svc stores a `date` property as ISO text (sanitize.ts): a text that reads as one is written so. */
function toDate(value: unknown): Conversion {
  if (typeof value === 'string') {
    if (value.trim() === '') return INVALID;
    const date = new Date(value);
    if (Number.isNaN(date.getTime())) return INVALID;
    const iso = date.toISOString();
    return iso === value ? SAME : { kind: 'changed', value: iso };
  }
  if (typeof value === 'number' || value instanceof Date) {
    const date = new Date(value);
    return Number.isNaN(date.getTime()) ? INVALID : { kind: 'changed', value: date.toISOString() };
  }
  return INVALID;
}

/** Example values per type, for the words of a conversion. */
const SAMPLES: Record<PropertyType, unknown[]> = {
  string: ['12', ' 1.5 ', 'true', 'abc', ''],
  number: [12, 0, 1, 1.5],
  boolean: [true, false],
  date: ['2026-12-01T10:00:00.000Z'],
  array: [['a']],
  object: [{ a: 1 }],
  relation: ['a1b2c3d4e5f60718'],
  file: [],
};

/**
 * A type change's rule in words, with examples computed by convertValue itself (so the note
 * cannot say something the migration does not do): what `svc migrate new` and the development
 * server write in a migration file's `note`.
 */
export function conversionNote(from: PropertyType, to: PropertyType, invalid: InvalidValues): string {
  const examples = SAMPLES[from].map((sample) => {
    const outcome = convertValue(sample, to);
    const shown = outcome.kind === 'changed' ? JSON.stringify(outcome.value) : outcome.kind === 'same' ? JSON.stringify(sample) : 'does not convert';
    return `${JSON.stringify(sample)} -> ${shown}`;
  });
  return `${from} to ${to}: ${examples.join(', ')}; values that do not convert are ${invalidWords(invalid)}; null stays null`;
}
