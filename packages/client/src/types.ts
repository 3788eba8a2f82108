import type { OfflineApi } from './offline/offlineApi.js';
import type { QrSvgOptions } from './qrSvg.js';
import type { SvcPromise } from './SvcPromise.js';

/** The error object a failed call rejects with (and passes as the callback's second argument). */
export interface SvcErrorBody {
  /** HTTP status; 0 when the server could not be reached. */
  status: number;
  /** The same as `status` (dpd.js's name). */
  statusCode: number;
  message?: string;
  /** Messages by property name, usually validation errors. */
  errors?: Record<string, string>;
  /** svc's stable error code, when the server sent one. */
  code?: string;
}

/** A call's callback: `fn(result, error)`, always run asynchronously; `result` is null on failure. */
export type Callback<R> = (result: R | null, error?: SvcErrorBody) => void;

/** A realtime listener: gets the message's data. */
export type Listener<D = unknown> = (data: D) => void;

/** A path segment of a call (`func` or `path`). */
export type Segment = string | number;

/** A loose query object for resources without types. */
export type QueryObject = Record<string, unknown>;

/**
 * What `login` takes: Deployd's username and password, or the email address and password (when
 * the user collection has a mail flow on: docs/accounts.md).
 */
export type LoginCredentials = { username: string; password: string } | { email: string; password: string };

/** The session record a login answers. */
export interface SessionInfo {
  /** The session id. */
  id: string;
  /** Path of the user collection. */
  path: string;
  /** The user's id. */
  uid: string;
}

/** A login whose user has two-factor on: no session yet; `mfa.verify` (or, with `enroll`, `mfa.enroll` and `mfa.confirm`) completes it. */
export interface MfaStep {
  mfaRequired: true;
  mfaToken: string;
  /** The collection requires two-factor and this user has none yet: enrol with the token. */
  enroll?: true;
}

/** What a login answers: the session, or the second step. */
export type LoginAnswer = SessionInfo | MfaStep;

/** Options of `loginWithProvider`. */
export interface ProviderLoginOptions {
  /** Where the provider sends the browser back: exactly one of the collection's `auth.oauth.redirects`. */
  redirect: string;
  /** 'redirect' (default): the page goes to the provider; 'popup': a window does, and the promise answers. */
  mode?: 'redirect' | 'popup';
  /** Link the provider to the logged-in user instead of logging in. */
  link?: boolean;
}

/** The two-factor (TOTP) calls of a user collection: `svc.users.mfa`. */
export interface MfaCalls {
  /** The logged-in user's state. */
  status(fn?: Callback<{ enabled: boolean; required: boolean; recoveryCodesLeft: number }>): SvcPromise<{ enabled: boolean; required: boolean; recoveryCodesLeft: number }>;
  /** A new secret and its otpauth:// URI (show it as a QR code); the logged-in user, or a login's `mfaToken` when `enroll` was asked. */
  enroll(input?: { mfaToken?: string }, fn?: Callback<{ secret: string; uri: string }>): SvcPromise<{ secret: string; uri: string }>;
  /** The first code turns two-factor on: the 10 recovery codes are answered this once (and the session, with an mfaToken). */
  confirm(input: { code: string; mfaToken?: string }, fn?: Callback<{ recoveryCodes: string[] } & Partial<SessionInfo>>): SvcPromise<{ recoveryCodes: string[] } & Partial<SessionInfo>>;
  /** The second step of a login: a current code or a recovery code. */
  verify(input: { mfaToken: string; code: string }, fn?: Callback<SessionInfo>): SvcPromise<SessionInfo>;
  /** Turns two-factor off (a current code or a recovery code). */
  disable(input: { code: string }, fn?: Callback<{ enabled: false }>): SvcPromise<{ enabled: false }>;
  /** The QR code of `enroll`'s `uri` as an SVG string, made in the client (the secret never leaves it); the same as `otpauthQrSvg`. */
  qrSvg(uri: string, options?: QrSvgOptions): string;
}

/** The account calls every user collection has beside login, logout and me. */
export interface AccountCalls {
  /** Logs in with an OAuth/OpenID Connect provider of `auth.oauth.providers`. */
  loginWithProvider(provider: string, options: ProviderLoginOptions): SvcPromise<LoginAnswer>;
  /** After a redirect-mode provider login: the answer carried in the page's fragment, or null; throws the provider error. */
  providerLoginResult(hash?: string): LoginAnswer | null;
  readonly mfa: MfaCalls;
}

