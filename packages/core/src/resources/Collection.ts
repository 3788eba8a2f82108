import { AccessRules } from '../access/AccessRules.js';
import { CollectionAccess } from '../access/CollectionAccess.js';
import type { AccessExplanation } from '../access/CollectionAccess.js';
import { Visibility } from '../access/Visibility.js';
import type { ReadScope, VisibilityFacts } from '../access/Visibility.js';
import { andFilters } from '../access/compileRule.js';
import { SvcError, isSvcError } from '../errors.js';
import { createId } from '../ids.js';
import { compileFilter } from '../query/compileQuery.js';
import type { CompiledQuery } from '../query/compileQuery.js';
import { isPlainObject } from '../query/parseQueryString.js';
import type { ClientShape, NowRequest, Resource, ResourceHost } from '../resource.js';
import { DuplicateKeyError } from '../store/Store.js';
import type { Doc, Filter, StoreCollection, StoredTexts } from '../store/Store.js';
import type { Logger } from '../logger.js';
import type { Context, PropertyDef, Reply } from '../types.js';
import type { ChangesWanted, CollectionChange, CollectionChangeListener, ObjectChange } from './changes.js';
import type { CollectionEvent, CollectionEventRunner, EventOutcome } from './events.js';
import { requiredErrors, sanitizeBody } from './sanitize.js';
import { Relations } from '../relations/Relations.js';
import { relationSettings } from '../relations/relationSettings.js';
import type { RelationSettings } from '../relations/relationSettings.js';
import { applyModifiersLocally, deepEqual, diffUpdate, hideFrom } from './updates.js';
import { CollectionReads } from './read/CollectionReads.js';

/** Options of a {@link Collection}. */
export interface CollectionOptions {
  /** Mount path, '/todos'. */
  path: string;
  properties: Record<string, PropertyDef>;
  store: StoreCollection;
  /** Event scripts; none when the resource has no script files. */
  events?: CollectionEventRunner;
  /** Whether non-root requests may GET /<c>/count (On Get scripts may hide objects a count reveals). */
  publicCount?: boolean;
  /**
   * Access rules (config.json `rules`, docs/access-rules.md): one per action, absent = open.
   * Checked here: a bad rule throws, naming `configFile`, the rule and the bad part.
   */
  rules?: unknown;
  /** Where the rules were written, for errors (`resources/posts/config.json`); default `<path>/config.json`. */
  configFile?: string;
  /** The properties of the app's user collections, to type-check `@me.*`; undefined: unchecked. */
  meProperties?: Record<string, PropertyDef>;
  /** Limits of `$expand`, filters across relations and aggregates (app.json `relations`, `aggregate`). */
  relations?: Partial<RelationSettings>;
}

const NO_MATCH = 'No object exists that matches that query';
const NO_EVENTS: CollectionEventRunner = {
  has: () => false,
  run: (_event, input) => Promise.resolve({ object: input.object, hidden: [], protectedProps: [] }),
  runGetBatch: (_ctx, objects) => Promise.resolve(objects.map((object) => ({ object, hidden: [], protectedProps: [] }))),
};

/** The Collection resource: a store of JSON objects over HTTP, with the spec's endpoints and rules. */
export class Collection implements Resource {
  readonly path: string;
  readonly type: string = 'Collection';
  readonly client: ClientShape = { collection: true };
  readonly properties: Record<string, PropertyDef>;
  protected readonly store: StoreCollection;
  protected readonly events: CollectionEventRunner;
  /** The server's logger, from init(). */
  protected logger: Logger | undefined;
  /** Told every stored write (live queries); deletes read what they remove while one wants them. */
  private readonly changeListeners = new Map<CollectionChangeListener, ChangesWanted>();
  /** Relation properties, `$expand`, filters across relations, `$total` and aggregates. */
  readonly relations: Relations;
  /** GETs and the reads made on a caller's behalf: each GET's plan chosen, then answered that way. */
  private readonly reads: CollectionReads;
  /** The access rules: the one place that decides what a caller may list, read and write. */
  protected readonly access: CollectionAccess;
  /** What each caller sees: private properties, store-only fields, property read rules, count gates. */
  protected readonly visibility: Visibility;

