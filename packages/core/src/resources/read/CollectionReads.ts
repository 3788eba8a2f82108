import { anonymousCaller } from '../../access/CollectionAccess.js';
import type { CollectionAccess } from '../../access/CollectionAccess.js';
import { andFilters } from '../../access/compileRule.js';
import type { ReadScope, Visibility } from '../../access/Visibility.js';
import { SvcError } from '../../errors.js';
import { jsonList } from '../../jsonList.js';
import { compileFilter } from '../../query/compileQuery.js';
import { isPlainObject } from '../../query/parseQueryString.js';
import { plainJson } from '../../query/plainJson.js';
import type { CompiledQuery } from '../../query/compileQuery.js';
import { expandTexts, expandsAsText, keptAnswerKey, keysToExpand } from '../../relations/expandTexts.js';
import type { ExpandNode } from '../../relations/parseExpand.js';
import type { RelationQuery, Relations } from '../../relations/Relations.js';
import type { Doc, Filter, FindOptions, StoreCollection, StoredTexts } from '../../store/Store.js';
import type { Context, Reply } from '../../types.js';
import type { CollectionEventRunner } from '../events.js';
import { listFromChanges } from '../storedChanges.js';
import { listJson, objectJson, Patcher } from '../storedJson.js';
import { applyHidden } from '../updates.js';
import { planAnswer } from './answerPlan.js';
import { filterKeys, keepAllowed, pickWith } from './rowsAllowed.js';
import type { AnswerPlan, OnGetFacts, PlanFacts, TextReads } from './answerPlan.js';

/** What a Collection gives its reads. */
export interface CollectionReadsOptions {
  store: StoreCollection;
  events: CollectionEventRunner;
  access: CollectionAccess;
  visibility: Visibility;
  relations: Relations;
}

/** A request's `$expand` while it is answered. */
interface Expanding {
  tree: ReadonlyMap<string, ExpandNode>;
  /** Its list was answered expanded, from the stored texts (nothing left for Relations.finish to expand). */
  asText: boolean;
}

/** CollectionReads made so far in the process (each one's serial). */
let serials = 0;

/** No values picked: the objects' texts alone (see StoreCollection.findTexts). */
const NO_NAMES: readonly string[] = [];

/**
 * A Collection's GETs and the reads made on a caller's behalf (`$expand`, live queries, emits):
 * each GET's plan chosen by {@link planAnswer}, then answered the way it says; every answer goes
 * through the net ({@link guard}) before it leaves.
 */
export class CollectionReads {
  private readonly store: StoreCollection;
  private readonly events: CollectionEventRunner;
  private readonly access: CollectionAccess;
  private readonly visibility: Visibility;
  private readonly relations: Relations;
  /** false: every read takes the plain path (ResourceHost.fastPaths, from init). */
  fastPaths = true;
  /** This object's number in the process (textsKey): answers kept for another configuration's reads are not this one's. */
  private readonly serial = ++serials;
  /** What the store reads as text or at once: fixed for the collection. */
  private readonly textReads: TextReads;
  /** The facts of the server's synchronous path, made once (its request-dependent fact set per call). */
  private nowFacts: (PlanFacts & { byId: boolean }) | undefined;
  /** The constant On Get's patcher of stored texts (made at the first such answer). */
  private nowPatcher: Patcher | undefined;
  /**
   * Requests under way whose answer `$expand` completes. Each entry lives while its request is
   * answered: a Map, not a WeakMap, whose entries keyed by a young object cost the garbage
   * collector at every scavenge.
   */
  private readonly expanding = new Map<Context, Expanding>();
  /** The names readTextsOfIdsNow reads with a list rule's, one list per set (pickWith; bounded). */
  private readonly pickLists = new Map<string, readonly string[]>();

  constructor(options: CollectionReadsOptions) {
    this.store = options.store;
    this.events = options.events;
    this.access = options.access;
    this.visibility = options.visibility;
    this.relations = options.relations;
    const s = this.store;
    this.textReads = {
      findOneJsonNow: s.findOneJsonNow !== undefined,
      findOneWithJsonNow: s.findOneWithJsonNow !== undefined,
      findOneJson: s.findOneJson !== undefined,
      findJson: s.findJson !== undefined,
      findTexts: s.findTexts !== undefined,
      findWithJson: s.findWithJson !== undefined,
    };
  }

