import { SvcError } from '../errors.js';
import { compileFilter } from '../query/compileQuery.js';
import type { QueryRefusals } from '../query/compileQuery.js';
import { isPlainObject } from '../query/parseQueryString.js';
import type { ResourceHost } from '../resource.js';
import type { Doc, Filter, RemoveHooks, StoreCollection, StoredTexts, WriteHooks } from '../store/Store.js';
import type { Context, PropertyDef, Reply } from '../types.js';
import type { ObjectChange, StagedChange } from '../resources/changes.js';
import { aggregate } from './aggregate.js';
import { planDelete, runDelete, sweepAfterDelete } from './onDelete.js';
import type { DeletePlan } from './onDelete.js';
import { parseExpand } from './parseExpand.js';
import type { ExpandNode } from './parseExpand.js';
import type { RelationSettings } from './relationSettings.js';
import { andFilters, withoutCommands } from './filters.js';

/**
 * What relations need of a collection: the one read path for a caller and what the caller may
 * filter by. Collection implements it (structural, so this module imports no resource class).
 */
export interface RelatedCollection {
  readonly path: string;
  readonly properties: Record<string, PropertyDef>;
  readAs(ctx: Context, query: Record<string, unknown>): Promise<Record<string, unknown>[]>;
  queryableFor(ctx: Context): Record<string, PropertyDef>;
  /** The properties `$fields` leaves out for ctx's caller (what it may not read on any object). */
  unprojectableFor(ctx: Context): ReadonlySet<string>;
  accessFilter(ctx: Context, action: 'list' | 'read'): Filter;
  /** What readAs answers, as the stored objects' texts, when it answers them as stored (see expandTexts.ts). */
  readTextsAs?(ctx: Context, query: Record<string, unknown>, pick: readonly string[], anyOrder?: boolean): Promise<StoredTexts | undefined>;
  /** readTextsAs of `{id: {$in: ids}}` in any order, when the store answers it at once and nothing else limits the caller's read; undefined otherwise. */
  readTextsOfIdsNow?(ctx: Context, ids: readonly string[], pick: readonly string[]): StoredTexts | undefined;
  /** Whether readAs answers ctx's caller the stored objects as they are, so readTextsAs can answer. */
  showsTextsTo?(ctx: Context): boolean;
  /**
   * What ctx's caller's text reads depend on besides the query (the collection's generation, the
   * caller's list filter...), as a key; undefined when that cannot be told, and nothing is to be
   * kept (see keptAnswerKey). `listed`: the collection of a kept list, its own rows kept apart.
   */
  textsKey?(ctx: Context, listed?: boolean): string | undefined;
  /** Whether its change listeners (live queries) need its writes now: onDelete reads what it changes only then. */
  wantsChanges(): boolean;
  /**
   * Tells its change listeners of onDelete's writes to its store, as any write of its own is told;
   * `staged[i]`: the hooks given to the write of `changes[i]` (what they were told inside it).
   */
  tellChanges(changes: readonly ObjectChange[], staged?: readonly (StagedChange | undefined)[]): Promise<void>;
  /** The hooks of one write to its store by onDelete (its in-commit listeners', where the store runs them). */
  writeHooks?(kind: 'create' | 'update'): (WriteHooks & StagedChange) | undefined;
  /** The hooks of one remove of `docs` from its store by onDelete; `of(doc)`: what they were told of it. */
  deleteHooks?(docs: readonly Doc[]): (RemoveHooks & { of(doc: Doc): StagedChange | undefined }) | undefined;
  /** Tells them that objects changed unseen (nobody listened when onDelete began, someone does now). */
  tellResync(): Promise<void>;
}

/** A relation property of some collection pointing at another. */
export interface Referrer {
  from: Relations;
  property: string;
  def: PropertyDef;
}

/** What a GET asked of relations, taken out of its query before the collection answers it. */
export interface RelationQuery {
  expand?: Map<string, ExpandNode>;
  total: boolean;
}


