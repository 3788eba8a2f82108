import { AccessRules } from '../access/AccessRules.js';
import { CollectionAccess } from '../access/CollectionAccess.js';
import type { AccessExplanation, ReadPlan } from '../access/CollectionAccess.js';
import { andFilters } from '../access/compileRule.js';
import { SvcError, isSvcError } from '../errors.js';
import { createId } from '../ids.js';
import { compileFilter, compileQuery } from '../query/compileQuery.js';
import type { CompiledQuery, QueryRefusals } from '../query/compileQuery.js';
import { isPlainObject } from '../query/parseQueryString.js';
import type { ClientShape, ConflictPolicy, Resource, ResourceHost } from '../resource.js';
import { DuplicateKeyError } from '../store/Store.js';
import type { Doc, Filter, FindOptions, StoreCollection, StoredTexts } from '../store/Store.js';
import type { Logger } from '../logger.js';
import type { Context, PropertyDef, Reply } from '../types.js';
import type { ChangesWanted, CollectionChange, CollectionChangeListener, ObjectChange } from './changes.js';
import type { CollectionEvent, CollectionEventRunner, EventOutcome } from './events.js';
import { NowAnswers } from './nowAnswers.js';
import { namedBy, requiredErrors, sanitizeBody, typeErrors } from './sanitize.js';
import { Relations } from '../relations/Relations.js';
import { relationSettings } from '../relations/relationSettings.js';
import type { RelationSettings } from '../relations/relationSettings.js';
import type { ExpandNode } from '../relations/parseExpand.js';
import { expandKnown, expandTexts, expandsAsText, keysToExpand, knownShape } from '../relations/expandTexts.js';
import { applyHidden, applyModifiersLocally, deepEqual, diffUpdate, hideFrom } from './updates.js';
import { listJson, objectJson, Patcher } from './storedJson.js';
import { listFromChanges } from './storedChanges.js';
import { jsonList } from '../jsonList.js';
import type { IncomingMessage } from 'node:http';
import type { CollectionFiles } from '../files/CollectionFiles.js';
import { collectionFilesOf } from '../files/filesConfig.js';
import type { CollectionFilesConfig } from '../files/filesConfig.js';
import type { OrphanSweeper } from '../files/orphanSweep.js';
import { assertClientId, conditionHolds, conditionOf, etagOf, isGetById, preconditionFailed, taggedGet } from './conditional.js';