  /**
   * Runs a write request with ctx's read scope made once: its pre-read, its checks of what the
   * caller may not read and the net on its answer all take that scope ({@link scopeOf}).
   */
  async withScope(ctx: Context, run: (scope: ReadScope) => Promise<Reply>): Promise<Reply> {
    const scope = this.visibility.scope(ctx);
    return this.guard(scope, await run(scope));
  }

  /**
   * ctx's read scope, from the one function that makes them (Visibility.scope): the request's, or
   * the live query's, made once and taken by every read made for it, here and through `$expand`.
   */
  scopeOf(ctx: Context): ReadScope {
    return this.visibility.scope(ctx);
  }

  /** On Get as plans see it; undefined when there is none or `skipped` ($skipEvents by root). */
  private onGet(skipped: boolean): OnGetFacts | undefined {
    const events = this.events;
    if (skipped || !events.has('get')) return undefined;
    const reads = events.getColumns?.reads;
    // A script naming `this.__proto__` sees what the copy of the object makes of it: objects.
    return { constant: events.getNow !== undefined, columns: reads !== undefined && !reads.includes('__proto__') };
  }

  // ---- the server's synchronous path ----

  /**
   * GET /<c>/<id> answered at once (Resource.answerNow), when its plan says so: the stored text,
   * or for a constant On Get the kept answer or the text patched by the run. The read rule is
   * tested on the stored text as for an anonymous caller whose query is `{id}`. Undefined:
   * `handle` answers (not found, hidden by the rule, a write under way, anything else).
   */
  answerNow(parts: readonly string[], plainAnonymous: boolean, answered: { plan: string | undefined }): string | undefined {
    const facts = (this.nowFacts ??= this.makeNowFacts());
    const id = parts[0];
    facts.byId = parts.length === 1 && id !== undefined && id !== '' && id !== 'count' && id !== 'aggregate';
    (facts as { plainAnonymous: boolean }).plainAnonymous = plainAnonymous;
    const plan = planAnswer(facts);
    if (plan === 'objects') return undefined;
    const text = this.store.findOneJsonNow?.(id as string) ?? undefined;
    // The one rule evaluator, with the caller the usual path gives it.
    if (text === undefined || !this.access.allowsText(anonymousCaller({ id }), text)) return undefined;
    const answer = plan === 'constantPlan' ? this.constantNow(id as string) : text;
    if (answer !== undefined) answered.plan = plan;
    // The net of the synchronous path: a text only for a caller shown stored objects as they are.
    if (answer !== undefined && !this.visibility.anonymousAsStored) throw new SvcError('INTERNAL', `a stored text may not answer this caller (plan ${plan})`);
    return answer;
  }

  private makeNowFacts(): PlanFacts & { byId: boolean } {
    return {
      fastPaths: this.fastPaths,
      now: true,
      plainAnonymous: false,
      byId: false,
      query: false,
      fields: false,
      expand: false,
      internal: false,
      asStored: this.visibility.anonymousAsStored,
      beforeRequest: this.events.has('beforerequest'),
      onGet: this.onGet(false),
      store: this.textReads,
      expandsAsText: () => false,
    };
  }

  /** A constant On Get at once: the object read at once, the run's changes patched into its stored text. */
  private constantNow(id: string): string | undefined {
    // The same object as the text the rule was tested on (nothing runs in between).
    const found = this.store.findOneWithJsonNow?.(id) ?? undefined;
    if (found === undefined) return undefined;
    const outcome = this.events.getNow?.(found.doc);
    if (outcome === undefined) return undefined;
    // One patcher for these answers: runs that compare alike share their assigned list, so the
    // text it appends is made once.
    return objectJson(found.text, outcome, (this.nowPatcher ??= new Patcher()));
  }

  // ---- GET ----

  /**
   * A GET: `$expand` and `$total` taken out of the query, the answer made by its plan, shown to the
   * caller by the net, then completed by relations.
   */
  async get(ctx: Context, idOf: (ctx: Context) => string | undefined): Promise<Reply> {
    let related = this.relations.asked(ctx.query) ? this.relations.takeQuery(ctx) : undefined;
    if (related instanceof Promise) related = await related;
    const expanding: Expanding | undefined = related?.expand !== undefined ? { tree: related.expand, asText: false } : undefined;
    if (expanding !== undefined) this.expanding.set(ctx, expanding);
    let reply: Reply;
    try {
      reply = await this.answer(ctx, idOf);
    } finally {
      if (expanding !== undefined) this.expanding.delete(ctx);
    }
    const visible = this.guard(this.scopeOf(ctx), reply);
    return this.complete(ctx, related as RelationQuery | undefined, expanding, visible);
  }