const JSON_TYPE = 'content-type';

/**
 * A collection's relations: relation values checked on write, `onDelete` applied on delete,
 * `$expand`, filters across a relation, `$total` and aggregates. Every object read for a caller
 * comes from the related collection's {@link RelatedCollection.readAs}, so its private properties,
 * On Get and access rules apply exactly as to a direct read. The upkeep of references on delete
 * (setNull, cascade) is the schema's, not the caller's: it writes the referring collections'
 * stores directly, as a database's foreign keys would.
 */
export class Relations {
  readonly owner: RelatedCollection;
  /** The owner's store: integrity upkeep (onDelete) and counts, never reads for a caller. */
  readonly store: StoreCollection;
  readonly settings: RelationSettings;
  /** Called with the ids of objects a cascade removed (a UserCollection ends their sessions). */
  readonly onRemoved: (ids: readonly string[]) => Promise<void>;
  /** Relation properties of the owner. */
  readonly forward: ReadonlyMap<string, PropertyDef>;
  private host: ResourceHost | undefined;
  /** One list of names per set of names picked from this collection's objects (keysToExpand; bounded). */
  readonly pickLists = new Map<string, readonly string[]>();

  constructor(options: { owner: RelatedCollection; store: StoreCollection; settings: RelationSettings; onRemoved: (ids: readonly string[]) => Promise<void> }) {
    this.owner = options.owner;
    this.store = options.store;
    this.settings = options.settings;
    this.onRemoved = options.onRemoved;
    this.forward = new Map(Object.entries(options.owner.properties).filter(([, def]) => def.type === 'relation'));
  }

  /** Joins the server's collections: the others are found through the host, as it serves them now. */
  attach(host: ResourceHost): void {
    this.host = host;
  }

  /** The relations of the collection at `path`, when the server serves one there (a reload replaces it). */
  relationsAt(path: string): Relations | undefined {
    return relationsOf(this.host?.resourceAt?.(path));
  }

  /** Relation properties of the server's collections that point at this one. */
  referrers(): Referrer[] {
    const out: Referrer[] = [];
    for (const resource of this.host?.resources?.() ?? []) {
      const from = relationsOf(resource);
      if (from === undefined) continue;
      for (const [property, def] of from.forward) if (def.collection === this.owner.path) out.push({ from, property, def });
    }
    return out;
  }

  // ---- writes ----

  /**
   * Before a write is stored: every id a relation gained must name an object the writer may read
   * (through the target's readAs, so a hidden object is as absent as a missing one).
   */
  async checkWrite(ctx: Context, object: Record<string, unknown>, previous: Record<string, unknown> | undefined): Promise<void> {
    let errors: Record<string, string> | undefined;
    for (const [name, def] of this.forward) {
      const value = object[name];
      if (value === undefined || value === null) continue;
      const ids = idsOf(value);
      if (ids === undefined || (def.many !== true && typeof value !== 'string') || (def.many === true && !Array.isArray(value))) {
        (errors ??= {})[name] = def.many === true ? 'must be an array of ids' : 'must be an id';
        continue;
      }
      const before = new Set(previous === undefined ? [] : (idsOf(previous[name]) ?? []));
      const added = [...new Set(ids.filter((id) => !before.has(id)))];
      if (added.length === 0) continue;
      const target = this.relationsAt(def.collection ?? '');
      if (target === undefined) throw new SvcError('INTERNAL', `relation ${name} points to no collection`);
      const found = await target.owner.readAs(ctx, { id: { $in: added } });
      const seen = new Set(found.map((o) => o.id));
      if (added.some((id) => !seen.has(id))) (errors ??= {})[name] = 'points to an object that does not exist';
    }
    if (errors !== undefined) throw new SvcError('VALIDATION_FAILED', undefined, { errors });
  }

