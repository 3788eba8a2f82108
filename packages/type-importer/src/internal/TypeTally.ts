import type { PropertyDef, PropertyType } from '@svc/core';

/** A property whose values had more than one type, and the one chosen (the most common). */
export interface MixedType {
  chosen: PropertyType;
  /** type -> number of objects holding a value of it. */
  counts: Partial<Record<PropertyType, number>>;
}

/** Order used to break ties between equally common types. */
const PREFERENCE: readonly PropertyType[] = ['string', 'number', 'boolean', 'object', 'array'];

/** The property type of a plain JSON value; undefined for null (which says nothing). */
export function typeOfValue(value: unknown): PropertyType | undefined {
  if (value === null || value === undefined) return undefined;
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'object':
      return 'object';
    default:
      return undefined;
  }
}

/**
 * Counts, per top-level property, how many objects hold each type. Its memory follows the number
 * of distinct property names, never the number of objects.
 */
export class TypeTally {
  readonly #counts = new Map<string, Map<PropertyType, number>>();

  add(doc: Record<string, unknown>): void {
    for (const [name, value] of Object.entries(doc)) {
      if (name === 'id') continue;
      let perType = this.#counts.get(name);
      if (perType === undefined) {
        perType = new Map();
        this.#counts.set(name, perType);
      }
      const type = typeOfValue(value);
      if (type !== undefined) perType.set(type, (perType.get(type) ?? 0) + 1);
    }
  }

  /** The inferred properties (in order of first appearance) and the mixed ones. */
  result(): { properties: Record<string, PropertyDef>; mixed: Record<string, MixedType> } {
    const properties: Record<string, PropertyDef> = {};
    const mixed: Record<string, MixedType> = {};
    for (const [name, perType] of this.#counts) {
      let chosen: PropertyType = 'string';
      let best = -1;
      for (const type of PREFERENCE) {
        const n = perType.get(type) ?? 0;
        if (n > best) {
          best = n;
          chosen = type;
        }
      }
      properties[name] = { type: chosen };
      if (perType.size > 1) mixed[name] = { chosen, counts: Object.fromEntries(perType) };
    }
    return { properties, mixed };
  }
}