  /**
   * The net every answer of the collection goes through, whatever made it: no private property,
   * nothing a read rule drops for this caller (rules that depend on the object were applied where
   * the stored object was in hand), and no text but one made for this scope (ReadScope.textReply).
   */
  guard(scope: ReadScope, reply: Reply): Reply {
    scope.checkText(reply);
    return scope.hides ? visibleReply(reply, (object) => scope.finish(object, null)) : reply;
  }

  /** What relations add to an answer: the objects `$expand` asks for (unless spliced already), `$total`. */
  private complete(ctx: Context, related: RelationQuery | undefined, expanding: Expanding | undefined, reply: Reply): Promise<Reply> | Reply {
    if (related === undefined) return reply;
    // Expanded from the texts already, and no total to add: finish would answer it as it is.
    if (expanding?.asText === true) return related.total ? this.relations.finish(ctx, { ...related, expand: undefined }, reply) : reply;
    return this.relations.finish(ctx, related, reply);
  }

  private async answer(ctx: Context, idOf: (ctx: Context) => string | undefined): Promise<Reply> {
    if (ctx.parts.length > 1) throw new SvcError('NOT_FOUND', 'not found');
    // The request's one scope, taken by every read of it (counts, aggregates, $expand's reads, the net).
    const scope = this.scopeOf(ctx);
    if (ctx.parts[0] === 'count') return this.count(ctx);
    if (ctx.parts[0] === 'aggregate') return this.relations.aggregate(ctx);
    const only = ctx.parts[0];
    const byId = only !== undefined && only !== '';
    if (byId) {
      // GET /<c>/<id>: planned before the query is compiled (a stored text answers no query at all).
      const plan = planAnswer(this.facts(ctx, scope, { byId, query: hasKeys(ctx.query), fields: false, skipped: false }));
      const reply = plan === 'objects' ? undefined : await this.objectText(ctx, scope, only, plan, idOf);
      if (reply !== undefined) return reply;
    }
    const id = idOf(ctx);
    const { compiled, options, projectAfter } = scope.compile(ctx.query);
    const skipEvents = compiled.skipEvents && ctx.isRoot;
    if (id !== undefined) return this.object(ctx, scope, id, compiled, options, projectAfter, skipEvents);
    compiled.filter = andFilters(compiled.filter, scope.filter('list'));
    const plan = planAnswer(this.facts(ctx, scope, { byId: false, query: true, fields: compiled.options.fields !== undefined, skipped: skipEvents }));
    if (plan !== 'objects') {
      const { fields: _fields, ...rest } = compiled.options;
      const reply = await this.listText(ctx, scope, plan, compiled.filter, rest);
      if (reply !== undefined) return reply;
    }
    const docs = await this.store.find(compiled.filter, options);
    return { status: 200, body: (await this.shown(ctx, docs, skipEvents)).map(([doc, shown]) => scope.finish(shown, doc, projectAfter)), plan: 'objects' };
  }

  /** The facts of ctx's GET for planAnswer. */
  private facts(ctx: Context, scope: ReadScope, request: { byId: boolean; query: boolean; fields: boolean; skipped: boolean }): PlanFacts {
    const expanding = this.expanding.get(ctx);
    return {
      fastPaths: this.fastPaths,
      now: false,
      plainAnonymous: false,
      byId: request.byId,
      query: request.query,
      fields: request.fields,
      expand: expanding !== undefined,
      internal: ctx.internal,
      asStored: scope.asStored,
      beforeRequest: false,
      onGet: this.onGet(request.skipped),
      store: this.textReads,
      expandsAsText: () => expanding !== undefined && expandsAsText(this.relations, ctx, expanding.tree),
    };
  }

  /**
   * GET /<c>/<id> with nothing else, as a stored text: `storedText` (its read rule tested on that
   * very text: one snapshot, no write can come in between) or `scriptedText` (On Get run on the
   * object read at once, its changes patched into the text; undefined when the store is busy).
   */
  private async objectText(ctx: Context, scope: ReadScope, id: string, plan: AnswerPlan, idOf: (ctx: Context) => string | undefined): Promise<Reply | undefined> {
    if (plan === 'storedText') {
      ctx.query.id = id;
      const text = await this.store.findOneJson?.(id);
      if (text === undefined) return undefined;
      if (text === null || !scope.allowsText(text)) throw new SvcError('NOT_FOUND', 'not found');
      return scope.textReply(text, plan);
    }
    // idOf sets query.id, which the script sees, as on the usual path. The read rule is tested on
    // the text before the script runs (an object it hides is not found).
    const found = this.store.findOneWithJsonNow?.(idOf(ctx) as string);
    if (found === null || (found !== undefined && !scope.allowsText(found.text))) throw new SvcError('NOT_FOUND', 'not found');
    if (found === undefined) return undefined;
    return scope.textReply(objectJson(found.text, await this.events.run('get', { ctx, object: found.doc })), plan);
  }

