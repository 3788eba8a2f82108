/** Limits of relations and aggregates (app.json `relations` and `aggregate`). */
export interface RelationSettings {
  /** How many levels `$expand` may go (default 2; never more than {@link EXPAND_DEPTH_CAP}). */
  expandDepth: number;
  /** Objects one expanded relation may read at one level (default 1000); more answers 413. */
  maxExpanded: number;
  /** Related objects a filter across a relation may match (default 10,000); more answers 413. */
  maxFilterIds: number;
  /** Groups an aggregate may answer (default 1000); more answers 413. */
  maxGroups: number;
  /** Objects an aggregate may read (default 1,000,000); more answers 413. */
  maxScanned: number;
  /** How long an aggregate may take, in ms (default 5000); longer answers 413. */
  aggregateTimeoutMs: number;
}

/** The depth no app.json can raise `$expand` past: each level multiplies the reads a request may cause. */
export const EXPAND_DEPTH_CAP = 4;
/** Relations one `$expand` may name in all (every level counted). */
export const MAX_EXPANDED_RELATIONS = 16;

export const DEFAULT_RELATION_SETTINGS: RelationSettings = {
  expandDepth: 2,
  maxExpanded: 1000,
  maxFilterIds: 10_000,
  maxGroups: 1000,
  maxScanned: 1_000_000,
  aggregateTimeoutMs: 5000,
};

/** Settings from the defaults and what app.json gives; the expand depth is capped. */
export function relationSettings(given: Partial<RelationSettings> = {}): RelationSettings {
  const out = { ...DEFAULT_RELATION_SETTINGS };
  for (const key of Object.keys(out) as (keyof RelationSettings)[]) {
    const value = given[key];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) out[key] = value;
  }
  out.expandDepth = Math.min(out.expandDepth, EXPAND_DEPTH_CAP);
  return out;
}
