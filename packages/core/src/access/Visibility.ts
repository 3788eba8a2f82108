import { SvcError } from '../errors.js';
import { compileQuery } from '../query/compileQuery.js';
import type { CompiledQuery, QueryRefusals } from '../query/compileQuery.js';
import type { Doc, Filter, FindOptions } from '../store/Store.js';
import type { Context, PropertyDef, Reply } from '../types.js';
import type { AccessExplanation, CollectionAccess, ReadPlan } from './CollectionAccess.js';

/**
 * What a collection tells about its objects beyond its properties and rules: the facts a
 * subclass supplies (UserCollection: the password hash is stored only; a user sees their own
 * private properties at /me) instead of overriding how reads decide.
 */
export interface VisibilityFacts {
  /**
   * Stored fields that no answer and no script ever shows and no update ever unsets (a user's
   * password hash). Only scripts' own requests may name them in a query.
   */
  readonly storeOnly?: readonly string[];
  /** Whether ctx's caller asks for their own object and may see its private properties (/me). */
  readonly ownObject?: (ctx: Context) => boolean;
  /**
   * Whether ctx's caller reads this stored object's private properties on another path (a user's
   * own object, shown to them at /me): a write's checks treat them as readable by that caller.
   */
  readonly ownStored?: (ctx: Context, stored: Doc) => boolean;
  /** app.json `publicCount`: GET /<c>/count open to every caller. */
  readonly publicCount?: boolean;
}

const NOTHING_REFUSED: QueryRefusals = {};
const NOTHING: ReadonlySet<string> = new Set();
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' } as const;

/** Marks a reply of stored text made by {@link ReadScope.textReply}, with the scope it was made for. */
const GRANTED: unique symbol = Symbol('stored text granted');

/** A reply whose body is a stored JSON text (as it is, patched or spliced), and the scope that allowed it. */
export type TextReply = Reply & { body: string; [GRANTED]: ReadScope };

/**
 * "What this caller sees" of one collection: private properties, store-only fields, property
 * read rules, the gates on counts, and whether a caller may get the stored texts as they are. The
 * one place every read asks ({@link scope}); nothing else decides what is hidden.
 */
export class Visibility {
  /** `private` properties: root, scripts and the object's own user at /me see them. */
  readonly privateProps: ReadonlySet<string>;
  /** See {@link VisibilityFacts.storeOnly}. */
  readonly storeOnly: ReadonlySet<string>;
  private readonly ownObject: ((ctx: Context) => boolean) | undefined;
  /** See {@link VisibilityFacts.ownStored}. */
  readonly ownStored: ((ctx: Context, stored: Doc) => boolean) | undefined;
  private readonly publicCount: boolean;
  /**
   * The read scopes made are kept on the reader each was made for (`ctx.reader`, else the
   * context), under this Visibility's own key: one per request, one per live query; a scope goes
   * with its request or subscription, a new Visibility (rules or properties changed) starts with
   * none. Not in a WeakMap keyed by the reader: one entry per request made V8 keep every request
   * of a POST (whose answer waits for the group commit) through young-generation collections and
   * promote it, ~3 KB per request, GC 7 to 27 µs of a POST (bench/RESULTS.md, "Issue 39: what a
   * plain request leaves behind"), as SwapSet's comment tells of a Set.
   *
   * A plain (enumerable) property, set by assignment: `Object.defineProperty` per request (to hide
   * it) cost ~0.5-3 µs of a POST (bench/RESULTS.md, "Issue 39: GET by id and POST, round 6"). A
   * context copied with `{...ctx}` so carries its parent's scope, which serves only the reader it
   * was made for ({@link ReadScope.reader}): the copy makes its own.
   */
  private readonly madeKey = Symbol('svc.readScope');
  /** Scopes of readers that take no property (a frozen object): rare, kept the weak way. */
  private readonly madeFrozen = new WeakMap<object, ReadScope>();