  /** GET /<c>/<id> on the plain path: the object read through the rules, On Get, shown to the caller. */
  private async object(ctx: Context, scope: ReadScope, id: string, compiled: CompiledQuery, options: FindOptions, projectAfter: Record<string, 0 | 1> | undefined, skipEvents: boolean): Promise<Reply> {
    compiled.filter.id = id;
    // An object the read rule hides is not found (404): no telling whether it exists.
    const doc = await this.store.findOne(andFilters(compiled.filter, scope.filter('read')), options);
    if (doc === null) throw new SvcError('NOT_FOUND', 'not found');
    const shown = skipEvents || !this.events.has('get') ? this.visibility.withoutStoreOnly(doc) : await this.afterGetOne(ctx, doc);
    return { status: 200, body: scope.finish(shown, doc, projectAfter), plan: 'objects' };
  }

  /** A list answered from the stored texts by its plan; undefined when the plan gives way to objects. */
  private async listText(ctx: Context, scope: ReadScope, plan: AnswerPlan, filter: Filter, options: Omit<FindOptions, 'fields'>): Promise<Reply | undefined> {
    switch (plan) {
      case 'splicedTexts':
        return this.splicedList(ctx, scope, filter, options);
      case 'storedTexts': {
        // The stored objects' own JSON texts, joined: no copy, no stringify.
        const text = await this.store.findJson?.(filter, options);
        return text === undefined ? undefined : scope.textReply(text, plan);
      }
      case 'columns': {
        // On Get reading only named properties: those values cross, the run's changes come back and
        // are spliced into the stored texts; no object is copied (storedChanges.ts).
        const columns = this.events.getColumns;
        const rows = columns === undefined ? undefined : await this.store.findTexts?.(filter, options, columns.reads);
        if (columns === undefined || rows === undefined) return undefined;
        return scope.textReply(listFromChanges(rows, columns.reads, await columns.run(ctx, rows.values, rows.texts.length)), plan);
      }
      case 'patchedTexts': {
        // On Get patches the stored texts: only objects it changed beyond new properties are serialised.
        const found = await this.store.findWithJson?.(filter, options);
        return found === undefined ? undefined : scope.textReply(listJson(found.texts, await this.events.runGetBatch(ctx, found.docs)), plan);
      }
      default:
        return undefined;
    }
  }

  /**
   * `$expand` from the stored texts, each object's related texts spliced in; the answer kept with
   * the list's rows when the store keeps them (KeptList), under the key of everything else it
   * was made of (keptAnswerKey), and answered from there while both are the same.
   */
  private async splicedList(ctx: Context, scope: ReadScope, filter: Filter, options: Omit<FindOptions, 'fields'>): Promise<Reply | undefined> {
    const expanding = this.expanding.get(ctx) as Expanding;
    const expand = expanding.tree;
    const store = this.store;
    if (store.findTexts === undefined) return undefined;
    // Looked up once the writes under way are done (keptList waits for them), the key taken then.
    const list = store.keptList === undefined ? undefined : await store.keptList(filter, options);
    const key = store.keptList === undefined ? undefined : keptAnswerKey(this.relations, ctx, expand);
    const kept = key === undefined || list === undefined ? undefined : list.answer(key);
    if (kept !== undefined) {
      expanding.asText = true;
      return scope.textReply(kept, 'splicedTexts');
    }
    const pick = keysToExpand(this.relations, expand);
    const rows = { ...(await store.findTexts(filter, options, pick)), pick };
    if (!(await expandTexts(this.relations, ctx, rows, expand))) return undefined;
    expanding.asText = true;
    const text = jsonList(rows.texts);
    if (key !== undefined) rows.list?.keep(key, text);
    return scope.textReply(text, 'splicedTexts');
  }

  // ---- reads on a caller's behalf ----

