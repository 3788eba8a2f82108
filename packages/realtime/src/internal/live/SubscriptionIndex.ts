import type { Filter } from '@svc/core';

/** An equality a filter requires of every object it matches: `field` equal to `value`. */
export interface Equality {
  field: string;
  value: string | number | boolean;
}

/**
 * Subscriptions of one collection indexed by one equality condition of their filter (the
 * `owner == X` of "my todos"), so that a write is matched only against the subscriptions it
 * can affect: those whose equality it satisfies (before or after the write) and those that
 * have none.
 */
export class SubscriptionIndex<S> {
  private readonly byField = new Map<string, Map<string, Set<S>>>();
  private readonly unindexed = new Set<S>();
  private readonly placed = new Map<S, Equality | undefined>();

  get size(): number {
    return this.placed.size;
  }

  /** Every subscription (a resync concerns them all). */
  all(): S[] {
    return [...this.placed.keys()];
  }

  add(sub: S, filter: Filter): void {
    this.remove(sub);
    const eq = equalityOf(filter);
    this.placed.set(sub, eq);
    if (eq === undefined) {
      this.unindexed.add(sub);
      return;
    }
    let values = this.byField.get(eq.field);
    if (!values) this.byField.set(eq.field, (values = new Map()));
    const key = keyOf(eq.value);
    let subs = values.get(key);
    if (!subs) values.set(key, (subs = new Set()));
    subs.add(sub);
  }

  remove(sub: S): void {
    if (!this.placed.has(sub)) return;
    const eq = this.placed.get(sub);
    this.placed.delete(sub);
    if (eq === undefined) {
      this.unindexed.delete(sub);
      return;
    }
    const values = this.byField.get(eq.field);
    const key = keyOf(eq.value);
    const subs = values?.get(key);
    subs?.delete(sub);
    if (subs?.size === 0) values?.delete(key);
    if (values?.size === 0) this.byField.delete(eq.field);
  }

  /** The subscriptions a write of `object` (and its previous state) may concern, each once. */
  candidates(object: Record<string, unknown> | undefined, previous: Record<string, unknown> | undefined): S[] {
    if (this.unindexed.size === 0 && this.byField.size === 1) return this.onlyField(object, previous);
    const out = new Set<S>(this.unindexed);
    for (const [field, values] of this.byField) {
      for (const doc of [object, previous]) {
        if (doc === undefined) continue;
        const value = doc[field];
        // An array property matches an equality when one of its elements is equal (MongoDB's meaning).
        for (const v of Array.isArray(value) ? value : [value]) {
          if (!isIndexable(v)) continue;
          const subs = values.get(keyOf(v));
          if (subs) for (const s of subs) out.add(s);
        }
      }
    }
    return [...out];
  }

  /** The common case (every subscription indexed on one field, `owner`): no set unless needed. */
  private onlyField(object: Record<string, unknown> | undefined, previous: Record<string, unknown> | undefined): S[] {
    const [field, values] = this.byField.entries().next().value as [string, Map<string, Set<S>>];
    const now = object?.[field];
    const before = previous?.[field];
    if (!Array.isArray(now) && !Array.isArray(before) && (before === undefined || before === now)) {
      const subs = isIndexable(now) ? values.get(keyOf(now)) : undefined;
      return subs ? [...subs] : [];
    }
    const out = new Set<S>();
    for (const value of [now, before]) {
      for (const v of Array.isArray(value) ? value : [value]) {
        if (!isIndexable(v)) continue;
        const subs = values.get(keyOf(v));
        if (subs) for (const s of subs) out.add(s);
      }
    }
    return [...out];
  }
}

function isIndexable(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function keyOf(value: string | number | boolean): string {
  return `${typeof value}:${String(value)}`;
}

/**
 * An equality on a top-level property that the filter requires (at its top, or in one of the
 * branches of a top-level `$and`); undefined when it has none. `null` is never one (it also
 * matches a missing property), nor a dotted path.
 */
export function equalityOf(filter: Filter): Equality | undefined {
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (key === '$and' && Array.isArray(value)) {
      for (const branch of value) {
        const eq = typeof branch === 'object' && branch !== null ? equalityOf(branch as Filter) : undefined;
        if (eq) return eq;
      }
    }
    if (key.startsWith('$') || key.includes('.')) continue;
    if (isIndexable(value)) return { field: key, value };
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const ops = value as Record<string, unknown>;
      const keys = Object.keys(ops);
      if (keys.length === 1 && keys[0] === '$eq' && isIndexable(ops.$eq)) return { field: key, value: ops.$eq };
    }
  }
  return undefined;
}