/** How the runtime treats one resource; `svc types` and `/svc.js` write these. */
export interface ResourceInfo {
  /** '/todos', '/a/b'. */
  path: string;
  kind: 'collection' | 'users' | 'custom';
  /** RPC-style methods of custom resource types: name -> HTTP method and func segment. */
  methods?: Record<string, { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; func: string }>;
  /** A collection's conflict policy for offline writes (config.json `offline.conflicts`). */
  conflicts?: 'server-wins' | 'last-writer-wins' | 'app';
}

/** The resources of an app, as `svc types` exports them (`createClient<Types>(url, { resources })`). */
export type ResourceList = readonly ResourceInfo[];

/** No relations. */
export type NoRelations = Record<never, never>;

/**
 * The relations of the objects a relation expands to, for nested `$expand` (`"comments_via_post.author"`):
 * what each of their relations expands to (`Rel`) and, in turn, their relations' (`Related`).
 */
export interface RelationLinks<Rel extends object = NoRelations, Related extends object = NoRelations> {
  rel: Rel;
  related: Related;
}

/**
 * A Collection whose objects are `Item`; `Rel` names what each relation and back-relation of it
 * expands to, `Related` the {@link RelationLinks} of each (`svc types` writes them).
 */
export interface CollectionDef<Item extends { id: string }, Rel extends object = NoRelations, Related extends object = NoRelations> {
  kind: 'collection';
  item: Item;
  relations?: Rel;
  related?: Related;
}

/**
 * A User Collection whose users are `Item` (password is never part of it). `Login` is what its
 * login answers: {@link LoginAnswer} when the collection has two-factor (`auth.mfa`), where a
 * login may answer the second step instead of the session. `Rel`: as in {@link CollectionDef}.
 */
export interface UserCollectionDef<Item extends { id: string; username: string }, Login extends LoginAnswer = SessionInfo, Rel extends object = NoRelations, Related extends object = NoRelations> {
  kind: 'users';
  item: Item;
  login: Login;
  relations?: Rel;
  related?: Related;
}

/**
 * `Item` with the relations `E` expanded (`$expand`): a relation to one object becomes that
 * object, or null when the caller may not read it; many relations and back-relations become arrays.
 */
export type Expanded<Item, Rel, E extends keyof Rel> = Omit<Item, E & keyof Item> & { [K in E]: Rel[K] };

/** `"a"` of `"a.b.c"`. */
type PathHead<P extends string> = P extends `${infer H}.${string}` ? H : P;
/** `"b.c"` of `"a.b.c"` for `H` = `"a"`; never when P is `H` alone. */
type PathTail<P extends string, H extends string> = P extends `${H}.${infer T}` ? T : never;
/** The links of relation K, none when `Related` does not name it. */
type LinksOf<Related, K> = K extends keyof Related ? Related[K] : RelationLinks;

/**
 * `Item` with the relation paths `P` expanded (`"author"`, `"comments_via_post.author"`): each
 * first name as in {@link Expanded}, and in the objects it expands to, the rest of the paths
 * that start with it.
 */
export type ExpandedPaths<Item, Rel, Related, P extends string> = Omit<Item, PathHead<P> & keyof Item> & {
  [K in PathHead<P> & keyof Rel]: ExpandedValue<Rel[K], LinksOf<Related, K>, PathTail<P, K & string>>;
};

/** A relation's value (an object, null, or an array of objects) with the paths `P` expanded in its objects. */
type ExpandedValue<V, L, P extends string> = [P] extends [never]
  ? V
  : V extends readonly (infer O)[]
    ? ExpandedObject<O, L, P>[]
    : V extends object
      ? ExpandedObject<V, L, P>
      : V;

type ExpandedObject<O, L, P extends string> = L extends RelationLinks<infer Rel, infer Related> ? ExpandedPaths<O, Rel, Related, P> : O;

/** Levels `$expand` may go: 4, the server's hard cap (app.json `relations.expandDepth`, default 2, may be lower). */
type ExpandLevels = [unknown, unknown, unknown];

/** The relation paths a `$expand` list may name: `"author"`, `"comments_via_post.author"`, up to four levels. */
export type ExpandPath<Rel, Related, D extends unknown[] = []> = {
  [K in keyof Rel & string]: K | (D extends ExpandLevels ? never : LinksOf<Related, K> extends RelationLinks<infer R, infer N> ? `${K}.${ExpandPath<R, N, [...D, unknown]>}` : never);
}[keyof Rel & string];