  /**
   * The one read path for a caller: what GET /<c>?query answers to ctx's caller, as objects.
   * `$expand`, filters across relations and live queries go through it, so what applies to a
   * GET (private properties, On Get, access rules) applies to them all.
   */
  async readAs(ctx: Context, query: Record<string, unknown>): Promise<Record<string, unknown>[]> {
    const scope = this.scopeOf(ctx);
    const { compiled, filter, options, projectAfter } = readFor(scope, query);
    const docs = await this.store.find(filter, options);
    return (await this.shown(ctx, docs, compiled.skipEvents && ctx.isRoot)).map(([doc, shown]) => scope.finish(shown, doc, projectAfter));
  }

  /** GET /<c>/<id>'s object for ctx's caller and the stored object it was made of; null where the read rule hides it (Collection.readOneAs). */
  async readOneAs(ctx: Context, id: string): Promise<{ stored: Doc; shown: Record<string, unknown> } | null> {
    const scope = this.scopeOf(ctx);
    const doc = await this.store.findOne(andFilters({ id }, scope.filter('read')));
    if (doc === null) return null;
    const shown = this.events.has('get') ? await this.afterGetOne(ctx, doc) : this.visibility.withoutStoreOnly(doc);
    return { stored: doc, shown: scope.finish(shown, doc) };
  }

  /**
   * What {@link readAs} answers, as the stored objects' JSON texts beside the values of `pick`,
   * when readAs would answer ctx's caller the stored objects exactly as they are
   * ({@link showsTextsTo}, and no `$fields`); undefined otherwise. `anyOrder`: the caller looks
   * each object up by id, so without a `$sort` the store may skip ordering them.
   */
  async readTextsAs(ctx: Context, query: Record<string, unknown>, pick: readonly string[], anyOrder = false): Promise<StoredTexts | undefined> {
    if (!this.showsTextsTo(ctx) || this.store.findTexts === undefined) return undefined;
    const { filter, options } = readFor(this.scopeOf(ctx), query);
    if (options.fields !== undefined) return undefined;
    return this.store.findTexts(filter, anyOrder ? { ...options, anyOrder } : options, pick);
  }

  /**
   * {@link readTextsAs} of `{id: {$in: ids}}` in any order (`$expand`'s related read), answered at
   * once from the store's id index when that query is the whole of this caller's read: nothing
   * refused, no read plan, no access filter. Undefined otherwise, or when the store cannot answer
   * at once: the caller then asks readTextsAs.
   */
  readTextsOfIdsNow(ctx: Context, ids: readonly string[], pick: readonly string[]): StoredTexts | undefined {
    const filter = this.idsNowFilter(ctx);
    if (filter === undefined) return undefined;
    if (filter.keys.length === 0) return this.store.findTextsOfIdsNow?.(ids, pick);
    // A list rule (an owner rule): the values it tests read beside the texts, its refusals dropped.
    const all = pickWith(pick, filter.keys, this.pickLists);
    const found = this.store.findTextsOfIdsNow?.(ids, all);
    return found === undefined ? undefined : keepAllowed(found, all, pick.length, filter.filter, filter.keys);
  }

  /**
   * The list rule's filter of ctx's caller and the names it tests ({} and none: nothing limits the
   * read), when readTextsOfIdsNow may answer: a store that reads ids at once, texts shown as
   * stored, nothing refused, no property rule, and a filter that tests properties only.
   */
  private idsNowFilter(ctx: Context): { filter: Filter; keys: readonly string[] } | undefined {
    if (this.store.findTextsOfIdsNow === undefined || !this.showsTextsTo(ctx)) return undefined;
    const scope = this.scopeOf(ctx);
    if (scope.plan !== undefined || scope.refusals.unqueryable !== undefined) return undefined;
    const filter = scope.filter('list');
    const keys = hasKeys(filter) ? filterKeys(filter) : NO_NAMES;
    return keys === undefined ? undefined : { filter, keys };
  }

  /**
   * What ctx's caller's text reads of this collection ({@link readTextsAs}, {@link readTextsOfIdsNow})
   * depend on besides the query, as a key: these reads (a serial of this object: a new
   * configuration makes new ones), the store's generation (another after every write) and the
   * caller's list filter. Undefined unless the caller is shown the texts as stored, nothing is
   * refused to it and its filter is plain JSON: then nothing read for it is kept. `listed`: for
   * the kept list's own collection, whose rows are kept apart (KeptList): its generation is left
   * out, so that writes of other lists' objects leave the answer kept.
   */
  textsKey(ctx: Context, listed = false): string | undefined {
    if (!this.showsTextsTo(ctx)) return undefined;
    const generation = listed ? 0 : this.store.generationNow?.();
    if (generation === undefined) return undefined;
    const scope = this.scopeOf(ctx);
    const refusals = scope.refusals;
    if (scope.plan !== undefined || refusals.unqueryable !== undefined || refusals.unprojectable !== undefined) return undefined;
    const filter = scope.filter('list');
    return plainJson(filter, 0) ? `${this.serial}:${generation}:${JSON.stringify(filter)}` : undefined;
  }