  /**
   * `facts`: what a subclass tells of its objects (UserCollection: the fields stored only, /me);
   * see {@link VisibilityFacts}.
   */
  constructor(options: CollectionOptions, facts: Omit<VisibilityFacts, 'publicCount'> = {}) {
    this.path = options.path;
    this.properties = options.properties;
    this.access = new CollectionAccess(
      AccessRules.parse({ rules: options.rules, properties: options.properties, file: options.configFile ?? `resources${options.path}/config.json`, me: options.meProperties }),
    );
    this.visibility = new Visibility(this.access, options.properties, { ...facts, publicCount: options.publicCount ?? false });
    this.store = options.store;
    this.events = options.events ?? NO_EVENTS;
    this.relations = new Relations({ owner: this, store: this.store, settings: relationSettings(options.relations), onRemoved: (ids) => this.afterDelete(ids) });
    // Counts (as /count): On Get may hide objects that a count would reveal.
    this.relations.countsOpenTo = (ctx) => this.visibility.totalsOpenTo(ctx, this.events.has('get'));
    this.reads = new CollectionReads({ store: this.store, events: this.events, access: this.access, visibility: this.visibility, relations: this.relations });
  }

  /**
   * Calls `listener` after every stored write of this collection (create, update, delete, from
   * any request, script or root), in the store's order; answers a function that stops it.
   * `wanted` (default: always) says when it needs them: a delete reads the object it removes only
   * while some listener does.
   */
  watchChanges(listener: CollectionChangeListener, wanted: ChangesWanted = () => true): () => void {
    this.changeListeners.set(listener, wanted);
    return () => this.changeListeners.delete(listener);
  }

  /** Whether some change listener needs this collection's writes now (cheap: asked per delete). */
  wantsChanges(): boolean {
    for (const wanted of this.changeListeners.values()) if (wanted()) return true;
    return false;
  }

  /**
   * Tells the change listeners of writes made to this collection's store outside its own request
   * paths (relations' onDelete upkeep, imports), objects as stored; store-only fields are dropped.
   */
  async tellChanges(changes: readonly ObjectChange[]): Promise<void> {
    if (this.changeListeners.size === 0) return;
    for (const change of changes) {
      await this.changed(
        change.kind === 'update'
          ? { kind: 'update', object: this.withoutStoreOnly(change.object), previous: this.withoutStoreOnly(change.previous) }
          : { kind: change.kind, object: this.withoutStoreOnly(change.object) },
      );
    }
  }

  /** Tells the change listeners that objects changed without saying which (a restore): they start afresh. */
  async tellResync(): Promise<void> {
    await this.changed({ kind: 'resync' });
  }

  private async changed(change: CollectionChange): Promise<void> {
    for (const listener of this.changeListeners.keys()) await listener(change);
  }

  /**
   * After a delete: the objects read before it, told deleted; or, when none was read because no
   * listener wanted changes then but one does now (a live query started meanwhile), a resync.
   */
  private async deleted(docs: readonly Doc[] | undefined): Promise<void> {
    if (this.changeListeners.size === 0) return;
    if (docs === undefined) {
      if (this.wantsChanges()) await this.tellResync();
      return;
    }
    for (const doc of docs) await this.changed({ kind: 'delete', object: this.withoutStoreOnly(doc) });
  }

  /** Creates the indexes that `unique` and `index` properties ask for. */
  async init(host?: ResourceHost): Promise<void> {
    this.logger = host?.logger;
    this.reads.fastPaths = host?.fastPaths !== false;
    if (host !== undefined) this.relations.attach(host);
    for (const [field, def] of Object.entries(this.properties)) {
      if (def.unique) await this.store.ensureIndex({ field, unique: true });
      else if (def.index) await this.store.ensureIndex({ field });
    }
  }

  async handle(ctx: Context): Promise<Reply> {
    const method = ctx.method;
    if (this.events.has('beforerequest') && (method === 'GET' || method === 'POST' || method === 'PUT' || method === 'DELETE')) {
      await this.beforeRequest(ctx);
    }
    if (method === 'GET') return this.reads.get(ctx, (c) => this.idOf(c, false));
    // A write's answer goes through the same net as every read.
    return this.reads.guard(this.visibility.scope(ctx), await this.dispatch(ctx));
  }

