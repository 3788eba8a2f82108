/** An object of a live query's result (it always has an id). */
type Item = Record<string, unknown> & { id: string };

/** What applying one event did to the window: whether it changed, and whether it needs a fresh snapshot. */
export interface Applied {
  changed: boolean;
  /** The window may now miss objects the server has (a hole at its end): take a fresh snapshot. */
  stale: boolean;
}

/**
 * The objects of a live query as the server would answer its GET now: ordered by `$sort`, cut at
 * `$limit`. Events beyond what it knows (an object leaving a full window, one sorting past its
 * last object) make it stale: the subscription then takes a fresh snapshot.
 */
export class LiveView {
  private items: Item[] = [];
  /** True when the server may hold matching objects past the window's end. */
  private full = false;
  private readonly sort: [string, 1 | -1][];
  private readonly limit: number | undefined;
  private readonly paged: boolean;

  constructor(query: Record<string, unknown>) {
    const sort = query.$sort;
    this.sort = typeof sort === 'object' && sort !== null ? Object.entries(sort as Record<string, unknown>).map(([k, v]) => [k, Number(v) < 0 ? -1 : 1]) : [];
    const limit = Number(query.$limit);
    this.limit = query.$limit === undefined || !Number.isFinite(limit) ? undefined : limit;
    this.paged = query.$skip !== undefined && Number(query.$skip) > 0;
  }

  get objects(): readonly Item[] {
    return this.items;
  }

  reset(objects: readonly Item[]): void {
    this.items = [...objects];
    this.full = this.limit !== undefined && this.items.length >= this.limit;
  }

  upsert(object: Item): Applied {
    // A page past the first: what comes before it is unknown here.
    if (this.paged) return { changed: false, stale: true };
    const at = this.items.findIndex((o) => o.id === object.id);
    const wasIn = at !== -1;
    if (wasIn) this.items.splice(at, 1);
    const place = this.placeOf(object);
    if (this.full && place === this.items.length) {
      // Sorts after every known object: others the server has may come first.
      return { changed: wasIn, stale: wasIn };
    }
    this.items.splice(place, 0, object);
    if (this.limit !== undefined && this.items.length > this.limit) {
      this.items.length = this.limit;
      this.full = true;
    }
    return { changed: true, stale: false };
  }

  remove(id: string): Applied {
    if (this.paged) return { changed: false, stale: true };
    const at = this.items.findIndex((o) => o.id === id);
    if (at === -1) return { changed: false, stale: false };
    this.items.splice(at, 1);
    // A full window lost one: the next object is on the server only.
    return { changed: true, stale: this.full };
  }

  /** Where an object goes: after every object that sorts before or with it (no $sort: at the end). */
  private placeOf(object: Item): number {
    if (this.sort.length === 0) return this.items.length;
    let low = 0;
    let high = this.items.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.compare(this.items[mid] as Item, object) <= 0) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  private compare(a: Item, b: Item): number {
    for (const [key, direction] of this.sort) {
      const c = compareValues(a[key], b[key]);
      if (c !== 0) return c * direction;
    }
    return 0;
  }
}

/** MongoDB's order of types (missing and null first, then numbers, strings, objects, arrays, booleans). */
function rankOf(value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number') return 1;
  if (typeof value === 'string') return 2;
  if (Array.isArray(value)) return 4;
  if (typeof value === 'object') return 3;
  if (typeof value === 'boolean') return 5;
  return 6;
}

function compareValues(a: unknown, b: unknown): number {
  const ra = rankOf(a);
  const rb = rankOf(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'number' || typeof a === 'string' || typeof a === 'boolean') return a < (b as typeof a) ? -1 : a > (b as typeof a) ? 1 : 0;
  return 0;
}