  /**
   * After a write is stored: the ids it added still name objects (a DELETE of one may have run
   * between the check and the write). If one vanished, the write's relation is undone (the new
   * object removed, an update's relation put back) and the answer is the same 400 as for a missing
   * id. With the sweep a DELETE makes after its removal, no interleaving leaves a dangling reference:
   * a write stored before the removal is found by the sweep, one stored after it finds the id gone.
   */
  async confirmWrite(stored: Doc, previous: Doc | undefined): Promise<void> {
    let errors: Record<string, string> | undefined;
    const undo: Record<string, unknown> = {};
    for (const [name, def] of this.forward) {
      const before = new Set(previous === undefined ? [] : (idsOf(previous[name]) ?? []));
      const added = [...new Set((idsOf(stored[name]) ?? []).filter((id) => !before.has(id)))];
      const target = added.length === 0 ? undefined : this.relationsAt(def.collection ?? '');
      if (target === undefined) continue;
      const present = await target.store.find({ id: { $in: added } }, { fields: { id: 1 } });
      if (present.length === added.length) continue;
      (errors ??= {})[name] = 'points to an object that does not exist';
      undo[name] = previous?.[name] ?? null;
    }
    if (errors === undefined) return;
    if (previous === undefined) {
      await this.store.remove({ id: stored.id });
    } else {
      await this.store.update({ id: stored.id }, { $set: undo });
    }
    throw new SvcError('VALIDATION_FAILED', undefined, { errors });
  }

  // ---- deletes ----

  /** Whether a delete here must know the ids it removes (something points at this collection). */
  isReferenced(): boolean {
    return this.referrers().length > 0;
  }

  /**
   * Before the objects `ids` are removed: restrict answers 409, setNull clears the references and
   * cascade removes the referring objects (deepest first). Each step leaves no reference to a
   * missing object, so a crash between two steps leaves none either, and the same DELETE sent
   * again finishes the work. Call {@link afterRemove} once the objects are removed.
   */
  async beforeRemove(ids: readonly string[]): Promise<DeletePlan> {
    const plan = await planDelete(this, ids);
    await runDelete(plan);
    return plan;
  }

  /** After the removal: references written meanwhile by other requests are cleared or removed too. */
  async afterRemove(plan: DeletePlan): Promise<void> {
    await sweepAfterDelete(plan);
  }

  // ---- reads ----

  /** Whether a GET's query asks for anything of relations (checked without a promise: most do not). */
  asked(query: Record<string, unknown>): boolean {
    if (query.$expand !== undefined || query.$total !== undefined) return true;
    if (this.forward.size === 0) return false;
    for (const key of Object.keys(query)) {
      const dot = key.indexOf('.');
      if (dot > 0 && this.forward.has(key.slice(0, dot))) return true;
    }
    return false;
  }

  /**
   * Takes `$expand`, `$total` and filters across a relation (`{"author.name": "ann"}`) out of a
   * GET's query; the last become `{author: {$in: [ids the caller may read and that match]}}`.
   * Undefined when the query asks for none of them. Answered at once (no promise) when there is
   * no filter across a relation to read for.
   */
  takeQuery(ctx: Context): RelationQuery | undefined | Promise<RelationQuery | undefined> {
    const query = ctx.query;
    const hasExpand = query.$expand !== undefined;
    const hasTotal = query.$total !== undefined;
    const across = this.filtersAcross(ctx, query);
    if (!hasExpand && !hasTotal && across.size === 0) return undefined;
    const special = ctx.parts[0] === 'count' || ctx.parts[0] === 'aggregate';
    if (special && (hasExpand || hasTotal)) throw new SvcError('INVALID_QUERY', `$expand and $total apply to lists and objects, not to /${ctx.parts[0]}`);
    const out: RelationQuery = { total: hasTotal && (query.$total === true || query.$total === 'true') };
    if (hasExpand) out.expand = parseExpand(query.$expand, this.settings.expandDepth);
    delete query.$expand;
    delete query.$total;
    return across.size === 0 ? out : this.compileAllAcross(ctx, across, out);
  }