  /**
   * GET /<c>/<id> from an anonymous, non-root visitor with no query, answered at once without a
   * context or a promise when its plan says so (CollectionReads.answerNow); undefined: `handle`
   * answers. `answered.plan` tells which plan answered.
   */
  answerNow(parts: readonly string[], request: NowRequest): string | undefined {
    return this.reads.answerNow(parts, request.plainAnonymous, request);
  }

  /** ctx's read scope: the one made for the GET under way, or a new one. */
  private scopeOf(ctx: Context): ReadScope {
    return this.reads.scopeOf(ctx);
  }

  /** The properties ctx's caller may filter, sort and group by (aggregates, filters across relations). */
  queryableFor(ctx: Context): Record<string, PropertyDef> {
    return this.scopeOf(ctx).queryable();
  }

  /**
   * ctx's query compiled as a GET by that caller compiles it: what such a GET refuses (400: a
   * filter, sort or `$fields` on a property the caller may not read) is refused (live queries).
   */
  compileQueryFor(ctx: Context, query: Record<string, unknown>): CompiledQuery {
    return this.scopeOf(ctx).compile(query).compiled;
  }

  /**
   * The store filter that limits what ctx's caller may list or read: the access rules' part of
   * every query made for that caller ({} when nothing limits it: root, scripts, no rule). Aggregates
   * and live queries AND it with their own filter.
   */
  accessFilter(ctx: Context, action: 'list' | 'read'): Filter {
    return this.scopeOf(ctx).filter(action);
  }

  /**
   * What the access rules let ctx's caller do with this stored object: each action's decision
   * with the rule that made it, and whether each property may be read and written (the
   * dashboard's "try as this user on this object").
   */
  explainAccess(ctx: Context, doc: Record<string, unknown>): AccessExplanation {
    return this.visibility.explain(ctx, doc);
  }

  /**
   * On BeforeRequest (Deployd 1.2): before any other event of a GET, POST, PUT or DELETE, with
   * `event` the method; it may cancel, change `query`, and (POST, PUT) change the body as `this`.
   */
  private async beforeRequest(ctx: Context): Promise<void> {
    if (ctx.isRoot && skipEventsAsked(ctx, isPlainObject(ctx.body) ? ctx.body : undefined)) return;
    const hasBody = (ctx.method === 'POST' || ctx.method === 'PUT') && isPlainObject(ctx.body);
    const outcome = await this.events.run('beforerequest', { ctx, object: hasBody ? { ...(ctx.body as Record<string, unknown>) } : {}, locals: { event: ctx.method } });
    if (outcome.query !== undefined) ctx.query = outcome.query;
    if (hasBody) ctx.body = outcome.object;
  }

  /**
   * On AfterCommit (Deployd 1.2): after a write is stored, with the stored object as `this` and
   * `event` the method. The write stands whatever the script does; its errors are logged.
   */
  protected async afterCommit(ctx: Context, object: Record<string, unknown>, previous: Record<string, unknown> | undefined): Promise<void> {
    if (!this.events.has('aftercommit') || (ctx.isRoot && skipEventsAsked(ctx, isPlainObject(ctx.body) ? ctx.body : undefined))) return;
    try {
      await this.events.run('aftercommit', { ctx, object: { ...object }, previous: previous ?? {}, locals: { event: ctx.method } });
    } catch (err) {
      this.logger?.warn(`${this.path.slice(1)} On AfterCommit: ${err instanceof Error ? err.message : String(err)} (the write is stored)`);
    }
  }