  constructor(
    readonly access: CollectionAccess,
    readonly properties: Record<string, PropertyDef>,
    facts: VisibilityFacts = {},
  ) {
    this.privateProps = new Set(Object.keys(properties).filter((name) => properties[name]?.private === true));
    this.storeOnly = new Set(facts.storeOnly ?? []);
    this.ownObject = facts.ownObject;
    this.ownStored = facts.ownStored;
    this.publicCount = facts.publicCount ?? false;
  }

  /** Whether stored objects are what answers show of them (no store-only field to leave out). */
  get storedIsShown(): boolean {
    return this.storeOnly.size === 0;
  }

  /**
   * Whether an anonymous visitor who is not root gets the stored objects as they are: decided once
   * for the collection (no private property, no property read rule, no store-only field). The
   * synchronous GET path asks it instead of making a scope.
   */
  get anonymousAsStored(): boolean {
    return this.privateProps.size === 0 && this.storeOnly.size === 0 && this.access.showsStored('read');
  }

  /** Whether ctx's caller sees `private` properties. */
  seesPrivate(ctx: Context): boolean {
    return this.privateProps.size === 0 || ctx.isRoot || ctx.internal || this.ownObject?.(ctx) === true;
  }

  /**
   * ctx's read scope: what the caller may name in a query, the rules' store filters, the property
   * read plan and what is hidden from its answers. The one function every read of this collection
   * takes it from (a GET, a write, a count, `$expand` into it at any level, a live query's snapshot
   * and events, an emit, the dashboard's "try as this user"): made once per reader (a request, or
   * a live query: `ctx.reader`) and kept while it is the same caller ({@link ReadScope.isFor}).
   */
  scope(ctx: Context): ReadScope {
    const reader = (ctx.reader ?? ctx) as Record<symbol, ReadScope | undefined>;
    const extensible = Object.isExtensible(reader);
    const kept = extensible ? reader[this.madeKey] : this.madeFrozen.get(reader);
    // A copy of a context (`{...ctx}`) holds the scope of the one it was copied from: not its own.
    if (kept !== undefined && kept.reader === reader && kept.isFor(ctx)) return kept;
    const made = this.newScope(ctx);
    if (extensible) reader[this.madeKey] = made;
    else this.madeFrozen.set(reader, made);
    return made;
  }

  /** A new read scope for ctx: only {@link scope} makes one (tests count the calls). */
  newScope(ctx: Context): ReadScope {
    return new ReadScope(this, ctx);
  }

  /** A stored object as scripts and answers see it: the store-only fields left out. */
  withoutStoreOnly<T extends Record<string, unknown>>(doc: T): T {
    if (this.storeOnly.size === 0) return doc;
    let has = false;
    for (const key of this.storeOnly) if (Object.hasOwn(doc, key)) has = true;
    if (!has) return doc;
    // Built, not copied then deleted: the object keeps a fast shape for the JSON answer.
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(doc)) if (!this.storeOnly.has(key)) out[key] = doc[key];
    return out as T;
  }

  /** GET /<c>/count: root only, unless app.json `publicCount` opens it. */
  assertCount(ctx: Context): void {
    if (!ctx.isRoot && !this.publicCount) throw new SvcError('FORBIDDEN', 'count is available to root only; open it with "publicCount" in app.json');
  }

  /** `$total` and aggregates: open unless an On Get script may hide objects a count would reveal. */
  totalsOpenTo(ctx: Context, scriptedGet: boolean): boolean {
    return ctx.isRoot || ctx.internal || this.publicCount || !scriptedGet;
  }

  /**
   * What the rules let ctx's caller do with this stored object (the dashboard's "try as this
   * user"): which properties it reads is what its read scope hides on the object (hiddenOn), so
   * the dashboard tells what a GET of that caller shows.
   */
  explain(ctx: Context, doc: Record<string, unknown>): AccessExplanation {
    const names = Object.keys(this.properties);
    const explanation = this.access.explain(ctx, doc, names);
    // The property read decisions are those of the answer: what finish() keeps of the object.
    const shown = this.scope(ctx).finish(Object.fromEntries(names.map((name) => [name, true])), doc as Doc);
    for (const [name, decision] of Object.entries(explanation.properties)) decision.read = Object.hasOwn(shown, name);
    return explanation;
  }
}