  private async compileAllAcross(ctx: Context, across: Map<string, Record<string, unknown>>, out: RelationQuery): Promise<RelationQuery> {
    for (const [head, conditions] of across) await this.compileAcross(ctx, head, conditions);
    return out;
  }

  /** Conditions on a related object's property, by relation: `author.name` -> author -> {name}. */
  private filtersAcross(ctx: Context, query: Record<string, unknown>): Map<string, Record<string, unknown>> {
    const out = new Map<string, Record<string, unknown>>();
    let queryable: Record<string, PropertyDef> | undefined;
    for (const key of Object.keys(query)) {
      const dot = key.indexOf('.');
      if (dot <= 0) continue;
      const head = key.slice(0, dot);
      if (!this.forward.has(head)) continue;
      queryable ??= this.owner.queryableFor(ctx);
      // A relation the caller may not filter by is no relation to it: the key is ignored, as
      // a filter on a private property is.
      if (!Object.hasOwn(queryable, head)) continue;
      let conditions = out.get(head);
      if (conditions === undefined) out.set(head, (conditions = {}));
      conditions[key.slice(dot + 1)] = query[key];
    }
    return out;
  }

  private async compileAcross(ctx: Context, head: string, conditions: Record<string, unknown>): Promise<void> {
    const def = this.forward.get(head) as PropertyDef;
    const target = this.relationsAt(def.collection ?? '');
    if (target === undefined) throw new SvcError('INTERNAL', `relation ${head} points to no collection`);
    const queryable = target.owner.queryableFor(ctx);
    for (const property of Object.keys(conditions)) {
      if (property.includes('.')) throw new SvcError('INVALID_QUERY', `${head}.${property}: filters go across one relation only`);
      if (property !== 'id' && !Object.hasOwn(queryable, property)) {
        throw new SvcError('INVALID_QUERY', `${head}.${property}: ${target.owner.path.slice(1)} has no property ${property} you may filter by`);
      }
    }
    const limit = this.settings.maxFilterIds;
    const matched = await target.owner.readAs(ctx, { ...conditions, $limit: limit + 1 });
    if (matched.length > limit) throw new SvcError('PAYLOAD_TOO_LARGE', `${head}.*: the filter matches more than ${limit} ${target.owner.path.slice(1)}; narrow it`);
    const query = ctx.query;
    for (const property of Object.keys(conditions)) delete query[`${head}.${property}`];
    const condition = { $in: matched.map((o) => o.id) };
    if (query[head] === undefined) query[head] = condition;
    else query.$and = [...(Array.isArray(query.$and) ? query.$and : []), { [head]: condition }];
  }

  /** The answer of a GET with the relations it asked for: expanded objects, the total. */
  async finish(ctx: Context, asked: RelationQuery, reply: Reply): Promise<Reply> {
    if (reply.status !== 200) return reply;
    let out = reply;
    if (asked.expand !== undefined && asked.expand.size > 0) {
      const body: unknown = typeof reply.body === 'string' ? JSON.parse(reply.body) : reply.body;
      const objects = Array.isArray(body) ? body.filter(isPlainObject) : isPlainObject(body) ? [body] : [];
      await this.expand(ctx, objects, asked.expand);
      const { [JSON_TYPE]: _type, ...headers } = reply.headers ?? {};
      out = { ...reply, body, headers };
    }
    if (asked.total && (Array.isArray(out.body) || (typeof out.body === 'string' && out.body.startsWith('[')))) {
      out = { ...out, headers: { ...out.headers, 'x-total-count': String(await this.total(ctx)) } };
    }
    return out;
  }

  /** How many objects the list's query matches for the caller, before `$skip` and `$limit`. */
  private async total(ctx: Context): Promise<number> {
    if (!this.countsOpenTo(ctx)) throw new SvcError('FORBIDDEN', '$total is available to root only on a collection with an On Get script; open it with "publicCount" in app.json');
    const filter = compileFilter(withoutCommands(ctx.query), this.owner.properties, this.refusals(ctx));
    return this.store.count(andFilters(filter, this.owner.accessFilter(ctx, 'list')));
  }