/** A request's `$expand` while it is dispatched (Collection.expanding). */
interface Expanding {
  tree: ReadonlyMap<string, ExpandNode>;
  /** Its list was answered expanded, from the stored texts (nothing left for Relations.finish to expand). */
  asText: boolean;
}

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
const NOTHING_REFUSED: QueryRefusals = {};
const NO_PROPERTIES: ReadonlySet<string> = new Set();
const JSON_TYPE = 'application/json; charset=utf-8';
/** No values picked: the objects' texts alone (see StoreCollection.findTexts). */
const NO_NAMES: readonly string[] = [];
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
  /** Stored fields that neither scripts nor clients ever see, nor updates ever unset (a password hash). */
  protected readonly storeOnly: ReadonlySet<string> = new Set();
  protected readonly events: CollectionEventRunner;
  /** answerNow's patcher of stored texts with On Get's changes (made at the first such answer). */
  private nowPatcher: Patcher | undefined;
  /** answerNow's answers with On Get, by stored text (made at the first such answer). */
  private nowAnswers: NowAnswers | undefined;
  private readonly publicCount: boolean;
  /** The server's logger, from init(). */
  protected logger: Logger | undefined;
  /** Told every stored write (live queries); deletes read what they remove while one wants them. */
  private readonly changeListeners = new Map<CollectionChangeListener, ChangesWanted>();
  /** Relation properties, `$expand`, filters across relations, `$total` and aggregates. */
  readonly relations: Relations;
  /**
   * Requests under way whose answer `$expand` completes, with what it expands and whether their
   * list was answered expanded already, from the stored texts. Each entry lives while its request
   * is dispatched (`handle` removes it): a Map, not a WeakMap, whose entries keyed by a young
   * object cost the garbage collector at every scavenge.
   */
  private readonly expanding = new Map<Context, Expanding>();
  /**
   * Whether the last `$expand` here of a shape expandKnown answers was spliced from the stored
   * texts, each object's splice kept: the next such one then tries the kept splices first (a
   * read of the texts alone). Otherwise (none yet, or the last try missed: objects or related
   * objects changed, or a text could not be spliced) it reads the values at once, so a miss costs
   * one read more once, not every time.
   */
  private splicesKept = false;

  /** `private` properties, and the properties without them (what other requests may query). */
  private readonly privateProps: ReadonlySet<string>;
  /** The access rules: the one place that decides what a caller may list, read and write. */
  protected readonly access: CollectionAccess;
  /** `file` properties (files/CollectionFiles.ts): undefined when there is none. */
  private readonly fileProps: CollectionFiles | undefined;
  private readonly fileSweeper: OrphanSweeper | undefined;

  constructor(options: CollectionOptions) {
    this.path = options.path;
    this.properties = options.properties;
    this.privateProps = new Set(Object.keys(options.properties).filter((name) => options.properties[name]?.private === true));
    this.access = new CollectionAccess(
      AccessRules.parse({ rules: options.rules, properties: options.properties, file: options.configFile ?? `resources${options.path}/config.json`, me: options.meProperties }),
    );
    this.store = options.store;
    this.events = options.events ?? NO_EVENTS;
    this.publicCount = options.publicCount ?? false;
    this.conflicts = options.conflicts;
    this.relations = new Relations({ owner: this, store: this.store, settings: relationSettings(options.relations), onRemoved: (ids) => this.removed(ids) });
    const files = collectionFilesOf({ path: this.path, properties: this.properties, store: this.store, config: options.files, logger: () => this.logger });
    this.fileProps = files?.files;
    this.fileSweeper = files?.sweeper;
    // Counts (as /count): On Get may hide objects that a count would reveal.
    this.relations.countsOpenTo = (ctx) => ctx.isRoot || ctx.internal || this.publicCount || !this.events.has('get');
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
    if (host !== undefined) this.relations.attach(host);
    for (const [field, def] of Object.entries(this.properties)) {
      if (def.unique) await this.store.ensureIndex({ field, unique: true });
      else if (def.index) await this.store.ensureIndex({ field });
    }
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
      await this.beforeRequest(ctx);
    }
    let related = method === 'GET' && this.relations.asked(ctx.query) ? this.relations.takeQuery(ctx) : undefined;
    if (related instanceof Promise) related = await related;
    // Expanding splices the stored texts (handleGet, where every collection read shows them as
    // stored) or needs objects: the plain stored-JSON answers would only be parsed again.
    const expanding: Expanding | undefined = related?.expand !== undefined ? { tree: related.expand, asText: false } : undefined;
    let reply: Reply;
    if (expanding === undefined) {
      reply = await this.dispatch(ctx);
    } else {
      this.expanding.set(ctx, expanding);
      try {
        reply = await this.dispatch(ctx);
      } finally {
        this.expanding.delete(ctx);
      }
    }
    // Every answer, whatever made it: no private property, nothing a read rule drops for this caller.
    // (Rules that depend on the object were applied where the stored object was in hand.)
    const plan = this.access.readPlan(ctx);
    const visible = this.seesPrivate(ctx) && plan === undefined ? reply : visibleReply(reply, (object) => this.finish(ctx, object, null, plan, undefined));
    if (related === undefined) return visible;
    // Expanded from the texts already, and no total to add: finish would answer it as it is.
    if (expanding?.asText === true) return related.total ? this.relations.finish(ctx, { ...related, expand: undefined }, visible) : visible;
    return this.relations.finish(ctx, related, visible);
  }

  /**
   * GET /<c>/<id> from an anonymous, non-root visitor, with no query and no script on the way that
   * needs the request (no On BeforeRequest; On Get only when it does the same whatever the
   * request, see CollectionEventRunner.getNow): the stored object's own JSON text, patched with
   * On Get's changes, without a context or a promise. A read rule is tested on the stored text as
   * for an anonymous caller, before On Get (as on the usual path). Not found, hidden by the rule,
   * a write under way, an On Get that needs the request or anything else: undefined, and
   * `handle` answers.
   */
  answerNow(parts: readonly string[]): string | undefined {
    if (parts.length !== 1 || this.store.findOneJsonNow === undefined || this.privateProps.size !== 0 || !this.access.showsStored('read')) return undefined;
    const id = parts[0] as string;
    if (id === '' || id === 'count' || id === 'aggregate' || this.events.has('beforerequest') || !this.storedIsShown()) return undefined;
    if (this.events.has('get')) return this.answerScriptedNow(id);
    const text = this.store.findOneJsonNow(id) ?? undefined;
    return text !== undefined && this.access.anonymousAllowsText(id, text) ? text : undefined;
  }

  /**
   * answerNow with On Get: only when the runner answers the run at once (getNow). The outcome
   * depends on the object alone, so the answer made for a stored text is kept (nowAnswers) and
   * given again, counted as a run, while the object's stored text is that one.
   */
  private answerScriptedNow(id: string): string | undefined {
    const events = this.events;
    if (events.getNow === undefined || this.store.findOneJsonNow === undefined || this.store.findOneWithJsonNow === undefined) return undefined;
    const text = this.store.findOneJsonNow(id) ?? undefined;
    if (text === undefined || !this.access.anonymousAllowsText(id, text)) return undefined;
    // Kept only where the runner counts repeats (getNowRepeated), so a kept answer implies it.
    const kept = this.nowAnswers?.get(id, text);
    if (kept !== undefined) {
      events.getNowRepeated?.();
      return kept;
    }
    // The same object as the text (nothing runs in between): the rule above holds for it.
    const found = this.store.findOneWithJsonNow(id) ?? undefined;
    if (found === undefined) return undefined;
    const outcome = events.getNow(found.doc);
    if (outcome === undefined) return undefined;
    // One patcher for these answers: runs that compare alike share their assigned list, so the
    // text it appends is made once.
    const answer = objectJson(found.text, outcome, (this.nowPatcher ??= new Patcher()));
    if (events.getNowRepeated !== undefined) (this.nowAnswers ??= new NowAnswers()).set(id, found.text, answer);
    return answer;
  }

  /** Root and event scripts (internal requests) see `private` properties; nobody else does (but a user at /me). */
  protected seesPrivate(ctx: Context): boolean {
    return this.privateProps.size === 0 || ctx.isRoot || ctx.internal;
  }

  /**
   * Whether an answer may be the stored objects exactly as stored: an HTTP request (scripts get
   * data, not text), objects answered as they are (no store-only fields such as a password hash,
   * no present() of a subclass) and no private properties to leave out.
   */
  private answersStoredJson(ctx: Context, action: 'list' | 'read'): boolean {
    return this.showsStoredTo(ctx, action) && !this.expanding.has(ctx);
  }

  /** {@link answersStoredJson} but for `$expand`, which splices texts (relations/expandTexts.ts). */
  private showsStoredTo(ctx: Context, action: 'list' | 'read'): boolean {
    return !ctx.internal && this.storedIsShown() && this.seesPrivate(ctx) && (this.access.bypasses(ctx) || this.access.showsStored(action));
  }

  /** Whether objects are shown as stored: no store-only fields, no present() of a subclass. */
  private storedIsShown(): boolean {
    return this.storeOnly.size === 0 && this.present === Collection.prototype.present;
  }

  /**
   * What ctx's query may not name: private properties (but for root, scripts and /me), properties
   * whose read rule does not allow this caller on every object, store-only fields (a password
   * hash). Naming one is refused with 400, so that no answer depends on its value.
   */
  private refusals(ctx: Context, plan: ReadPlan | undefined = this.access.readPlan(ctx)): QueryRefusals {
    const seesPrivate = this.seesPrivate(ctx);
    if (plan === undefined && (ctx.internal || this.storeOnly.size === 0) && (seesPrivate || this.privateProps.size === 0)) return NOTHING_REFUSED;
    const hidden = new Set<string>(ctx.internal ? [] : this.storeOnly);
    if (!seesPrivate) for (const name of this.privateProps) hidden.add(name);
    if (plan === undefined) return { unqueryable: hidden, unprojectable: hidden };
    return { unqueryable: new Set([...hidden, ...this.access.unqueryable(plan)]), unprojectable: new Set([...hidden, ...plan.dropped]) };
  }

  /** The properties ctx's caller may filter, sort and group by (aggregates, filters across relations). */
  queryableFor(ctx: Context): Record<string, PropertyDef> {
    const refused = this.refusals(ctx).unqueryable;
    if (refused === undefined || refused.size === 0) return this.properties;
    return Object.fromEntries(Object.entries(this.properties).filter(([name]) => !refused.has(name)));
  }

  /** The properties `$fields` leaves out for ctx's caller: what it may not read on any object. */
  unprojectableFor(ctx: Context): ReadonlySet<string> {
    return this.refusals(ctx).unprojectable ?? NO_PROPERTIES;
  }

  /**
   * ctx's query compiled as a GET by that caller compiles it: what such a GET refuses (400: a
   * filter, sort or `$fields` on a property the caller may not read) is refused (live queries).
   */
  compileQueryFor(ctx: Context, query: Record<string, unknown>): CompiledQuery {
    return compileQuery(query, this.properties, this.refusals(ctx));
  }

  /**
   * The store filter that limits what ctx's caller may list or read: the access rules' part of
   * every query made for that caller ({} when nothing limits it: root, scripts, no rule). Aggregates
   * and live queries AND it with their own filter.
   */
  accessFilter(ctx: Context, action: 'list' | 'read'): Filter {
    return this.access.filter(ctx, action);
  }

  /**
   * What the access rules let ctx's caller do with this stored object: each action's decision
   * with the rule that made it, and whether each property may be read and written (the
   * dashboard's "try as this user on this object").
   */
  explainAccess(ctx: Context, doc: Record<string, unknown>): AccessExplanation {
    const explanation = this.access.explain(ctx, doc, Object.keys(this.properties));
    if (!this.seesPrivate(ctx)) for (const name of this.privateProps) if (explanation.properties[name]) explanation.properties[name].read = false;
    return explanation;
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
      case 'GET':
        return this.handleGet(ctx);
      case 'POST':
      case 'PUT':
        return this.handleWrite(ctx);
      case 'DELETE':
        return this.handleDelete(ctx);
      default:
        return Promise.reject(new SvcError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported on ${this.path}`, { headers: { allow: 'GET, POST, PUT, DELETE' } }));
    }
  }

  // ---- read ----

  private async handleGet(ctx: Context): Promise<Reply> {
    if (ctx.parts.length > 1) throw new SvcError('NOT_FOUND', 'not found');
    if (ctx.parts[0] === 'count') return this.count(ctx);
    if (ctx.parts[0] === 'aggregate') return this.relations.aggregate(ctx);
    const only = ctx.parts[0];
    if (only !== undefined && only !== '' && this.store.findOneJson && !hasKeys(ctx.query) && !this.events.has('get') && this.answersStoredJson(ctx, 'read')) {
      // GET /<c>/<id> and nothing else: the stored object's own JSON text (the embedded store),
      // its read rule tested on that very text (one snapshot: no write can come in between).
      ctx.query.id = only;
      const text = await this.store.findOneJson(only);
      if (text === null || !this.access.allowsText(ctx, text)) throw new SvcError('NOT_FOUND', 'not found');
      return { status: 200, body: text, headers: { 'content-type': JSON_TYPE } };
    }
    if (only !== undefined && only !== '' && this.store.findOneWithJsonNow && !hasKeys(ctx.query) && this.events.has('get') && this.answersStoredJson(ctx, 'read')) {
      // GET /<c>/<id> with On Get: the object at once, and its stored text patched with the run's
      // changes. idOf sets query.id, which the script sees, as on the usual path. The read rule is
      // tested on that very text, before the script runs (an object it hides is not found).
      const found = this.store.findOneWithJsonNow(this.idOf(ctx, false) as string);
      if (found === null || (found !== undefined && !this.access.allowsText(ctx, found.text))) throw new SvcError('NOT_FOUND', 'not found');
      if (found !== undefined) return { status: 200, body: objectJson(found.text, await this.events.run('get', { ctx, object: found.doc })), headers: { 'content-type': JSON_TYPE } };
    }
    const id = this.idOf(ctx, false);
    const plan = this.access.readPlan(ctx);
    const compiled = compileQuery(ctx.query, this.properties, this.refusals(ctx, plan));
    const skipEvents = compiled.skipEvents && ctx.isRoot;
    const { options, projectAfter } = readOptions(compiled.options, plan);
    if (id !== undefined) {
      compiled.filter.id = id;
      // An object the read rule hides is not found (404): no telling whether it exists.
      const doc = await this.store.findOne(andFilters(compiled.filter, this.access.filter(ctx, 'read')), options);
      if (doc === null) throw new SvcError('NOT_FOUND', 'not found');
      const shown = skipEvents || !this.events.has('get') ? this.present(doc) : await this.afterGetOne(ctx, doc);
      return { status: 200, body: this.finish(ctx, shown, doc, plan, projectAfter) };
    }
    const scripted = !skipEvents && this.events.has('get');
    compiled.filter = andFilters(compiled.filter, this.access.filter(ctx, 'list'));
    const expanding = this.expanding.get(ctx);
    if (expanding !== undefined && !scripted && this.store.findTexts && this.showsStoredTo(ctx, 'list') && compiled.options.fields === undefined && expandsAsText(this.relations, ctx, expanding.tree)) {
      // $expand from the stored texts: each object's text with its related objects' texts spliced in.
      const expand = expanding.tree;
      const { fields: _fields, ...rest } = compiled.options;
      const known = knownShape(this.relations, ctx, expand);
      if (known !== undefined && this.splicesKept) {
        // Each object's kept splice, when every one still holds: no value read, nothing spliced.
        const { texts } = await this.store.findTexts(compiled.filter, rest, NO_NAMES);
        if (expandKnown(this.relations, ctx, texts, known)) {
          expanding.asText = true;
          return { status: 200, body: jsonList(texts), headers: { 'content-type': JSON_TYPE } };
        }
        this.splicesKept = false;
      }
      const pick = keysToExpand(expand);
      const rows = { ...(await this.store.findTexts(compiled.filter, rest, pick)), pick };
      const spliced = await expandTexts(this.relations, ctx, rows, expand, known);
      this.splicesKept = spliced && known !== undefined;
      if (spliced) {
        expanding.asText = true;
        return { status: 200, body: jsonList(rows.texts), headers: { 'content-type': JSON_TYPE } };
      }
    }
    if (!scripted && this.store.findJson && this.answersStoredJson(ctx, 'list') && compiled.options.fields === undefined) {
      // The stored objects' own JSON texts, joined: no copy, no stringify (the embedded store).
      const { fields: _fields, ...rest } = compiled.options;
      return { status: 200, body: await this.store.findJson(compiled.filter, rest), headers: { 'content-type': JSON_TYPE } };
    }
    const reads = scripted && this.store.findTexts && this.events.runGetChanges && compiled.options.fields === undefined ? this.events.getReads?.() : undefined;
    // A script naming `this.__proto__` sees what the copy of the object makes of it: the object path.
    if (reads !== undefined && !reads.includes('__proto__') && this.answersStoredJson(ctx, 'list')) {
      // On Get reading only named properties: those values cross, the run's changes come back and
      // are spliced into the stored texts; no object is copied (storedChanges.ts).
      const { fields: _fields, ...rest } = compiled.options;
      const rows = await (this.store.findTexts as NonNullable<StoreCollection['findTexts']>)(compiled.filter, rest, reads);
      const changes = await (this.events.runGetChanges as NonNullable<CollectionEventRunner['runGetChanges']>)(ctx, reads, rows.values, rows.texts.length);
      return { status: 200, body: listFromChanges(rows, reads, changes), headers: { 'content-type': JSON_TYPE } };
    }
    if (scripted && this.store.findWithJson && this.answersStoredJson(ctx, 'list') && compiled.options.fields === undefined) {
      // On Get patches the stored texts: only objects it changed beyond new properties are serialised.
      const { fields: _fields, ...rest } = compiled.options;
      const { docs, texts } = await this.store.findWithJson(compiled.filter, rest);
      return { status: 200, body: listJson(texts, await this.events.runGetBatch(ctx, docs)), headers: { 'content-type': JSON_TYPE } };
    }
    const docs = await this.store.find(compiled.filter, options);
    return { status: 200, body: (await this.shown(ctx, docs, skipEvents)).map(([doc, shown]) => this.finish(ctx, shown, doc, plan, projectAfter)) };
  }

  /**
   * The one read path for a caller: what GET /<c>?query answers to ctx's caller, as objects.
   * REST lists, `$expand` and anything else that reads on a caller's behalf go through it, so
   * what applies to a GET (private properties, On Get, access rules) applies to them all.
   */
  async readAs(ctx: Context, query: Record<string, unknown>): Promise<Record<string, unknown>[]> {
    const { plan, compiled, filter, options, projectAfter } = this.readFor(ctx, query);
    const docs = await this.store.find(filter, options);
    return (await this.shown(ctx, docs, compiled.skipEvents && ctx.isRoot)).map(([doc, shown]) => this.finish(ctx, shown, doc, plan, projectAfter));
  }

  /**
   * What GET /<c>/<id> answers ctx's caller, with the stored object it was made of: On
   * BeforeRequest, the read rule (null, as that GET's 404, for an object it hides), On Get and
   * what the caller may not read left out (file downloads ask this before serving a file).
   */
  async readOneAs(ctx: Context, id: string): Promise<{ stored: Doc; shown: Record<string, unknown> } | null> {
    if (this.events.has('beforerequest')) await this.beforeRequest(ctx);
    const plan = this.access.readPlan(ctx);
    const doc = await this.store.findOne(andFilters({ id }, this.access.filter(ctx, 'read')));
    if (doc === null) return null;
    return { stored: doc, shown: this.finish(ctx, await this.afterGetOne(ctx, doc), doc, plan, undefined) };
  }

  /**
   * What {@link readAs} answers, as the stored objects' JSON texts beside the values of `pick`,
   * when readAs would answer ctx's caller the stored objects exactly as they are
   * ({@link showsTextsTo}, and no `$fields`); undefined otherwise. The same query, access filter
   * and refusals as readAs: `$expand` writes its answer from these texts. `anyOrder`: the caller
   * looks each object up by id, so without a `$sort` the store may skip ordering them.
   */
  async readTextsAs(ctx: Context, query: Record<string, unknown>, pick: readonly string[], anyOrder = false): Promise<StoredTexts | undefined> {
    if (!this.showsTextsTo(ctx) || this.store.findTexts === undefined) return undefined;
    const { filter, options } = this.readFor(ctx, query);
    if (options.fields !== undefined) return undefined;
    return this.store.findTexts(filter, anyOrder ? { ...options, anyOrder } : options, pick);
  }

  /**
   * {@link readTextsAs} of `{id: {$in: ids}}` in any order (`$expand`'s related read), answered at
   * once from the store's id index when that query is the whole of this caller's read: nothing
   * refused, no read plan, no access filter (each of which readTextsAs would add). Undefined
   * otherwise, or when the store cannot answer at once: the caller then asks readTextsAs.
   */
  readTextsOfIdsNow(ctx: Context, ids: readonly string[], pick: readonly string[]): StoredTexts | undefined {
    return this.readsTextsOfIdsNow(ctx) ? this.store.findTextsOfIdsNow?.(ids, pick) : undefined;
  }

  /** Whether {@link readTextsOfIdsNow} may answer ctx's caller: that query is the whole of its read. */
  readsTextsOfIdsNow(ctx: Context): boolean {
    if (this.store.findTextsOfIdsNow === undefined || !this.showsTextsTo(ctx)) return false;
    const plan = this.access.readPlan(ctx);
    return plan === undefined && this.refusals(ctx, plan) === NOTHING_REFUSED && !hasKeys(this.access.filter(ctx, 'list'));
  }

  /** Whether readAs answers ctx's caller the stored objects as they are: no On Get, nothing hidden, a store that keeps texts. */
  showsTextsTo(ctx: Context): boolean {
    return this.store.findTexts !== undefined && !this.events.has('get') && this.showsStoredTo(ctx, 'list');
  }

  /** readAs's store query for ctx's caller: the query compiled with its refusals, the access rules' filter ANDed in. */
  private readFor(ctx: Context, query: Record<string, unknown>): { plan: ReadPlan | undefined; compiled: CompiledQuery; filter: Filter; options: FindOptions; projectAfter: Record<string, 0 | 1> | undefined } {
    const plan = this.access.readPlan(ctx);
    const compiled = compileQuery(query, this.properties, this.refusals(ctx, plan));
    const { options, projectAfter } = readOptions(compiled.options, plan);
    return { plan, compiled, filter: andFilters(compiled.filter, this.access.filter(ctx, 'list')), options, projectAfter };
  }

  /**
   * Objects already read (a live query's changed object, an emitted one), shown to ctx's caller
   * exactly as a GET by that caller would show them, in order; null where the caller may not see
   * one (On Get cancelled it, or the read rule hides it).
   */
  async showTo(ctx: Context, docs: readonly Doc[]): Promise<(Record<string, unknown> | null)[]> {
    // The read rule, evaluated on each object as stored: what it hides is null, as a GET would 404.
    const allowed = docs.map((d) => this.access.allows(ctx, 'read', d));
    const readable = docs.filter((_d, i) => allowed[i]).map((d) => ({ ...d }));
    const plan = this.access.readPlan(ctx);
    const shown = new Map<Doc, Record<string, unknown>>();
    for (const [doc, object] of await this.shown(ctx, readable, false)) shown.set(doc, this.finish(ctx, object, doc, plan, undefined));
    let next = 0;
    return docs.map((_d, i) => (allowed[i] ? (shown.get(readable[next++] as Doc) ?? null) : null));
  }

  /** A list's objects, each with what On Get (unless skipped) and present() made of it; those On Get cancelled are left out. */
  private async shown(ctx: Context, docs: Doc[], skipEvents: boolean): Promise<[Doc, Record<string, unknown>][]> {
    if (skipEvents || !this.events.has('get')) return docs.map((d) => [d, this.present(d)]);
    const outcomes = await this.events.runGetBatch(ctx, this.storeOnly.size === 0 ? docs : docs.map((d) => this.withoutStoreOnly(d)));
    const out: [Doc, Record<string, unknown>][] = [];
    outcomes.forEach((outcome, i) => {
      if (outcome !== null) out.push([docs[i] as Doc, this.present(applyHidden(outcome))]);
    });
    return out;
  }

  /**
   * An answered object without what the caller may not read: private properties and what property
   * read rules hide, those evaluated on the object as stored (`stored`; null: only the rules that
   * do not depend on the object), then the `$fields` projection deferred until after them.
   */
  private finish(ctx: Context, object: Record<string, unknown>, stored: Doc | null, plan: ReadPlan | undefined, projectAfter: Record<string, 0 | 1> | undefined): Record<string, unknown> {
    const shown = this.access.visible(object, plan, stored);
    let out = shown;
    if (!this.seesPrivate(ctx)) {
      out = {};
      for (const key of Object.keys(shown)) if (!this.privateProps.has(key)) out[key] = shown[key];
    }
    return projectAfter === undefined ? out : project(out, projectAfter);
  }

  private async count(ctx: Context): Promise<Reply> {
    if (!ctx.isRoot && !this.publicCount) throw new SvcError('FORBIDDEN', 'count is available to root only; open it with "publicCount" in app.json');
    const filter = compileFilter(ctx.query, this.properties, this.refusals(ctx));
    return { status: 200, body: { count: await this.store.count(andFilters(filter, this.access.filter(ctx, 'list'))) } };
  }

  private async afterGetOne(ctx: Context, doc: Doc): Promise<Record<string, unknown>> {
    if (!this.events.has('get')) return this.present(doc);
    const outcome = await this.events.run('get', { ctx, object: this.withoutStoreOnly(doc) });
    return this.present(applyHidden(outcome));
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

  /** Phase "after delete": the objects' files go (files/CollectionFiles.ts), then afterDelete. */
  private async removed(ids: readonly string[]): Promise<void> {
    await this.fileProps?.objectsRemoved(ids);
    await this.afterDelete(ids);
  }

  /** Runs after objects were deleted, with their ids. */
  protected afterDelete(_ids: readonly string[]): Promise<void> {
    return Promise.resolve();
  }

  /** What a client may see of a stored object; UserCollection drops the password. */
  protected present(doc: Record<string, unknown>): Record<string, unknown> {
    return doc;
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
    for (const [name, def] of Object.entries(this.properties)) {
      if (def.type === 'boolean' && values[name] === undefined) values[name] = false;
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
      outcome = await this.runWriteEvents(ctx, 'post', object, {}, id);
      object = outcome.object;
      // protect() on create keeps the client's value out of the new object.
      for (const key of outcome.protectedProps) delete object[key];
    }
    this.fileProps?.beforeStore(ctx, object, undefined);
    const missing = requiredErrors(object, this.properties);
    if (missing) throw new SvcError('VALIDATION_FAILED', undefined, { errors: missing });
    if (this.relations.forward.size > 0) await this.relations.checkWrite(ctx, object, undefined);
    const doc: Doc = { ...this.storable(object), ...(await this.hiddenValues(ctx, undefined)), id };
    const stored = await this.writing(() => this.store.insert(doc), chosenId !== undefined);
    await this.fileProps?.afterCommit(ctx, stored, undefined);
    if (this.relations.forward.size > 0) await this.relations.confirmWrite(stored, undefined);
    if (this.changeListeners.size > 0) await this.changed({ kind: 'create', object: this.withoutStoreOnly(stored) });
    await this.afterWrite(ctx, stored, undefined);
    await this.afterCommit(ctx, this.withoutStoreOnly(stored), undefined);
    return { status: 200, body: this.finish(ctx, this.present(outcome ? hideFrom(stored, outcome.hidden) : stored), stored, this.access.readPlan(ctx), undefined) };
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
    for (let attempt = 1; ; attempt++) {
      const reply = await this.updateOnce(ctx, id, body, expected);
      if (reply !== MOVED) return reply;
      if (attempt === MAX_CONDITIONAL_ATTEMPTS) throw new SvcError('CONFLICT', 'the object kept changing while it was being updated; try again');
    }
  }

  private async updateOnce(ctx: Context, id: string, body: Record<string, unknown>, expected: readonly string[] | '*' | undefined): Promise<Reply | typeof MOVED> {
    // Read before the object: a write between the two moves it, and the update below then fails.
    // A write of file properties is always conditional: one made from a stale list could hold a
    // file another request removed meanwhile (files/CollectionFiles.ts afterCommit).
    const conditional = (expected !== undefined && expected !== '*') || this.fileProps?.touches(ctx, body) === true;
    const revised = conditional ? await this.store.findRevised(id) : undefined;
    const precondition = compileFilter(preconditionOf(ctx.query), this.properties, this.refusals(ctx));
    let filter: Filter = { ...precondition, id };
    // An object the read rule hides answers as a missing one: no telling whether it exists.
    const previous = await this.store.findOne(andFilters(filter, this.access.filter(ctx, 'read')));
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
      outcome = await this.runWriteEvents(ctx, 'put', merged, visible);
      object = outcome.object;
    }
    this.fileProps?.beforeStore(ctx, object, previous);
    const missing = requiredErrors(object, this.properties, untouched);
    if (missing) throw new SvcError('VALIDATION_FAILED', undefined, { errors: missing });
    // A relation the caller may not read and sends is checked whole, its stored ids too.
    if (this.relations.forward.size > 0) await this.relations.checkWrite(ctx, object, hideFrom(previous, [...unreadable].filter((name) => named.has(name))) as Doc);
    const ops = diffUpdate(previous, object, sanitized.modifiers, [...(outcome?.protectedProps ?? []), ...this.storeOnly]);
    const hidden = await this.hiddenValues(ctx, previous);
    if (Object.keys(hidden).length > 0) ops.$set = { ...ops.$set, ...hidden };
    const condition = revised ? { revision: revised.revision } : undefined;
    const target = condition === undefined || typeof filter.id === 'string' ? filter : { id, $and: [filter] };
    const updated = await this.writing(() => this.store.update(target, ops, condition));
    if (updated === null && condition !== undefined) return movedAfter(outcome !== undefined && (this.events.has('validate') || this.events.has('put')));
    if (updated === null) throw new SvcError('NO_MATCH', NO_MATCH);
    await this.fileProps?.afterCommit(ctx, updated, previous);
    if (this.relations.forward.size > 0) await this.relations.confirmWrite(updated, previous);
    if (this.changeListeners.size > 0) await this.changed({ kind: 'update', object: this.withoutStoreOnly(updated), previous: this.withoutStoreOnly(previous) });
    await this.afterWrite(ctx, updated, previous);
    await this.afterCommit(ctx, this.withoutStoreOnly(updated), this.withoutStoreOnly(previous));
    return { status: 200, body: this.finish(ctx, this.present(outcome ? hideFrom(updated, outcome.hidden) : updated), updated, this.access.readPlan(ctx), undefined) };
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

  /**
   * The properties of a stored object ctx's caller may not read: private ones, and those a read
   * rule hides on it (none for root and scripts' own calls).
   */
  private unreadableOn(ctx: Context, stored: Doc): Set<string> {
    if (this.access.bypasses(ctx)) return new Set();
    const hidden = this.access.hiddenOn(this.access.readPlan(ctx), stored);
    if (!this.seesPrivate(ctx) && !this.readsOwnPrivate(ctx, stored)) for (const name of this.privateProps) hidden.add(name);
    return hidden;
  }

  /** Whether ctx's caller reads this stored object's private properties on another path (UserCollection: the user at /me). */
  protected readsOwnPrivate(_ctx: Context, _stored: Doc): boolean {
    return false;
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
    if (this.storeOnly.size === 0) return doc;
    const out = { ...doc };
    for (const key of this.storeOnly) delete out[key];
    return out;
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

  // ---- delete ----

  private async handleDelete(ctx: Context): Promise<Reply> {
    if (ctx.parts.length > 1) throw new SvcError('NOT_FOUND', 'not found');
    const id = this.idOf(ctx, false);
    if (id === undefined) {
      if (isPlainObject(ctx.query.id)) return this.deleteMatching(ctx);
      throw new SvcError('BAD_REQUEST', 'an id is required to delete (in the path or as ?id=)');
    }
    const expected = conditionOf(ctx, 'if-match');
    for (let attempt = 1; ; attempt++) {
      const reply = await this.deleteOne(ctx, id, expected);
      if (reply !== MOVED) return reply;
      if (attempt === MAX_CONDITIONAL_ATTEMPTS) throw new SvcError('CONFLICT', 'the object kept changing while it was being deleted; try again');
    }
  }

  /** DELETE /<c>/<id>; with If-Match as update() has it. */
  private async deleteOne(ctx: Context, id: string, expected: readonly string[] | '*' | undefined): Promise<Reply | typeof MOVED> {
    const revised = expected === undefined || expected === '*' ? undefined : await this.store.findRevised(id);
    let filter: Filter = { ...compileFilter(preconditionOf(ctx.query), this.properties, this.refusals(ctx)), id };
    const skipEvents = ctx.isRoot && skipEventsAsked(ctx, undefined);
    const referenced = this.relations.isReferenced();
    const guarded = !this.access.bypasses(ctx) && !(this.access.rules.isOpen('read') && this.access.rules.isOpen('delete'));
    if (expected === undefined && !guarded && !referenced && (skipEvents || (!this.events.has('delete') && !this.events.has('aftercommit')))) {
      const gone = this.wantsChanges() ? await this.store.findOne(filter) : undefined;
      if ((await this.store.remove(filter)) === 0) throw new SvcError('NOT_FOUND', 'not found');
      await this.deleted(gone === null ? [] : gone === undefined ? undefined : [gone]);
      await this.removed([id]);
      return { status: 204 };
    }
    // Hidden by the read rule: 404 as if missing; readable but not deletable: 403 naming the rule.
    const doc = await this.store.findOne(andFilters(filter, this.access.filter(ctx, 'read')));
    if (doc === null) throw new SvcError('NOT_FOUND', 'not found');
    if (expected !== undefined) await this.assertMatches(ctx, doc, expected);
    this.access.assert(ctx, 'delete', doc);
    filter = andFilters(filter, this.access.filter(ctx, 'delete'));
    const object = this.withoutStoreOnly(doc);
    const scripted = this.events.has('delete') && !skipEvents;
    if (scripted) await this.events.run('delete', { ctx, object });
    const condition = revised ? { revision: revised.revision } : undefined;
    if (condition !== undefined && (await this.store.findRevised(id))?.revision !== condition.revision) return movedAfter(scripted);
    const plan = referenced ? await this.relations.beforeRemove([id]) : undefined;
    const target = condition === undefined || typeof filter.id === 'string' ? filter : { id, $and: [filter] };
    if ((await this.store.remove(target, condition)) === 0) {
      if (condition !== undefined && (await this.store.findOne(filter)) !== null) return movedAfter(scripted);
      throw new SvcError('NOT_FOUND', 'not found');
    }
    await this.deleted([doc]);
    if (plan !== undefined) await this.relations.afterRemove(plan);
    await this.removed([id]);
    if (!skipEvents) await this.afterCommit(ctx, object, undefined);
    return { status: 204 };
  }

  /**
   * DELETE with a condition on id (`{"id": {"$in": [...]}}`, `{"id": {"$ne": null}}`): as in
   * Deployd, every match is deleted and On Delete runs once per object; a cancel() keeps the object
   * it ran for. Answers 204 when something was deleted, else the first script error (or 404).
   */
  private async deleteMatching(ctx: Context): Promise<Reply> {
    const asked = andFilters(compileFilter(ctx.query, this.properties, this.refusals(ctx)), this.access.filter(ctx, 'read'));
    // Only what the delete rule allows is deleted; when that is nothing, 403 if the caller could read some.
    const filter = andFilters(asked, this.access.filter(ctx, 'delete'));
    if (!this.access.rules.isOpen('delete') && !this.access.bypasses(ctx) && (await this.store.count(filter)) === 0) {
      throw (await this.store.count(asked)) > 0 ? new SvcError('FORBIDDEN', 'forbidden by rules.delete') : new SvcError('NOT_FOUND', 'not found');
    }
    const skipEvents = ctx.isRoot && skipEventsAsked(ctx, undefined);
    if (skipEvents || (!this.events.has('delete') && !this.events.has('aftercommit'))) {
      const referenced = this.relations.isReferenced();
      const wanted = this.wantsChanges();
      if (this.tracksDeletes || this.fileProps !== undefined || referenced || wanted) {
        // Removed by id, so that exactly the objects read are the ones told deleted.
        const docs = await this.store.find(filter, wanted ? {} : { fields: { id: 1 } });
        const ids = docs.map((d) => d.id);
        if (ids.length === 0) throw new SvcError('NOT_FOUND', 'not found');
        const plan = referenced ? await this.relations.beforeRemove(ids) : undefined;
        if ((await this.store.remove({ id: { $in: ids } })) === 0) throw new SvcError('NOT_FOUND', 'not found');
        await this.deleted(wanted ? docs : undefined);
        if (plan !== undefined) await this.relations.afterRemove(plan);
        await this.removed(ids);
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
    await this.removed(deleted.map((d) => d.id));
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


/** A conditional write found the object's revision moved since it was read: run it again. */
const MOVED: unique symbol = Symbol('moved');
const MAX_CONDITIONAL_ATTEMPTS = 3;

/**
 * A conditional write lost its compare-and-set: run again when no event script ran in it (rules,
 * validation and reads only), else 409 at once, nothing written: the scripts' effects happened
 * once and a run again would repeat them (docs/offline.md). The client sends the request again.
 */
function movedAfter(scriptsRan: boolean): typeof MOVED {
  if (scriptsRan) throw new SvcError('CONFLICT', 'the object changed while this write\'s event scripts ran; nothing was written: send it again', { headers: { 'retry-after': '0' } });
  return MOVED;
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

/**
 * The store options of a read, and the `$fields` projection to apply after property read rules
 * that depend on the object (they are evaluated on the whole stored object, so a projection
 * cannot change their outcome). A dotted `$fields` key then selects its whole top-level property.
 */
function readOptions(options: FindOptions, plan: ReadPlan | undefined): { options: FindOptions; projectAfter: Record<string, 0 | 1> | undefined } {
  if (plan === undefined || plan.perObject.size === 0 || options.fields === undefined) return { options, projectAfter: undefined };
  const { fields, ...rest } = options;
  return { options: rest, projectAfter: fields };
}

/**
 * `$fields` applied to an object in hand: top-level properties (a dotted key selects or keeps its
 * whole property: what the caller may read anyway); `id` kept unless excluded.
 */
function project(object: Record<string, unknown>, fields: Record<string, 0 | 1>): Record<string, unknown> {
  const including = Object.keys(fields).some((k) => k !== 'id' && fields[k] === 1);
  const included = new Set(Object.keys(fields).filter((k) => fields[k] === 1).map((k) => k.split('.')[0] as string));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(object)) {
    const keep = key === 'id' ? fields.id !== 0 : including ? included.has(key) : fields[key] !== 0;
    if (keep) out[key] = object[key];
  }
  return out;
}

/** A reply whose object or objects are shown through `visible` (what the caller may read of each). */
function visibleReply(reply: Reply, visible: (object: Record<string, unknown>) => Record<string, unknown>): Reply {
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