/** Options of one expanded relation (the object form of `$expand`). */
export interface ExpandOptions {
  $fields?: Record<string, 0 | 1>;
  $sort?: Record<string, 1 | -1>;
  $limit?: number;
  $expand?: { [relation: string]: true | ExpandOptions };
}

/** `$expand`: `"a,b.c"`, `["a", "b.c"]` or `{"a": {"$fields": ...}}`. */
export type ExpandQuery = string | readonly string[] | { [relation: string]: true | ExpandOptions };

/** A custom resource; `Methods` names its extra RPC-style methods. */
export interface CustomDef<Methods extends string = never> {
  kind: 'custom';
  methods: Methods;
}

/** A resource the client knows nothing about: every call is available, results are unknown. */
export interface UnknownDef {
  kind: 'unknown';
}

/** One resource of a {@link ClientTypes}. */
export type ResourceDef = CollectionDef<{ id: string }> | UserCollectionDef<{ id: string; username: string }, LoginAnswer> | CustomDef<string> | UnknownDef;

/** The shape `svc types` generates: resource name (dashes removed) -> definition. */
export interface ClientTypes {
  resources: { [name: string]: ResourceDef };
}

/** Types for a client used without generated types. */
export interface UntypedClientTypes extends ClientTypes {
  resources: { [name: string]: UnknownDef };
}

/** Conditions on one property (the query language). */
export interface Condition<V> {
  $gt?: V;
  $gte?: V;
  $lt?: V;
  $lte?: V;
  $ne?: V | null;
  $in?: readonly V[];
  $nin?: readonly V[];
  $exists?: boolean;
  $regex?: V extends string ? string : never;
  $options?: V extends string ? string : never;
}

/** What a property may be compared with: its value, an element of its array, or conditions. */
export type PropertyQuery<V> = V | (V extends readonly (infer E)[] ? E | Condition<E> : never) | Condition<V> | null;

/** A query on a collection of `Item`: properties, conditions and commands; unknown names do not compile. */
export type Query<Item> = { [K in keyof Item]?: PropertyQuery<Item[K]> } & QueryCommands<Item>;

/** The whole-query commands. */
export interface QueryCommands<Item> {
  $sort?: { [K in keyof Item]?: 1 | -1 };
  $fields?: { [K in keyof Item]?: 0 | 1 };
  $limit?: number;
  $skip?: number;
  $or?: readonly Query<Item>[];
  $limitRecursion?: number;
  /** Root only. */
  $skipEvents?: boolean;
  /** Related objects in place of their ids, and back-relations (`comments_via_post`). */
  $expand?: ExpandQuery;
  /** The count before `$skip`/`$limit` in the X-Total-Count header (the answer stays an array). */
  $total?: boolean;
  /**
   * Full-text search over the properties declared `"search": true` (at most 8 words, each a word
   * of one of them; case and accents do not matter); without `$sort`, the most relevant first.
   */
  $search?: string;
}

/** Update modifiers usable as a property's value in an update. */
export type Modifier<V> =
  | (V extends number ? { $inc: number } : never)
  | (V extends readonly (infer E)[] ? { $push: E } | { $pushAll: readonly E[] } | { $pull: E } | { $pullAll: readonly E[] } : never);

/** The keys of `Item` whose value is always a boolean (never absent from a stored object). */
type BooleanKeys<Item> = { [K in keyof Item]-?: [Item[K]] extends [boolean] ? (boolean extends Item[K] ? K : never) : never }[keyof Item];

/**
 * The body of a create: the properties of `Item` but id (which the server assigns unless given),
 * optional where `Item` has them optional, and booleans optional too: an object always has its
 * booleans, but a create may leave them out (the server stores false).
 */
export type CreateInput<Item> = Omit<Item, 'id' | BooleanKeys<Item>> & Partial<Pick<Item, BooleanKeys<Item>>> & { id?: string };

/** The body of an update: any properties, or modifiers. */
export type UpdateInput<Item> = { [K in Exclude<keyof Item, 'id'>]?: Item[K] | Modifier<Item[K]> } & { id?: string };