/** A query compiled for a caller: the store's filter and options, and the `$fields` to apply after property rules. */
export interface ScopedQuery {
  compiled: CompiledQuery;
  /** The store options (without `$fields` when property rules that depend on the object must see it whole). */
  options: FindOptions;
  /** `$fields`, applied after the property rules (see {@link ReadScope.finish}). */
  projectAfter: Record<string, 0 | 1> | undefined;
}

/**
 * One caller's reads of one collection ({@link Visibility.scope}): the query refusals, the rules'
 * store filters, the property read plan and what is hidden, decided once.
 */
export class ReadScope {
  /** Root or a script's own request: no rule applies. */
  readonly trusted: boolean;
  readonly seesPrivate: boolean;
  /**
   * Whether the caller is shown the stored objects exactly as they are: nothing to leave out (no
   * store-only field, no private property it may not see, no property read rule). Only then may a
   * stored text answer it.
   */
  readonly asStored: boolean;
  private readonly filters: Partial<Record<'list' | 'read', Filter>> = {};
  private planMade = false;
  private planValue: ReadPlan | undefined;
  private refusalsValue: QueryRefusals | undefined;
  private readonly sessionId: string;
  private readonly uid: string | undefined;
  /** The reader it was made for ({@link Visibility.scope} keeps it there): `ctx.reader`, else the context. */
  readonly reader: object;

  constructor(
    private readonly visibility: Visibility,
    private readonly caller: Context,
  ) {
    const access = visibility.access;
    this.reader = caller.reader ?? caller;
    this.sessionId = caller.session.id;
    this.uid = caller.session.uid;
    this.trusted = access.bypasses(caller);
    this.seesPrivate = visibility.seesPrivate(caller);
    this.asStored = visibility.storedIsShown && this.seesPrivate && (this.trusted || access.showsStored('read'));
  }

  /**
   * How property read rules shape the answers; undefined when they keep everything. Made at the
   * first use, with the request's query as it is then (a rule may name `@query.id`).
   */
  get plan(): ReadPlan | undefined {
    if (!this.planMade) {
      this.planValue = this.visibility.access.readPlan(this.caller);
      this.planMade = true;
    }
    return this.planValue;
  }

  /** What the caller may not filter, sort or project by (400). */
  get refusals(): QueryRefusals {
    return (this.refusalsValue ??= refusalsOf(this.visibility, this.caller.internal, this.seesPrivate, this.plan));
  }

  /**
   * The reply of a stored text (as it is, patched by On Get or spliced with related texts) for this
   * caller: the only way a Collection makes one, refused (500, never sent) unless the caller is
   * shown stored objects as they are and asks over HTTP. {@link checkText} lets no other text pass.
   */
  textReply(text: string, plan: string): TextReply {
    if (!this.asStored || this.caller.internal) throw new SvcError('INTERNAL', `a stored text may not answer this caller (plan ${plan})`);
    return { status: 200, body: text, headers: { ...JSON_HEADERS }, plan, [GRANTED]: this };
  }

  /**
   * The net on a Collection's answer: a text body passes only when {@link textReply} made it for
   * this very scope (an answer that does not come from a shortcut is objects, shown by finish()).
   */
  checkText(reply: Reply): void {
    if (typeof reply.body === 'string' && (reply as Partial<TextReply>)[GRANTED] !== this) throw new SvcError('INTERNAL', 'a text answer was made without a read scope that allows it');
  }

  /** Whether the net must look at this caller's answers (something may be hidden from it). */
  get hides(): boolean {
    return !this.seesPrivate || this.plan !== undefined;
  }

  /** The access rules' store filter of what the caller may list or read ({} when nothing limits it). */
  filter(action: 'list' | 'read'): Filter {
    return (this.filters[action] ??= this.visibility.access.filter(this.caller, action));
  }

