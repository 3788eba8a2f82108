import { AccessRules } from '../access/AccessRules.js';
import { CollectionAccess } from '../access/CollectionAccess.js';
import type { AccessExplanation } from '../access/CollectionAccess.js';
import { Visibility } from '../access/Visibility.js';
import type { ReadScope, VisibilityFacts } from '../access/Visibility.js';
import { andFilters } from '../access/compileRule.js';
import { SvcError } from '../errors.js';
import { createId } from '../ids.js';
import { compileFilter } from '../query/compileQuery.js';
import type { CompiledQuery } from '../query/compileQuery.js';
import { isPlainObject } from '../query/parseQueryString.js';
import type { ClientShape, ConflictPolicy, NowRequest, Resource, ResourceHost } from '../resource.js';
import { DuplicateKeyError } from '../store/Store.js';
import type { Doc, Filter, StoreCollection, StoredTexts } from '../store/Store.js';
import type { Logger } from '../logger.js';
import type { Context, PropertyDef, Reply } from '../types.js';
import { ChangeListeners } from './changes.js';
import type { StagedChange, StagedDelete, StagedWrite } from './changes.js';
import type { ChangesWanted, CollectionChangeListener, InCommitListener, ObjectChange } from './changes.js';
import type { CollectionEventRunner, EventOutcome } from './events.js';
import { handleDelete } from './deletes.js';
import type { DeleteHost } from './deletes.js';
import { afterCommit, beforeRequest, preconditionOf, runWriteEvents, skipEventsAsked } from './writeEvents.js';
import { namedBy, requiredErrors, sanitizeBody, typeErrors } from './sanitize.js';
import { Relations } from '../relations/Relations.js';
import { relationSettings } from '../relations/relationSettings.js';
import type { RelationSettings } from '../relations/relationSettings.js';
import { applyModifiersLocally, deepEqual, diffUpdate, hideFrom } from './updates.js';
import { CollectionReads } from './read/CollectionReads.js';
import type { IncomingMessage } from 'node:http';
import type { CollectionFiles } from '../files/CollectionFiles.js';
import { collectionFilesOf } from '../files/filesConfig.js';
import type { CollectionFilesConfig } from '../files/filesConfig.js';
import type { OrphanSweeper } from '../files/orphanSweep.js';
import { assertClientId, conditionHolds, conditionOf, etagOf, isGetById, movedAfter, preconditionFailed, settled, taggedGet } from './conditional.js';
import type { MOVED } from './conditional.js';

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
  /** Where `file` properties keep their files (needed when there is one; docs/files.md). */
  files?: CollectionFilesConfig;
  /** How offline clients settle conflicts (config.json `offline.conflicts`): told to them with the resources. */
  conflicts?: ConflictPolicy;
}

const NO_MATCH = 'No object exists that matches that query';
const NO_PROPERTIES: ReadonlySet<string> = new Set();
const NO_EVENTS: CollectionEventRunner = {
  has: () => false,
  run: (_event, input) => Promise.resolve({ object: input.object, hidden: [], protectedProps: [] }),
  runGetBatch: (_ctx, objects) => Promise.resolve(objects.map((object) => ({ object, hidden: [], protectedProps: [] }))),
};