/** Realtime listening, on the client and (namespaced) on each collection. */
export interface Listening {
  /** Calls `fn(data)` on each message. */
  on<D = unknown>(message: string, fn: Listener<D>): void;
  /** Removes one listener, or all listeners of the message. */
  off<D = unknown>(message: string, fn?: Listener<D>): void;
  /** Calls `fn(data)` on the next message only. */
  once<D = unknown>(message: string, fn: Listener<D>): void;
}

/** One event of a live query (`svc.<collection>.subscribe`). */
export type LiveEvent<Item> =
  /** The objects matching now (first, when asked; again after a reconnect that missed too much). */
  | { type: 'snapshot'; objects: Item[] }
  /** An object created, changed, or changed so that it now matches. */
  | { type: 'create' | 'update' | 'enter'; object: Item }
  /** An object deleted, or changed so that it no longer matches (or may no longer be seen). */
  | { type: 'delete' | 'leave'; id: string }
  /** The server ended the subscription (the session ended: logout, password change, expiry). */
  | { type: 'ended'; reason: string }
  /** The server refused the subscription (the error a GET with that query would answer). */
  | { type: 'error'; error: SvcErrorBody };

/**
 * A live query's handler: each event, and the query's objects after it (ordered by `$sort`, at
 * most `$limit`, as a GET would answer now).
 */
export type LiveHandler<Item> = (event: LiveEvent<Item>, objects: readonly Item[]) => void;

/** Options of `subscribe`. */
export interface SubscribeOptions {
  /** Send the objects matching now first (a `snapshot` event). Default true. */
  snapshot?: boolean;
}

/** Ends a live query. */
export type Unsubscribe = () => void;

/** Live queries on a collection. */
export interface Subscribing<Item> {
  /**
   * Calls `handler` with every change of the objects matching `query` that this client's user may
   * see, as a GET would show them (GET's query language), until the returned function is called.
   */
  subscribe(query: Query<Item>, handler: LiveHandler<Item>, options?: SubscribeOptions): Unsubscribe;
}

/** The calls every resource has: `svc('<name>')` gives exactly these. */
export interface ResourceAccessor {
  get<R = unknown>(...args: GetArgs<R>): SvcPromise<R>;
  post<R = unknown>(...args: BodyArgs<R>): SvcPromise<R>;
  put<R = unknown>(...args: BodyArgs<R>): SvcPromise<R>;
  del<R = unknown>(...args: DelArgs<R>): SvcPromise<R>;
  exec<R = unknown>(func: Segment, ...args: ExecArgs<R>): SvcPromise<R>;
}

/** get([func], [path], [query], fn). */
export type GetArgs<R> =
  | [fn?: Callback<R>]
  | [query: QueryObject, fn?: Callback<R>]
  | [func: Segment, fn?: Callback<R>]
  | [func: Segment, query: QueryObject, fn?: Callback<R>]
  | [func: Segment, path: Segment, fn?: Callback<R>]
  | [func: Segment, path: Segment, query: QueryObject, fn?: Callback<R>];

/** post/put([path], [query], body, fn). */
export type BodyArgs<R> =
  | [body?: unknown, fn?: Callback<R>]
  | [query: QueryObject, body: unknown, fn?: Callback<R>]
  | [path: Segment, body?: unknown, fn?: Callback<R>]
  | [path: Segment, query: QueryObject, body: unknown, fn?: Callback<R>];

/** del([path], [query], fn). */
export type DelArgs<R> = [fn?: Callback<R>] | [query: QueryObject, fn?: Callback<R>] | [path: Segment, fn?: Callback<R>] | [path: Segment, query: QueryObject, fn?: Callback<R>];

/** exec(func, [path], [body], fn). */
export type ExecArgs<R> = [fn?: Callback<R>] | [body: unknown, fn?: Callback<R>] | [path: Segment, fn?: Callback<R>] | [path: Segment, body: unknown, fn?: Callback<R>];

/** What a file property holds for each file (docs/files.md), as answered. */
export interface FileInfo {
  /** Unguessable; a new file always gets a new id. */
  id: string;
  /** The name its uploader gave. */
  name: string;
  size: number;
  /** Sniffed from the bytes by the server (never the uploader's Content-Type). */
  type: string;
  /** Where it is served, under the object's and the property's read rules; images take `?thumb=<declared size>`. */
  url: string;
}

/** The names of an object's file properties. */
export type FileKeys<Item> = { [K in keyof Item]-?: NonNullable<Item[K]> extends FileInfo | readonly FileInfo[] ? K : never }[keyof Item] & string;