  /** Whether readAs answers ctx's caller the stored objects as they are: shortcuts on, no On Get, nothing hidden, a store that keeps texts. */
  showsTextsTo(ctx: Context): boolean {
    return this.fastPaths && !ctx.internal && this.store.findTexts !== undefined && !this.events.has('get') && this.scopeOf(ctx).asStored;
  }

  /**
   * Objects already read (a live query's changed object, an emitted one), shown to ctx's caller
   * exactly as a GET by that caller would show them, in order; null where the caller may not see
   * one (On Get cancelled it, or the read rule hides it).
   */
  async showTo(ctx: Context, docs: readonly Doc[]): Promise<(Record<string, unknown> | null)[]> {
    const scope = this.scopeOf(ctx);
    // The read rule, evaluated on each object as stored: what it hides is null, as a GET would 404.
    const allowed = docs.map((d) => scope.allows(d));
    const readable = docs.filter((_d, i) => allowed[i]).map((d) => ({ ...d }));
    const shown = new Map<Doc, Record<string, unknown>>();
    for (const [doc, object] of await this.shown(ctx, readable, false)) shown.set(doc, scope.finish(object, doc));
    let next = 0;
    return docs.map((_d, i) => (allowed[i] ? (shown.get(readable[next++] as Doc) ?? null) : null));
  }

  /** A list's objects, each with what On Get (unless skipped) made of it, store-only fields left out; those On Get cancelled are left out. */
  private async shown(ctx: Context, docs: Doc[], skipEvents: boolean): Promise<[Doc, Record<string, unknown>][]> {
    const visibility = this.visibility;
    if (skipEvents || !this.events.has('get')) return docs.map((d) => [d, visibility.withoutStoreOnly(d)]);
    const outcomes = await this.events.runGetBatch(ctx, visibility.storedIsShown ? docs : docs.map((d) => visibility.withoutStoreOnly(d)));
    const out: [Doc, Record<string, unknown>][] = [];
    outcomes.forEach((outcome, i) => {
      if (outcome !== null) out.push([docs[i] as Doc, visibility.withoutStoreOnly(applyHidden(outcome))]);
    });
    return out;
  }

  private async count(ctx: Context): Promise<Reply> {
    this.visibility.assertCount(ctx);
    const scope = this.scopeOf(ctx);
    const filter = compileFilter(ctx.query, this.visibility.properties, scope.refusals);
    return { status: 200, body: { count: await this.store.count(andFilters(filter, scope.filter('list'))) } };
  }

  private async afterGetOne(ctx: Context, doc: Doc): Promise<Record<string, unknown>> {
    const outcome = await this.events.run('get', { ctx, object: this.visibility.withoutStoreOnly(doc) });
    return this.visibility.withoutStoreOnly(applyHidden(outcome));
  }
}

/** readAs's store query for a caller: the query compiled with its refusals, the access rules' filter ANDed in. */
function readFor(scope: ReadScope, query: Record<string, unknown>): { compiled: CompiledQuery; filter: Filter; options: FindOptions; projectAfter: Record<string, 0 | 1> | undefined } {
  const { compiled, options, projectAfter } = scope.compile(query);
  return { compiled, filter: andFilters(compiled.filter, scope.filter('list')), options, projectAfter };
}

/** A reply whose object or objects are shown through `visible` (what the caller may read of each). */
export function visibleReply(reply: Reply, visible: (object: Record<string, unknown>) => Record<string, unknown>): Reply {
  const strip = (value: unknown): unknown => (isPlainObject(value) ? visible(value) : value);
  const body = reply.body;
  if (Array.isArray(body)) return { ...reply, body: body.map(strip) };
  return isPlainObject(body) ? { ...reply, body: strip(body) } : reply;
}

/** Whether an object has an own enumerable key (without listing them all). */
function hasKeys(value: Record<string, unknown>): boolean {
  for (const _key in value) return true;
  return false;
}