  /** `query` compiled for this caller: refused names answer 400; `$fields` deferred past property rules that depend on the object. */
  compile(query: Record<string, unknown>): ScopedQuery {
    const compiled = compileQuery(query, this.visibility.properties, this.refusals);
    const deferred = this.plan !== undefined && this.plan.perObject.size > 0 && compiled.options.fields !== undefined;
    if (!deferred) return { compiled, options: compiled.options, projectAfter: undefined };
    const { fields, ...options } = compiled.options;
    return { compiled, options, projectAfter: fields };
  }

  /**
   * Whether ctx is the caller this scope was made for: the same user, roles, session and query
   * (a rule may read `@me`, `@query`), and the same view of private properties (/me). A context
   * derived for another caller gets a scope of its own.
   */
  isFor(ctx: Context): boolean {
    const made = this.caller;
    if (ctx.me !== made.me || ctx.isRoot !== made.isRoot || ctx.internal !== made.internal || ctx.query !== made.query) return false;
    // The session as it was when the scope was made (a login changes the uid of the same object).
    if (ctx.session.id !== this.sessionId || ctx.session.uid !== this.uid) return false;
    return this.visibility.seesPrivate(ctx) === this.seesPrivate;
  }

  /** Whether the read rule lets the caller read this stored object (a live query's or an emit's object). */
  allows(stored: Doc): boolean {
    return this.visibility.access.allows(this.caller, 'read', stored);
  }

  /** Whether ctx's caller may read the object whose stored JSON text this is. */
  allowsText(text: string): boolean {
    return this.visibility.access.allowsText(this.caller, text);
  }

  /**
   * An answered object without what the caller may not read: what property read rules hide (those
   * that depend on the object evaluated on `stored`, the object as stored; null: only the others),
   * private properties, then the `$fields` projection deferred until after them.
   */
  finish(object: Record<string, unknown>, stored: Doc | null, projectAfter?: Record<string, 0 | 1>): Record<string, unknown> {
    const shown = this.visibility.access.visible(object, this.plan, stored);
    let out = shown;
    if (!this.seesPrivate) {
      out = {};
      for (const key of Object.keys(shown)) if (!this.visibility.privateProps.has(key)) out[key] = shown[key];
    }
    return projectAfter === undefined ? out : project(out, projectAfter);
  }

  /**
   * The properties of a stored object the caller may not read: those the property read rules hide
   * on it and the private ones (none for root and scripts' own calls). A write's answer must not
   * depend on their values.
   */
  hiddenOn(stored: Doc): Set<string> {
    if (this.trusted) return new Set();
    const hidden = this.visibility.access.hiddenOn(this.plan, stored);
    if (!this.seesPrivate && this.visibility.ownStored?.(this.caller, stored) !== true) for (const name of this.visibility.privateProps) hidden.add(name);
    return hidden;
  }

  /** The properties the caller may filter, sort and group by (aggregates, filters across relations). */
  queryable(): Record<string, PropertyDef> {
    const refused = this.refusals.unqueryable;
    const properties = this.visibility.properties;
    if (refused === undefined || refused.size === 0) return properties;
    return Object.fromEntries(Object.entries(properties).filter(([name]) => !refused.has(name)));
  }
}

/**
 * What a caller's query may not name: private properties (but for root, scripts and /me),
 * properties whose read rule does not allow this caller on every object, store-only fields (but
 * for scripts). Naming one is refused with 400, so that no answer depends on its value.
 */
function refusalsOf(visibility: Visibility, internal: boolean, seesPrivate: boolean, plan: ReadPlan | undefined): QueryRefusals {
  const storeOnly = internal ? NOTHING : visibility.storeOnly;
  const privateProps = seesPrivate ? NOTHING : visibility.privateProps;
  if (plan === undefined && storeOnly.size === 0 && privateProps.size === 0) return NOTHING_REFUSED;
  const hidden = new Set<string>([...storeOnly, ...privateProps]);
  if (plan === undefined) return { unqueryable: hidden, unprojectable: hidden };
  return { unqueryable: new Set([...hidden, ...plan.dropped, ...plan.perObject.keys()]), unprojectable: new Set([...hidden, ...plan.dropped]) };
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