/** A file's bytes for {@link CollectionAccessor.upload}. */
export type UploadBody = Blob | ArrayBuffer | Uint8Array;

/** Options of {@link CollectionAccessor.upload}. */
export interface UploadOptions {
  /** The file's name (default: a File's own name, else `file`). */
  name?: string;
  /** Add to a `many` property's files rather than replace them (POST instead of PUT). */
  add?: boolean;
}

/** svc.<collection>: the Collection shorthands, typed by its objects. */
export interface CollectionAccessor<Item extends { id: string }, Create = CreateInput<Item>, Rel extends object = NoRelations, Related extends object = NoRelations> extends Listening, Subscribing<Item> {
  get(fn?: Callback<Item[]>): SvcPromise<Item[]>;
  /** With `$expand` naming relation paths (`"author"`, `"comments_via_post.author"`): the objects with those relations expanded. */
  get<const E extends readonly ExpandPath<Rel, Related>[]>(query: Query<Item> & { $expand: E }, fn?: Callback<ExpandedPaths<Item, Rel, Related, E[number]>[]>): SvcPromise<ExpandedPaths<Item, Rel, Related, E[number]>[]>;
  get(query: Query<Item>, fn?: Callback<Item[]>): SvcPromise<Item[]>;
  get(id: string, fn?: Callback<Item>): SvcPromise<Item>;
  post(object: Create, fn?: Callback<Item>): SvcPromise<Item>;
  /** With an id it behaves like put. */
  post(id: string, object: UpdateInput<Item>, fn?: Callback<Item>): SvcPromise<Item>;
  put(id: string, object: UpdateInput<Item>, fn?: Callback<Item>): SvcPromise<Item>;
  put(object: UpdateInput<Item> & { id: string }, fn?: Callback<Item>): SvcPromise<Item>;
  put(query: Query<Item> & { id: string }, object: UpdateInput<Item>, fn?: Callback<Item>): SvcPromise<Item>;
  /** A create with files: the form's file parts are named after file properties, `$json` holds the other values (docs/files.md). */
  post(form: FormData, fn?: Callback<Item>): SvcPromise<Item>;
  /** An update with files (a `many` property's files are added to those it keeps). */
  put(id: string, form: FormData, fn?: Callback<Item>): SvcPromise<Item>;
  /** Stores a file in a file property (PUT /<c>/<id>/<property>, or POST with `add`): the updated object. */
  upload(id: string, property: FileKeys<Item>, file: UploadBody, options?: UploadOptions, fn?: Callback<Item>): SvcPromise<Item>;
  /** Removes a property's file (`fileId`) or all its files: the updated object. */
  removeFile(id: string, property: FileKeys<Item>, fileId?: string, fn?: Callback<Item>): SvcPromise<Item>;
  /** The result is always null. */
  del(id: string, fn?: Callback<null>): SvcPromise<null>;
  del(query: Query<Item> & { id: string }, fn?: Callback<null>): SvcPromise<null>;
  exec<R = unknown>(func: Segment, ...args: ExecArgs<R>): SvcPromise<R>;
}

/** svc.<users>: a collection plus login, logout and me. */
export interface UserCollectionAccessor<Item extends { id: string; username: string }, Login extends LoginAnswer = SessionInfo, Rel extends object = NoRelations, Related extends object = NoRelations>
  extends CollectionAccessor<Item, CreateInput<Item> & { password: string }, Rel, Related>,
    AccountCalls,
    MailAccountCalls<Login> {
  /** The session; with two-factor (`auth.mfa`), {@link MfaStep} when the user must give a code. */
  login(credentials: LoginCredentials, fn?: Callback<Login>): SvcPromise<Login>;
  /** The result is always null. */
  logout(fn?: Callback<null>): SvcPromise<null>;
  /** The current user, or null when nobody is logged in; the query (`$fields`, ...) as in get. */
  me(fn?: Callback<Item | null>): SvcPromise<Item | null>;
  me(query: Query<Item>, fn?: Callback<Item | null>): SvcPromise<Item | null>;
}

/** A request for an account mail: the same answer whether or not a user has the address. */
export interface MailRequest {
  email: string;
  /** The mail's language ('de', 'pt-BR'); default: Accept-Language, then the app's default templates. */
  language?: string;
}