/** The Collection resource: a store of JSON objects over HTTP, with the spec's endpoints and rules. */
export class Collection implements Resource {
  readonly path: string;
  readonly type: string = 'Collection';
  get client(): ClientShape {
    return this.conflicts === undefined ? { collection: true } : { collection: true, conflicts: this.conflicts };
  }
  /** The declared conflict policy of offline writes (docs/offline.md). */
  readonly conflicts: ConflictPolicy | undefined;
  readonly properties: Record<string, PropertyDef>;
  protected readonly store: StoreCollection;
  protected readonly events: CollectionEventRunner;
  /** The server's logger, from init(). */
  protected logger: Logger | undefined;
  /** Told every stored write (live queries); deletes read what they remove while one wants them. */
  private readonly changes: ChangeListeners;
  /** Relation properties, `$expand`, filters across relations, `$total` and aggregates. */
  readonly relations: Relations;
  /** GETs and the reads made on a caller's behalf: each GET's plan chosen, then answered that way. */
  private readonly reads: CollectionReads;
  /** The access rules: the one place that decides what a caller may list, read and write. */
  protected readonly access: CollectionAccess;
  /** What each caller sees: private properties, store-only fields, property read rules, count gates. */
  protected readonly visibility: Visibility;
  /** `file` properties (files/CollectionFiles.ts): undefined when there is none. */
  private readonly fileProps: CollectionFiles | undefined;
  private readonly fileSweeper: OrphanSweeper | undefined;
  /** What the deletes (deletes.ts) use of this collection. */
  private readonly deletes: DeleteHost;

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
    this.conflicts = options.conflicts;
    this.changes = new ChangeListeners((doc) => this.visibility.withoutStoreOnly(doc), this.store.insertAtCommit !== undefined);
    this.relations = new Relations({ owner: this, store: this.store, settings: relationSettings(options.relations), onRemoved: (ids) => this.removed(ids) });
    const files = collectionFilesOf({ path: this.path, properties: this.properties, store: this.store, config: options.files, logger: () => this.logger });
    this.fileProps = files?.files;
    this.fileSweeper = files?.sweeper;
    // Counts (as /count): On Get may hide objects that a count would reveal.
    this.relations.countsOpenTo = (ctx) => this.visibility.totalsOpenTo(ctx, this.events.has('get'));
    this.reads = new CollectionReads({ store: this.store, events: this.events, access: this.access, visibility: this.visibility, relations: this.relations });
    this.deletes = {
      store: this.store,
      properties: this.properties,
      events: this.events,
      access: this.access,
      relations: this.relations,
      changes: this.changes,
      scopeOf: (ctx) => this.scopeOf(ctx),
      idOf: (ctx) => this.idOf(ctx, false),
      needsRemovedIds: () => this.tracksDeletes || this.fileProps !== undefined,
      removed: (ids) => this.removed(ids),
      assertMatches: (ctx, stored, expected) => this.assertMatches(ctx, stored, expected),
      withoutStoreOnly: (doc) => this.withoutStoreOnly(doc),
      deleteHooks: (docs) => this.deleteHooks(docs),
      afterCommit: (ctx, object, previous) => this.afterCommit(ctx, object, previous),
    };
  }

  /**
   * Calls `listener` after every stored write (any request, script or root), in the store's order;
   * answers a function that stops it. `wanted` (default: always): when it needs them (a delete
   * reads what it removes only then). `inCommit`: told the writes inside them where the store can
   * (InCommitListener); `listener` is not called for those.
   */
  watchChanges(listener: CollectionChangeListener, wanted: ChangesWanted = () => true, inCommit?: InCommitListener): () => void {
    return this.changes.watch(listener, wanted, inCommit);
  }

  /** The hooks of one write made outside the request paths (onDelete upkeep, imports), for the store's write, then {@link tellChanges}. */
  writeHooks(kind: 'create' | 'update'): StagedWrite | undefined {
    return this.changes.hooksFor(kind);
  }

  /** The hooks of one remove of `docs` (read before it), as {@link writeHooks} (`of(doc)` to tellChanges). */
  deleteHooks(docs: readonly Doc[]): StagedDelete | undefined {
    return this.changes.hooksForDelete(docs);
  }

  /** Whether some change listener needs this collection's writes now (cheap: asked per delete). */
  wantsChanges(): boolean {
    return this.changes.wanted();
  }

  /** Tells the listeners of writes to the store outside its request paths (onDelete upkeep, imports); `staged[i]`: the hooks of `changes[i]`'s write. */
  async tellChanges(changes: readonly ObjectChange[], staged?: readonly (StagedChange | undefined)[]): Promise<void> {
    for (let i = 0; i < changes.length; i++) await this.changes.tell(changes[i] as ObjectChange, staged?.[i]);
  }

  /** Tells the change listeners that objects changed without saying which (a restore): they start afresh. */
  async tellResync(): Promise<void> {
    await this.changes.tell({ kind: 'resync' });
  }

  /** Creates the indexes that `unique`, `index` and `search` properties ask for. */
  async init(host?: ResourceHost): Promise<void> {
    this.logger = host?.logger;
    this.reads.fastPaths = host?.fastPaths !== false;
    if (host !== undefined) this.relations.attach(host);
    for (const [field, def] of Object.entries(this.properties)) {
      if (def.unique) await this.store.ensureIndex({ field, unique: true });
      else if (def.index) await this.store.ensureIndex({ field });
    }
    // Always: a collection whose searchable properties were all removed drops its search index.
    await this.store.ensureSearch?.(Object.keys(this.properties).filter((field) => this.properties[field]?.search === true));
    this.fileSweeper?.start();
  }

  /** Stops the orphan file sweep. */
  async close(): Promise<void> {
    this.fileSweeper?.stop();
  }

  /** Runs one pass of the orphan file sweep now (tests, `svc` at start): the keys it removed. */
  async sweepOrphanFiles(): Promise<readonly string[]> {
    return this.fileSweeper === undefined ? [] : (await this.fileSweeper.runOnce()).removed;
  }

  /** A multipart create or update, or a file sent to `/<c>/<id>/<property>`: the server leaves the body to the files. */
  streamsBody(req: IncomingMessage, parts: readonly string[]): boolean {
    return this.fileProps !== undefined && this.fileProps.streamsBody(req, parts);
  }

  async handle(ctx: Context): Promise<Reply> {
    // Phase "parse body": a form's files, or a file property's own path (files/CollectionFiles.ts).
    if (this.fileProps !== undefined && this.fileProps.owns(ctx)) return this.fileProps.handle(ctx, this.filesHost);
    const reply = await this.handleRequest(ctx);
    // ETag and If-None-Match on the answer as made, whichever read path made it (conditional.ts).
    return isGetById(ctx) ? taggedGet(ctx, reply) : reply;
  }

  /** What the files part may ask of the collection: the request path below, and the one read of an object. */
  private readonly filesHost = { handleRequest: (ctx: Context) => this.handleRequest(ctx), readOneAs: (ctx: Context, id: string) => this.readOneAs(ctx, id) };

  private async handleRequest(ctx: Context): Promise<Reply> {
    const method = ctx.method;
    if (this.events.has('beforerequest') && (method === 'GET' || method === 'POST' || method === 'PUT' || method === 'DELETE')) {
      await beforeRequest(this.events, ctx);
    }
    if (method === 'GET') return this.reads.get(ctx, (c) => this.idOf(c, false));
    // A write's answer goes through the same net as every read, with the scope its checks took.
    return this.reads.withScope(ctx, () => this.dispatch(ctx));
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

  /** The properties `$fields` leaves out for ctx's caller: what it may not read on any object. */
  unprojectableFor(ctx: Context): ReadonlySet<string> {
    return this.scopeOf(ctx).refusals.unprojectable ?? NO_PROPERTIES;
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

  /** On AfterCommit, its errors logged (the write stands). */
  private afterCommit(ctx: Context, object: Record<string, unknown>, previous: Record<string, unknown> | undefined): Promise<void> {
    return afterCommit(this.events, ctx, object, previous, (message) => this.logger?.warn(`${this.path.slice(1)} ${message}`));
  }

  private dispatch(ctx: Context): Promise<Reply> {
    switch (ctx.method) {
      case 'POST':
      case 'PUT':
        return this.handleWrite(ctx);
      case 'DELETE':
        return handleDelete(this.deletes, ctx);
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

  /**
   * What GET /<c>/<id> answers ctx's caller, with the stored object it was made of: On
   * BeforeRequest, the read rule (null, as that GET's 404, for an object it hides), On Get and
   * what the caller may not read left out (file downloads ask this before serving a file).
   */
  async readOneAs(ctx: Context, id: string): Promise<{ stored: Doc; shown: Record<string, unknown> } | null> {
    if (this.events.has('beforerequest')) await beforeRequest(this.events, ctx);
    return this.reads.readOneAs(ctx, id);
  }

  /** readTextsAs of ids, at once, when that is the whole of the caller's read (CollectionReads.readTextsOfIdsNow). */
  readTextsOfIdsNow(ctx: Context, ids: readonly string[], pick: readonly string[]): StoredTexts | undefined {
    return this.reads.readTextsOfIdsNow(ctx, ids, pick);
  }

  /** Whether readAs answers ctx's caller the stored objects as they are. */
  showsTextsTo(ctx: Context): boolean {
    return this.reads.showsTextsTo(ctx);
  }

  /** What ctx's caller's text reads of this collection depend on besides the query, as a key (CollectionReads.textsKey). */
  textsKey(ctx: Context, listed = false): string | undefined {
    return this.reads.textsKey(ctx, listed);
  }

  /** Objects already read, shown to ctx's caller as a GET by that caller shows them; null where it may not see one. */
  showTo(ctx: Context, docs: readonly Doc[]): Promise<(Record<string, unknown> | null)[]> {
    return this.reads.showTo(ctx, docs);
  }

  /**
   * Values stored beside what scripts see and change (a user's password hash). Called after the
   * scripts ran, before the write; `previous` is undefined on create.
   */
  protected hiddenValues(_ctx: Context, _previous: Doc | undefined): Record<string, unknown> | Promise<Record<string, unknown>> {
    return {};
  }

  /**
   * Runs after a successful write (a user's changed credentials end their other sessions).
   * Nothing to wait for (undefined) spares every write a promise turn.
   */
  protected afterWrite(_ctx: Context, _stored: Doc, _previous: Doc | undefined): Promise<void> | undefined {
    return undefined;
  }

  /**
   * True when {@link afterDelete} needs the ids of what a DELETE with a condition removed: such a
   * delete then reads the objects first (UserCollection, to end a deleted user's sessions).
   */
  protected readonly tracksDeletes: boolean = false;

  /** Phase "after delete": the objects' files go (files/CollectionFiles.ts), then afterDelete. */
  private async removed(ids: readonly string[]): Promise<void> {
    await this.fileProps?.objectsRemoved(ids);
    await this.afterDelete(ids);
  }

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
    if (id !== undefined && ctx.method === 'POST' && conditionOf(ctx, 'if-none-match') === '*') {
      // A create at an id the client chose (offline clients): never an update of an existing one.
      assertClientId(id);
      return this.create(ctx, body, id);
    }
    if (id === undefined) {
      if (ctx.method === 'PUT') throw new SvcError('BAD_REQUEST', 'an id is required to update an object (in the path, the query or the body)');
      return this.create(ctx, body);
    }
    return this.update(ctx, id, body);
  }

  /** Creates an object: sanitize, defaults, On Validate, required, On Post, insert. */
  protected async create(ctx: Context, body: Record<string, unknown>, chosenId?: string): Promise<Reply> {
    const { values } = sanitizeBody(body, this.properties, { kind: ctx.bodyKind, update: false });
    // A create's id comes first when its files were stored before it (their keys hold it).
    const id = chosenId ?? this.fileProps?.idFor(ctx) ?? createId();
    this.fileProps?.resolve(ctx, values, undefined, new Set(Object.keys(values)));
    const given = Object.keys(values);
    // Names, not entries: Object.entries made an array per property, per create.
    for (const name of Object.keys(this.properties)) {
      if (this.properties[name]?.type === 'boolean' && values[name] === undefined) values[name] = false;
    }
    // The rules see what the client asked for, before any script runs (scripts are trusted code).
    this.access.assert(ctx, 'create', values, { new: values });
    this.access.assertWrites(ctx, values, given, { new: values });
    // As in Deployd 1.2, the id is given after On Validate (apps test `!this.id` there to tell a
    // create from an update) and before On Post, which can use (and emit) it.
    let object: Record<string, unknown> = { ...values };
    const skipEvents = ctx.isRoot && skipEventsAsked(ctx, body);
    let outcome: EventOutcome | undefined;
    if (!skipEvents) {
      // No On Validate nor On Post: the outcome runWriteEvents gives, without its promise turns.
      outcome = this.events.has('validate') || this.events.has('post') ? await runWriteEvents(this.events, ctx, 'post', object, {}, id) : { object: { ...object, id }, hidden: [], protectedProps: [] };
      object = outcome.object;
      // protect() on create keeps the client's value out of the new object.
      for (const key of outcome.protectedProps) delete object[key];
    }
    this.fileProps?.beforeStore(ctx, object, undefined);
    const missing = requiredErrors(object, this.properties);
    if (missing) throw new SvcError('VALIDATION_FAILED', undefined, { errors: missing });
    if (this.relations.forward.size > 0) await this.relations.checkWrite(ctx, object, undefined);
    const hidden = this.hiddenValues(ctx, undefined);
    // `id` first, as every store answers it (the engine keeps it first: encodeDoc then has no
    // reordering copy to make); assigned again after the spreads, where a script's `this.id` lands.
    const doc: Doc = { id, ...this.storable(object), ...(isPromise(hidden) ? await hidden : hidden) };
    doc.id = id;
    const hooks = this.changes.hooksFor('create');
    const stored = await this.writing(() => (hooks === undefined ? this.store.insert(doc) : this.store.insert(doc, hooks)), chosenId !== undefined);
    // Each step awaited only when there is one: an await of nothing is a promise turn per write.
    if (this.fileProps !== undefined) await this.fileProps.afterCommit(ctx, stored, undefined);
    if (this.relations.forward.size > 0) await this.relations.confirmWrite(stored, undefined);
    if (this.changes.any) await this.changes.tell({ kind: 'create', object: stored }, hooks);
    const after = this.afterWrite(ctx, stored, undefined);
    if (after !== undefined) await after;
    if (this.events.has('aftercommit')) await this.afterCommit(ctx, this.withoutStoreOnly(stored), undefined);
    return { status: 200, body: this.scopeOf(ctx).finish(this.present(outcome ? hideFrom(stored, outcome.hidden) : stored), stored) };
  }

  /**
   * Updates one object: only given properties change; modifiers apply atomically in the store.
   * With If-Match, only while the caller's view of it has that ETag (412 else), compared and set
   * at the revision read. A move in between (of what the caller cannot see: what it sees is
   * compared first) runs the update again, at most 3 times, only when no event script ran: a
   * script's effects (svc.* calls, emit, fetch) must not happen twice for one request, so after a
   * script the request answers 409 with nothing written, for the client to send it again.
   */
  protected async update(ctx: Context, id: string, body: Record<string, unknown>): Promise<Reply> {
    const expected = conditionOf(ctx, 'if-match');
    return settled(() => this.updateOnce(ctx, id, body, expected), 'updated');
  }

  private async updateOnce(ctx: Context, id: string, body: Record<string, unknown>, expected: readonly string[] | '*' | undefined): Promise<Reply | typeof MOVED> {
    // Read before the object: a write between the two moves it, and the update below then fails.
    // A write of file properties is always conditional: one made from a stale list could hold a
    // file another request removed meanwhile (files/CollectionFiles.ts afterCommit).
    const conditional = (expected !== undefined && expected !== '*') || this.fileProps?.touches(ctx, body) === true;
    const revised = conditional ? await this.store.findRevised(id) : undefined;
    const scope = this.scopeOf(ctx);
    const precondition = compileFilter(preconditionOf(ctx.query), this.properties, scope.refusals);
    let filter: Filter = { ...precondition, id };
    // An object the read rule hides answers as a missing one: no telling whether it exists.
    const previous = await this.store.findOne(andFilters(filter, scope.filter('read')));
    if (previous === null) throw new SvcError('NO_MATCH', NO_MATCH);
    if (expected !== undefined) await this.assertMatches(ctx, previous, expected);
    const sanitized = sanitizeBody(body, this.properties, { kind: ctx.bodyKind, update: true });
    const visible = this.withoutStoreOnly(previous);
    const merged: Record<string, unknown> = { ...visible, ...sanitized.values };
    for (const name of sanitized.cleared) delete merged[name];
    applyModifiersLocally(merged, sanitized.modifiers);
    if (this.fileProps) for (const name of this.fileProps.resolve(ctx, merged, visible, new Set(Object.keys(sanitized.values)))) sanitized.values[name] = merged[name];
    // What the caller may not read: no answer may depend on its value (issue 38). One the body
    // names is written whatever the value (the stored one again is no "no change": that would
    // tell a guess right); one it does not name is neither validated nor checked below.
    const named = namedBy(sanitized);
    const unreadable = this.unreadableOn(ctx, previous);
    const untouched = new Set([...unreadable].filter((name) => !named.has(name)));
    if (!this.access.bypasses(ctx)) {
      const values = { new: merged, old: visible };
      this.access.assert(ctx, 'update', previous, values);
      this.access.assertWrites(ctx, previous, Object.keys(this.properties).filter((name) => (unreadable.has(name) && named.has(name)) || !deepEqual(visible[name], merged[name])), values);
      // The stored object must still be one the rule allows when the write lands.
      filter = andFilters(filter, this.access.writeFilter(ctx, 'update', values));
    }
    // As Deployd 1.2: the merged object's values must be of their types (a script's, an old one).
    const wrongTypes = typeErrors(merged, this.properties, untouched);
    if (wrongTypes) throw new SvcError('VALIDATION_FAILED', undefined, { errors: wrongTypes });
    const skipEvents = ctx.isRoot && skipEventsAsked(ctx, body);
    let object = merged;
    let outcome: EventOutcome | undefined;
    if (!skipEvents) {
      outcome = await runWriteEvents(this.events, ctx, 'put', merged, visible);
      object = outcome.object;
    }
    this.fileProps?.beforeStore(ctx, object, previous);
    const missing = requiredErrors(object, this.properties, untouched);
    if (missing) throw new SvcError('VALIDATION_FAILED', undefined, { errors: missing });
    // A relation the caller may not read and sends is checked whole, its stored ids too.
    if (this.relations.forward.size > 0) await this.relations.checkWrite(ctx, object, hideFrom(previous, [...unreadable].filter((name) => named.has(name))) as Doc);
    const ops = diffUpdate(previous, object, sanitized.modifiers, [...(outcome?.protectedProps ?? []), ...this.visibility.storeOnly]);
    const pendingHidden = this.hiddenValues(ctx, previous);
    const hidden = isPromise(pendingHidden) ? await pendingHidden : pendingHidden;
    if (Object.keys(hidden).length > 0) ops.$set = { ...ops.$set, ...hidden };
    const condition = revised ? { revision: revised.revision } : undefined;
    const target = condition === undefined || typeof filter.id === 'string' ? filter : { id, $and: [filter] };
    const hooks = this.changes.hooksFor('update');
    const updated = await this.writing(() => (hooks === undefined ? this.store.update(target, ops, condition) : this.store.update(target, ops, condition, hooks)));
    if (updated === null && condition !== undefined) return movedAfter(outcome !== undefined && (this.events.has('validate') || this.events.has('put')));
    if (updated === null) throw new SvcError('NO_MATCH', NO_MATCH);
    if (this.fileProps !== undefined) await this.fileProps.afterCommit(ctx, updated, previous);
    if (this.relations.forward.size > 0) await this.relations.confirmWrite(updated, previous);
    if (this.changes.any) await this.changes.tell({ kind: 'update', object: updated, previous }, hooks);
    const after = this.afterWrite(ctx, updated, previous);
    if (after !== undefined) await after;
    if (this.events.has('aftercommit')) await this.afterCommit(ctx, this.withoutStoreOnly(updated), this.withoutStoreOnly(previous));
    return { status: 200, body: this.scopeOf(ctx).finish(this.present(outcome ? hideFrom(updated, outcome.hidden) : updated), updated) };
  }

  /**
   * The properties of a stored object ctx's caller may not read: private ones, and those a read
   * rule hides on it (none for root and scripts' own calls).
   */
  private unreadableOn(ctx: Context, stored: Doc): Set<string> {
    return this.scopeOf(ctx).hiddenOn(stored);
  }

  /**
   * Throws 403 when ctx's caller may not give `name` this value on the stored object, checked as
   * an update checks it: when the value differs, or always when the caller may not read it.
   */
  protected assertPropertyWrite(ctx: Context, stored: Doc, name: string, value: unknown): void {
    if (this.access.bypasses(ctx)) return;
    const old = this.withoutStoreOnly(stored);
    if (deepEqual(old[name], value) && !this.unreadableOn(ctx, stored).has(name)) return;
    this.access.assertWrites(ctx, stored, [name], { new: { ...old, [name]: value }, old });
  }

  /**
   * If-Match: the caller's view of the stored object (read rules, On Get, private properties: what
   * a GET by id answers) must have one of the ETags named, else 412 with that view.
   */
  private async assertMatches(ctx: Context, stored: Doc, expected: readonly string[] | '*'): Promise<void> {
    if (expected === '*') return;
    const [view] = await this.showTo(ctx, [stored]);
    if (view === null || view === undefined) throw new SvcError('NO_MATCH', NO_MATCH);
    if (!conditionHolds(expected, etagOf(JSON.stringify(view)))) throw preconditionFailed(view);
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
  protected async writing<T>(write: () => Promise<T>, idChosen = false): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (idChosen && err instanceof DuplicateKeyError && err.field === 'id') {
        // If-None-Match: * on an id in use: refused, never an overwrite.
        throw new SvcError('PRECONDITION_FAILED', 'an object with this id exists (If-None-Match: *)', { cause: err });
      }
      if (err instanceof DuplicateKeyError) {
        throw new SvcError('VALIDATION_FAILED', undefined, { errors: { [err.field]: 'is already in use' }, cause: err });
      }
      throw err;
    }
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

/** Whether a hook answered a promise to wait for (a subclass's async hook) rather than its value. */
function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return value instanceof Promise;
}