  private dispatch(ctx: Context): Promise<Reply> {
    switch (ctx.method) {
      case 'POST':
      case 'PUT':
        return this.handleWrite(ctx);
      case 'DELETE':
        return this.handleDelete(ctx);
      default:
        return Promise.reject(new SvcError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported on ${this.path}`, { headers: { allow: 'GET, POST, PUT, DELETE' } }));
    }
  }

  // ---- reads on a caller's behalf (CollectionReads) ----

  /** What GET /<c>?query answers ctx's caller, as objects: the one read path for a caller (see CollectionReads.readAs). */
  readAs(ctx: Context, query: Record<string, unknown>): Promise<Record<string, unknown>[]> {
    return this.reads.readAs(ctx, query);
  }

  /** What readAs answers as the stored texts, when they answer ctx's caller as they are (CollectionReads.readTextsAs). */
  readTextsAs(ctx: Context, query: Record<string, unknown>, pick: readonly string[], anyOrder = false): Promise<StoredTexts | undefined> {
    return this.reads.readTextsAs(ctx, query, pick, anyOrder);
  }

  /** readTextsAs of ids, at once, when that is the whole of the caller's read (CollectionReads.readTextsOfIdsNow). */
  readTextsOfIdsNow(ctx: Context, ids: readonly string[], pick: readonly string[]): StoredTexts | undefined {
    return this.reads.readTextsOfIdsNow(ctx, ids, pick);
  }

  /** Whether readTextsOfIdsNow may answer ctx's caller. */
  readsTextsOfIdsNow(ctx: Context): boolean {
    return this.reads.readsTextsOfIdsNow(ctx);
  }

  /** Whether readAs answers ctx's caller the stored objects as they are. */
  showsTextsTo(ctx: Context): boolean {
    return this.reads.showsTextsTo(ctx);
  }

  /** Objects already read, shown to ctx's caller as a GET by that caller shows them; null where it may not see one. */
  showTo(ctx: Context, docs: readonly Doc[]): Promise<(Record<string, unknown> | null)[]> {
    return this.reads.showTo(ctx, docs);
  }

  /**
   * Values stored beside what scripts see and change (a user's password hash). Called after the
   * scripts ran, before the write; `previous` is undefined on create.
   */
  protected hiddenValues(_ctx: Context, _previous: Doc | undefined): Promise<Record<string, unknown>> {
    return Promise.resolve({});
  }

  /** Runs after a successful write (a user's changed credentials end their other sessions). */
  protected afterWrite(_ctx: Context, _stored: Doc, _previous: Doc | undefined): Promise<void> {
    return Promise.resolve();
  }

  /**
   * True when {@link afterDelete} needs the ids of what a DELETE with a condition removed: such a
   * delete then reads the objects first (UserCollection, to end a deleted user's sessions).
   */
  protected readonly tracksDeletes: boolean = false;

  /** Runs after objects were deleted, with their ids. */
  protected afterDelete(_ids: readonly string[]): Promise<void> {
    return Promise.resolve();
  }

  /** What a client may see of a stored object: the store-only fields (a user's password hash) left out. */
  private present(doc: Record<string, unknown>): Record<string, unknown> {
    return this.visibility.withoutStoreOnly(doc);
  }

  // ---- write ----

  private async handleWrite(ctx: Context): Promise<Reply> {
    if (ctx.parts.length > 1) throw new SvcError('NOT_FOUND', 'not found');
    const body = ctx.body === undefined ? {} : ctx.body;
    if (!isPlainObject(body)) throw new SvcError('BAD_REQUEST', 'the body must be a JSON object');
    const id = this.idOf(ctx, true);
    if (id === undefined) {
      if (ctx.method === 'PUT') throw new SvcError('BAD_REQUEST', 'an id is required to update an object (in the path, the query or the body)');
      return this.create(ctx, body);
    }
    return this.update(ctx, id, body);
  }

  /** Creates an object: sanitize, defaults, On Validate, required, On Post, insert. */
  protected async create(ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    const { values } = sanitizeBody(body, this.properties, { kind: ctx.bodyKind, update: false });
    const given = Object.keys(values);
    for (const [name, def] of Object.entries(this.properties)) {
      if (def.type === 'boolean' && values[name] === undefined) values[name] = false;
    }
    // The rules see what the client asked for, before any script runs (scripts are trusted code).
    this.access.assert(ctx, 'create', values, { new: values });
    this.access.assertWrites(ctx, values, given, { new: values });
    // As in Deployd 1.2, the id is given after On Validate (apps test `!this.id` there to tell a
    // create from an update) and before On Post, which can use (and emit) it.
    const id = createId();
    let object: Record<string, unknown> = { ...values };
    const skipEvents = ctx.isRoot && skipEventsAsked(ctx, body);
    let outcome: EventOutcome | undefined;
    if (!skipEvents) {
      outcome = await this.runWriteEvents(ctx, 'post', object, {}, id);
      object = outcome.object;
      // protect() on create keeps the client's value out of the new object.
      for (const key of outcome.protectedProps) delete object[key];
    }
    const missing = requiredErrors(object, this.properties);
    if (missing) throw new SvcError('VALIDATION_FAILED', undefined, { errors: missing });
    if (this.relations.forward.size > 0) await this.relations.checkWrite(ctx, object, undefined);
    const doc: Doc = { ...this.storable(object), ...(await this.hiddenValues(ctx, undefined)), id };
    const stored = await this.writing(() => this.store.insert(doc));
    if (this.relations.forward.size > 0) await this.relations.confirmWrite(stored, undefined);
    if (this.changeListeners.size > 0) await this.changed({ kind: 'create', object: this.withoutStoreOnly(stored) });
    await this.afterWrite(ctx, stored, undefined);
    await this.afterCommit(ctx, this.withoutStoreOnly(stored), undefined);
    return { status: 200, body: this.visibility.scope(ctx).finish(this.present(outcome ? hideFrom(stored, outcome.hidden) : stored), stored) };
  }

  /** Updates one object: only given properties change; modifiers apply atomically in the store. */
  protected async update(ctx: Context, id: string, body: Record<string, unknown>): Promise<Reply> {
    const scope = this.visibility.scope(ctx);
    const precondition = compileFilter(preconditionOf(ctx.query), this.properties, scope.refusals);
    let filter: Filter = { ...precondition, id };
    // An object the read rule hides answers as a missing one: no telling whether it exists.
    const previous = await this.store.findOne(andFilters(filter, scope.filter('read')));
    if (previous === null) throw new SvcError('NO_MATCH', NO_MATCH);
    const sanitized = sanitizeBody(body, this.properties, { kind: ctx.bodyKind, update: true });
    const visible = this.withoutStoreOnly(previous);
    const merged: Record<string, unknown> = { ...visible, ...sanitized.values };
    for (const name of sanitized.cleared) delete merged[name];
    applyModifiersLocally(merged, sanitized.modifiers);
    if (!this.access.bypasses(ctx)) {
      const values = { new: merged, old: visible };
      this.access.assert(ctx, 'update', previous, values);
      this.access.assertWrites(ctx, previous, Object.keys(this.properties).filter((name) => !deepEqual(visible[name], merged[name])), values);
      // The stored object must still be one the rule allows when the write lands.
      filter = andFilters(filter, this.access.writeFilter(ctx, 'update', values));
    }
    const skipEvents = ctx.isRoot && skipEventsAsked(ctx, body);
    let object = merged;
    let outcome: EventOutcome | undefined;
    if (!skipEvents) {
      outcome = await this.runWriteEvents(ctx, 'put', merged, visible);
      object = outcome.object;
    }
    const missing = requiredErrors(object, this.properties);
    if (missing) throw new SvcError('VALIDATION_FAILED', undefined, { errors: missing });
    if (this.relations.forward.size > 0) await this.relations.checkWrite(ctx, object, previous);
    const ops = diffUpdate(previous, object, sanitized.modifiers, [...(outcome?.protectedProps ?? []), ...this.visibility.storeOnly]);
    const hidden = await this.hiddenValues(ctx, previous);
    if (Object.keys(hidden).length > 0) ops.$set = { ...ops.$set, ...hidden };
    const updated = await this.writing(() => this.store.update(filter, ops));
    if (updated === null) throw new SvcError('NO_MATCH', NO_MATCH);
    if (this.relations.forward.size > 0) await this.relations.confirmWrite(updated, previous);
    if (this.changeListeners.size > 0) await this.changed({ kind: 'update', object: this.withoutStoreOnly(updated), previous: this.withoutStoreOnly(previous) });
    await this.afterWrite(ctx, updated, previous);
    await this.afterCommit(ctx, this.withoutStoreOnly(updated), this.withoutStoreOnly(previous));
    return { status: 200, body: this.visibility.scope(ctx).finish(this.present(outcome ? hideFrom(updated, outcome.hidden) : updated), updated) };
  }

  /**
   * On Validate, then On Post or On Put, unless a script cancelled or reported errors. As in
   * Deployd, the two share one object: what On Validate hid or protected still is in On Post/Put,
   * and on an update `id` is protected from the start. `id` (create) is given before On Post.
   */
  private async runWriteEvents(ctx: Context, event: CollectionEvent, object: Record<string, unknown>, previous: Record<string, unknown>, id?: string): Promise<EventOutcome> {
    let hidden: readonly string[] = [];
    let protectedProps: readonly string[] = event === 'put' ? ['id'] : [];
    let current = object;
    for (const name of ['validate', event] as const) {
      if (name === event && id !== undefined) current = { ...current, id };
      if (!this.events.has(name)) continue;
      const outcome = await this.events.run(name, { ctx, object: current, previous, hidden, protectedProps });
      current = outcome.object;
      hidden = outcome.hidden;
      protectedProps = outcome.protectedProps;
    }
    return { object: current, hidden, protectedProps };
  }

  /** A stored object as scripts may see it. */
  protected withoutStoreOnly(doc: Doc): Doc {
    return this.visibility.withoutStoreOnly(doc);
  }

  /** Drops values a store must not keep (undefined); properties scripts added are kept. */
  private storable(object: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(object)) if (object[key] !== undefined && key !== 'id') out[key] = object[key];
    return out;
  }

  /** Maps store refusals to client errors: a unique property's duplicate is a validation error. */
  protected async writing<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (err instanceof DuplicateKeyError) {
        throw new SvcError('VALIDATION_FAILED', undefined, { errors: { [err.field]: 'is already in use' }, cause: err });
      }
      throw err;
    }
  }

  // ---- delete ----

  private async handleDelete(ctx: Context): Promise<Reply> {
    if (ctx.parts.length > 1) throw new SvcError('NOT_FOUND', 'not found');
    const id = this.idOf(ctx, false);
    if (id === undefined) {
      if (isPlainObject(ctx.query.id)) return this.deleteMatching(ctx);
      throw new SvcError('BAD_REQUEST', 'an id is required to delete (in the path or as ?id=)');
    }
    const scope = this.visibility.scope(ctx);
    let filter: Filter = { ...compileFilter(preconditionOf(ctx.query), this.properties, scope.refusals), id };
    const skipEvents = ctx.isRoot && skipEventsAsked(ctx, undefined);
    const referenced = this.relations.isReferenced();
    const guarded = !this.access.bypasses(ctx) && !(this.access.rules.isOpen('read') && this.access.rules.isOpen('delete'));
    if (!guarded && !referenced && (skipEvents || (!this.events.has('delete') && !this.events.has('aftercommit')))) {
      const gone = this.wantsChanges() ? await this.store.findOne(filter) : undefined;
      if ((await this.store.remove(filter)) === 0) throw new SvcError('NOT_FOUND', 'not found');
      await this.deleted(gone === null ? [] : gone === undefined ? undefined : [gone]);
      await this.afterDelete([id]);
      return { status: 204 };
    }
    // Hidden by the read rule: 404 as if missing; readable but not deletable: 403 naming the rule.
    const doc = await this.store.findOne(andFilters(filter, scope.filter('read')));
    if (doc === null) throw new SvcError('NOT_FOUND', 'not found');
    this.access.assert(ctx, 'delete', doc);
    filter = andFilters(filter, this.access.filter(ctx, 'delete'));
    const object = this.withoutStoreOnly(doc);
    if (this.events.has('delete') && !skipEvents) await this.events.run('delete', { ctx, object });
    const plan = referenced ? await this.relations.beforeRemove([id]) : undefined;
    if ((await this.store.remove(filter)) === 0) throw new SvcError('NOT_FOUND', 'not found');
    await this.deleted([doc]);
    if (plan !== undefined) await this.relations.afterRemove(plan);
    await this.afterDelete([id]);
    if (!skipEvents) await this.afterCommit(ctx, object, undefined);
    return { status: 204 };
  }

  /**
   * DELETE with a condition on id (`{"id": {"$in": [...]}}`, `{"id": {"$ne": null}}`): as in
   * Deployd, every match is deleted and On Delete runs once per object; a cancel() keeps the object
   * it ran for. Answers 204 when something was deleted, else the first script error (or 404).
   */
  private async deleteMatching(ctx: Context): Promise<Reply> {
    const scope = this.visibility.scope(ctx);
    const asked = andFilters(compileFilter(ctx.query, this.properties, scope.refusals), scope.filter('read'));
    // Only what the delete rule allows is deleted; when that is nothing, 403 if the caller could read some.
    const filter = andFilters(asked, this.access.filter(ctx, 'delete'));
    if (!this.access.rules.isOpen('delete') && !this.access.bypasses(ctx) && (await this.store.count(filter)) === 0) {
      throw (await this.store.count(asked)) > 0 ? new SvcError('FORBIDDEN', 'forbidden by rules.delete') : new SvcError('NOT_FOUND', 'not found');
    }
    const skipEvents = ctx.isRoot && skipEventsAsked(ctx, undefined);
    if (skipEvents || (!this.events.has('delete') && !this.events.has('aftercommit'))) {
      const referenced = this.relations.isReferenced();
      const wanted = this.wantsChanges();
      if (this.tracksDeletes || referenced || wanted) {
        // Removed by id, so that exactly the objects read are the ones told deleted.
        const docs = await this.store.find(filter, wanted ? {} : { fields: { id: 1 } });
        const ids = docs.map((d) => d.id);
        if (ids.length === 0) throw new SvcError('NOT_FOUND', 'not found');
        const plan = referenced ? await this.relations.beforeRemove(ids) : undefined;
        if ((await this.store.remove({ id: { $in: ids } })) === 0) throw new SvcError('NOT_FOUND', 'not found');
        await this.deleted(wanted ? docs : undefined);
        if (plan !== undefined) await this.relations.afterRemove(plan);
        await this.afterDelete(ids);
        return { status: 204 };
      }
      const removed = await this.store.remove(filter);
      if (removed === 0) throw new SvcError('NOT_FOUND', 'not found');
      await this.deleted(undefined);
      return { status: 204 };
    }
    const docs = await this.store.find(filter, {});
    if (docs.length === 0) throw new SvcError('NOT_FOUND', 'not found');
    const deleted: Doc[] = [];
    let firstError: unknown;
    for (const doc of docs) {
      try {
        if (this.events.has('delete')) await this.events.run('delete', { ctx, object: this.withoutStoreOnly(doc) });
        deleted.push(doc);
      } catch (err) {
        if (!isSvcError(err) || err.status >= 500) throw err;
        firstError ??= err;
      }
    }
    if (deleted.length === 0) throw firstError;
    const plan = this.relations.isReferenced() ? await this.relations.beforeRemove(deleted.map((d) => d.id)) : undefined;
    await this.store.remove({ id: { $in: deleted.map((d) => d.id) } });
    await this.deleted(deleted);
    if (plan !== undefined) await this.relations.afterRemove(plan);
    await this.afterDelete(deleted.map((d) => d.id));
    for (const doc of deleted) await this.afterCommit(ctx, this.withoutStoreOnly(doc), undefined);
    return { status: 204 };
  }

  /**
   * The object id a request names: the first path segment, else `id` in the body (writes), else
   * `id` in the query. The query gets it too, so scripts see `query.id` on single-object requests.
   */
  private idOf(ctx: Context, fromBody: boolean): string | undefined {
    let id: unknown = ctx.parts[0];
    if (id === undefined && fromBody && isPlainObject(ctx.body)) id = ctx.body.id;
    if (id === undefined || id === null || id === '') id = ctx.query.id;
    if (id === undefined || id === null || id === '') return undefined;
    if (typeof id !== 'string') {
      // A condition on id in the query (`{"id": {"$in": [...]}}`) filters like one on any property.
      if (!fromBody && id === ctx.query.id && isPlainObject(id) && ctx.parts[0] === undefined) return undefined;
      throw new SvcError('BAD_REQUEST', 'id must be a string');
    }
    ctx.query.id = id;
    return id;
  }
}


function skipEventsAsked(ctx: Context, body: Record<string, unknown> | undefined): boolean {
  const q = ctx.query.$skipEvents;
  return q === true || q === 'true' || body?.$skipEvents === true;
}

/** A precondition is the query without its id and commands. */
function preconditionOf(query: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(query)) {
    if (key === 'id' || key === '_method') continue;
    if (key.startsWith('$') && key !== '$or' && key !== '$and' && key !== '$nor') continue;
    out[key] = query[key];
  }
  return out;
}