/** What a request for an account mail answers (whatever became of it). */
export interface MailRequested {
  requested: true;
}

/** The mail-based account calls of a user collection (docs/accounts.md). */
export interface MailAccountCalls<Login extends LoginAnswer = SessionInfo> {
  /** Mails a single-use reset link to the address, when a user has it. */
  requestPasswordReset(request: MailRequest, fn?: Callback<MailRequested>): SvcPromise<MailRequested>;
  /** Sets a new password with the mailed token; every session of the user ends. Resolves null (204). */
  confirmPasswordReset(reset: { token: string; password: string }, fn?: Callback<null>): SvcPromise<null>;
  /** Mails a new verification link to an address not verified yet. */
  requestVerification(request: MailRequest, fn?: Callback<MailRequested>): SvcPromise<MailRequested>;
  /** Confirms an address (the sign-up's, or a new one asked for by a PUT of `email`). */
  confirmVerification(confirmation: { token: string }, fn?: Callback<{ verified: true; email: string }>): SvcPromise<{ verified: true; email: string }>;
  /** Mails a one-time sign-in code and magic link. */
  requestCode(request: MailRequest, fn?: Callback<MailRequested>): SvcPromise<MailRequested>;
  /** Logs in with the mailed code, or with the magic link's token. */
  loginWithCode(credentials: { email: string; code: string } | { token: string }, fn?: Callback<Login>): SvcPromise<Login>;
}

/** A resource without types: every call, untyped results. */
export interface LooseAccessor extends ResourceAccessor, Listening, MailAccountCalls<LoginAnswer> {
  subscribe<R extends { id: string } = { id: string } & Record<string, unknown>>(query: Record<string, unknown>, handler: LiveHandler<R>, options?: SubscribeOptions): Unsubscribe;
  login(credentials: LoginCredentials, fn?: Callback<LoginAnswer>): SvcPromise<LoginAnswer>;
  loginWithProvider: AccountCalls['loginWithProvider'];
  providerLoginResult: AccountCalls['providerLoginResult'];
  readonly mfa: MfaCalls;
  logout(fn?: Callback<null>): SvcPromise<null>;
  me<R = unknown>(fn?: Callback<R | null>): SvcPromise<R | null>;
  me<R = unknown>(query: Record<string, unknown>, fn?: Callback<R | null>): SvcPromise<R | null>;
  [method: string]: unknown;
}

/** svc.<custom>: the generic calls, namespaced listening and the type's methods. */
export type CustomAccessor<Methods extends string> = ResourceAccessor &
  Listening & { [M in Methods]: <R = unknown>(...args: MethodArgs<R>) => SvcPromise<R> };

/** A custom method: ([path], [query], [body], fn). */
export type MethodArgs<R> = BodyArgs<R>;

/** The accessor type of one resource definition. */
export type AccessorOf<D> =
  D extends UserCollectionDef<infer Item, infer Login, infer Rel, infer Related>
    ? UserCollectionAccessor<Item, Login, Rel, Related>
    : D extends CollectionDef<infer Item, infer Rel, infer Related>
      ? CollectionAccessor<Item, CreateInput<Item>, Rel, Related>
      : D extends CustomDef<infer M>
        ? CustomAccessor<M>
        : LooseAccessor;

/** What every client has beside its resources. */
export interface ClientCore extends Listening {
  /** Any resource by name: `svc('todos')`, `svc('a/b')`, `svc('/')`. */
  (name: string): ResourceAccessor;
  /** Runs `fn` once the realtime socket is connected (at once when it already is). */
  socketReady(fn: () => void): void;
  /** Headers added to every request (dpd.js's `_dpd.ajax.headers`). */
  readonly ajax: { headers: Record<string, string> };
  /** Closes the realtime socket (lets a Node process exit). */
  close(): void;
  /**
   * Sends later calls (and the socket, reconnected when it was open) to another server, as
   * dpd.js's `dpd.setBaseUrl`: 'https://api.example.com' or '' for the page's own origin.
   */
  setBaseUrl(url: string): void;
  /** The local replica: reads answered at once, writes queued while offline (docs/offline.md). */
  readonly offline: OfflineApi;
}

/** A client for an app whose resources `T` describes. */
export type SvcClient<T extends ClientTypes = UntypedClientTypes> = ClientCore & { readonly [K in keyof T['resources']]: AccessorOf<T['resources'][K]> };