  /** What ctx's caller may not filter by, as the query compiler refuses it (400): what `queryableFor` leaves out. */
  refusals(ctx: Context): QueryRefusals {
    const queryable = this.owner.queryableFor(ctx);
    const unqueryable = new Set(Object.keys(this.owner.properties).filter((name) => !Object.hasOwn(queryable, name)));
    return { unqueryable, unprojectable: unqueryable };
  }

  /** Set by the owner: whether counts (`$total`, aggregates) may answer ctx's caller. */
  countsOpenTo: (ctx: Context) => boolean = () => true;

  /** Replaces, in `objects`, the relations named in `tree` by the objects they point to (or adds the back-relations). */
  async expand(ctx: Context, objects: Record<string, unknown>[], tree: ReadonlyMap<string, ExpandNode>): Promise<void> {
    if (objects.length === 0) return;
    for (const [name, node] of tree) {
      const def = this.forwardFor(ctx, name);
      if (def !== undefined) await this.expandForward(ctx, objects, name, def, node);
      else await this.expandBack(ctx, objects, name, node);
    }
  }

  /** The relation property `name` of the owner, when ctx's caller may filter by it (else `name` may be a back-relation). */
  forwardFor(ctx: Context, name: string): PropertyDef | undefined {
    const def = this.forward.get(name);
    return def !== undefined && Object.hasOwn(this.owner.queryableFor(ctx), name) ? def : undefined;
  }

  /** One read of the target for every id of the relation at this level. */
  private async expandForward(ctx: Context, objects: Record<string, unknown>[], name: string, def: PropertyDef, node: ExpandNode): Promise<void> {
    const target = this.relationsAt(def.collection ?? '');
    if (target === undefined) return;
    const ids = new Set<string>();
    for (const o of objects) for (const id of idsOf(o[name]) ?? []) ids.add(id);
    if (ids.size > this.settings.maxExpanded) throw tooMany(name, this.settings.maxExpanded);
    const rows = ids.size === 0 ? [] : await target.owner.readAs(ctx, readQuery(node, { id: { $in: [...ids] } }, ['id'], target.owner.unprojectableFor(ctx)));
    const byId = new Map<unknown, Record<string, unknown>>();
    const order = new Map<unknown, number>();
    rows.forEach((row, i) => {
      byId.set(row.id, row);
      order.set(row.id, i);
    });
    if (node.children.size > 0) await target.expand(ctx, rows, node.children);
    for (const o of objects) {
      const value = o[name];
      if (value === undefined || value === null) continue;
      if (def.many !== true) {
        o[name] = typeof value === 'string' ? (byId.get(value) ?? null) : null;
        continue;
      }
      let ids = (idsOf(value) ?? []).filter((id) => byId.has(id));
      if (node.sort !== undefined) ids = ids.sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
      if (node.limit !== undefined) ids = ids.slice(0, node.limit);
      o[name] = ids.map((id) => byId.get(id));
    }
  }

  /** `<collection>_via_<property>`: the objects of another collection whose relation points here, one read for all. */
  private async expandBack(ctx: Context, objects: Record<string, unknown>[], name: string, node: ExpandNode): Promise<void> {
    const referrer = this.backRelation(ctx, name);
    const { from, property } = referrer;
    const parentIds = [...new Set(objects.map((o) => o.id).filter((id): id is string => typeof id === 'string'))];
    const limit = this.settings.maxExpanded;
    const rows = parentIds.length === 0 ? [] : await from.owner.readAs(ctx, { ...readQuery(node, { [property]: { $in: parentIds } }, ['id', property], from.owner.unprojectableFor(ctx)), $limit: limit + 1 });
    if (rows.length > limit) throw tooMany(name, limit);
    const byParent = new Map<string, Record<string, unknown>[]>();
    for (const row of rows) {
      for (const id of idsOf(row[property]) ?? []) {
        let list = byParent.get(id);
        if (list === undefined) byParent.set(id, (list = []));
        list.push(row);
      }
    }
    if (node.children.size > 0) await from.expand(ctx, rows, node.children);
    for (const o of objects) {
      const list = typeof o.id === 'string' ? (byParent.get(o.id) ?? []) : [];
      o[name] = node.limit === undefined ? list : list.slice(0, node.limit);
    }
  }

