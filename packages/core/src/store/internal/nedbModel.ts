import { createRequire } from 'node:module';

/**
 * nedb's model (lib/model.js): how it matches, orders and serialises objects. Its typings do not
 * cover lib/, so the parts the embedded store uses are typed here, once.
 */
export const nedbModel = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as {
  match(doc: unknown, query: Record<string, unknown>): boolean;
  getDotValue(doc: unknown, field: string): unknown;
  compareThings(a: unknown, b: unknown): number;
  serialize(doc: unknown): string;
  /** One datafile line back to an object (`{$$date}` becomes a Date). */
  deserialize(line: string): unknown;
};