  /** The referrer a back-relation name stands for; one the caller may not filter by is no relation to it. */
  backRelation(ctx: Context, name: string): Referrer {
    const found = this.backRelationOrUndefined(ctx, name);
    if (found === undefined) throw new SvcError('INVALID_QUERY', `$expand: ${this.owner.path.slice(1)} has no relation ${name}`);
    return found;
  }

  /** {@link backRelation}, undefined where that throws. */
  backRelationOrUndefined(ctx: Context, name: string): Referrer | undefined {
    const via = name.lastIndexOf('_via_');
    if (via > 0) {
      const collection = `/${name.slice(0, via)}`;
      const property = name.slice(via + 5);
      for (const referrer of this.referrers()) {
        if (backRelationName(referrer.from.owner.path, referrer.property) !== `${collection.slice(1)}_via_${property}`) continue;
        if (Object.hasOwn(referrer.from.owner.queryableFor(ctx), property)) return referrer;
      }
    }
    return undefined;
  }

  // ---- aggregates ----

  /** GET /<c>/aggregate: counts and measures of the caller's objects, grouped. */
  aggregate(ctx: Context): Promise<Reply> {
    if (!this.countsOpenTo(ctx)) return Promise.reject(new SvcError('FORBIDDEN', 'aggregates are available to root only on a collection with an On Get script; open them with "publicCount" in app.json'));
    return aggregate(this, ctx);
  }
}

/** The relations of a resource that has some (a Collection). */
function relationsOf(resource: unknown): Relations | undefined {
  const relations = (resource as { relations?: unknown } | undefined)?.relations;
  return relations instanceof Relations ? relations : undefined;
}

/** `comments_via_post`: the name of a back-relation (a nested collection's `/` becomes `_`). */
export function backRelationName(collectionPath: string, property: string): string {
  return `${collectionPath.slice(1).replaceAll('/', '_')}_via_${property}`;
}

/** The ids of a relation value: one id or an array of ids; undefined when it is neither. */
export function idsOf(value: unknown): string[] | undefined {
  if (typeof value === 'string') return value === '' ? [] : [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  return undefined;
}

/**
 * A related read's query: the expansion's own options, and the keys the join needs kept. `hidden`:
 * what the caller may not read of the related objects, left out of `$fields` first (as the read
 * leaves it out), so that the join's keys are added to what remains only.
 */
export function readQuery(node: ExpandNode, filter: Record<string, unknown>, keep: readonly string[], hidden: ReadonlySet<string> = NONE_HIDDEN): Record<string, unknown> {
  const query: Record<string, unknown> = { ...filter };
  if (node.sort !== undefined) query.$sort = node.sort;
  const fields = Object.fromEntries(Object.entries(node.fields ?? {}).filter(([key]) => !hidden.has(key.split('.')[0] as string)));
  if (Object.keys(fields).length > 0) {
    const including = Object.entries(fields).some(([key, v]) => key !== 'id' && (v === 1 || v === true || v === '1'));
    for (const key of keep) {
      if (including) fields[key] = 1;
      else delete fields[key];
    }
    query.$fields = fields;
  }
  return query;
}

const NONE_HIDDEN: ReadonlySet<string> = new Set();

export function tooMany(name: string, limit: number): SvcError {
  return new SvcError('PAYLOAD_TOO_LARGE', `$expand: ${name} would read more than ${limit} objects; ask for fewer (app.json relations.maxExpanded)`);
}
