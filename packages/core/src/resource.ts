import type { IncomingMessage } from 'node:http';
import type { FileStorage } from './files/FileStorage.js';
import type { LoginLimitsFactory } from './resources/loginLimiter.js';
import type { Logger } from './logger.js';
import type { SessionManager } from './sessions.js';
import type { Context, Reply } from './types.js';

/** What the server gives resources at init: shared services, never the server's internals. */
export interface ResourceHost {
  readonly env: 'development' | 'production';
  readonly logger: Logger;
  readonly sessions: SessionManager;
  /** The Set-Cookie value that sets (id) or clears (null) the sid cookie for this request. */
  sessionCookie(id: string | null, ctx: Context): string;
  /** Tells listeners (realtime rooms) that a session's user changed: login (uid) or logout (undefined). */
  sessionChanged(sessionId: string, uid: string | undefined, previousSessionId?: string): void;
  /** Login limits shared by the server's processes (Redis); absent: each UserCollection counts in memory. */
  readonly loginLimits?: LoginLimitsFactory | undefined;
  /** The app's resource at a path ('/users'), as the server currently serves it (relations, live queries). */
  resourceAt?(path: string): Resource | undefined;
  /** The app's resources as the server currently serves them (relations: who points at whom). */
  resources?(): readonly Resource[];
  /**
   * false: resources answer every request by their plain path, none of their shortcuts (answers
   * from kept texts, kept answers, answers at once): the server option and app.json `fastPaths`.
   * Answers are the same either way (the differential suite proves it); only the cost differs.
   */
  readonly fastPaths?: boolean;
}

/** What the server tells {@link Resource.answerNow} of a request, and where the resource says how it answered. */
export interface NowRequest {
  /**
   * The request is a GET or HEAD without query string, body or root key, from a returning
   * anonymous visitor (a signed session id): the only kind a resource may answer without a context.
   */
  readonly plainAnonymous: boolean;
  /** Set by the resource when it answers: which way (a Collection's AnswerPlan), for the access log and metrics. */
  plan: string | undefined;
}

/** The methods a resource offers the client library (svc.<r>.get, .login, ...). */
export interface ClientShape {
  /** Collection shorthands: get/post/put/del on ids and objects. */
  collection?: boolean;
  /** User collection extras: login, logout, me. */
  users?: boolean;
  /** Extra RPC-style methods: name -> HTTP method and func segment. */
  methods?: Record<string, { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; func: string }>;
  /** How offline clients settle a write the object moved under (config.json `offline.conflicts`, docs/offline.md). */
  conflicts?: ConflictPolicy;
}

/** A collection's declared conflict policy for offline writes (docs/offline.md). */
export type ConflictPolicy = 'server-wins' | 'last-writer-wins' | 'app';

/** The policies config.json may name. */
export const CONFLICT_POLICIES: readonly ConflictPolicy[] = ['server-wins', 'last-writer-wins', 'app'];

/** A resource mounted at a path: what the router hands requests to. */
export interface Resource {
  /** Its path, '/todos' or '/a/b'. */
  readonly path: string;
  /** Its type's name, 'Collection', 'Event', ... */
  readonly type: string;
  /** Answers one request; undefined when the resource wrote to `ctx.res` itself (streaming). */
  handle(ctx: Context): Promise<Reply | undefined>;
  /**
   * Optional, for speed: the JSON text answering a GET at once, when the resource can give it with
   * no script to run and nothing to wait for; undefined sends the request through `handle` as
   * usual. It must answer exactly what `handle` would (a collection's object by id from the
   * embedded store). The server asks it of every request to the resource, telling what it knows of
   * the HTTP request; the resource sets `request.plan` when it answers.
   */
  answerNow?(parts: readonly string[], request: NowRequest): string | undefined;
  /** The client library's view of it. */
  readonly client?: ClientShape;
  /**
   * When true the server leaves the request body unread (no JSON parsing, no size limit, no
   * `_method` from the body) so the resource can stream it from `ctx.req`.
   */
  readonly rawBody?: boolean;
  /** Per request: true leaves this request's body unread, as `rawBody` does (a Collection's file uploads). */
  streamsBody?(req: IncomingMessage, parts: readonly string[]): boolean;
  /** Runs once before the server accepts requests (indexes, connections). */
  init?(host: ResourceHost): Promise<void>;
  /** Runs at shutdown. */
  close?(): Promise<void>;
  /** Optional: the files it keeps (a Bucket's), for svc's own use: app.json backups.bucket. */
  readonly files?: ResourceFiles;
  /** Optional: a place for file properties' files (a Bucket's bucket): app.json files.bucket. */
  readonly fileStorage?: FileStorage;
  /**
   * Optional: what the dashboard's root-only API answers under
   * `/dashboard/api/resources/<name>/-/<parts...>` (a webhook's deliveries). The dashboard has
   * checked the caller (root, its own page) before calling it.
   */
  rootApi?(request: RootApiRequest): Promise<Reply>;
}

/** A request of the dashboard's root-only API to a resource ({@link Resource.rootApi}). */
export interface RootApiRequest {
  method: string;
  /** The path below `/-/`, split on '/': `['deliveries', '<id>', 'retry']`. */
  parts: readonly string[];
  query: Record<string, unknown>;
  /** The JSON body (an object; `{}` when none). */
  body: Record<string, unknown>;
}

/** Files a resource keeps under keys ('backups/x.jsonl'), as svc itself uses them. */
export interface ResourceFiles {
  /** Stores the local file under `key` (replacing an object there). */
  put(key: string, file: string): Promise<void>;
  /** The keys starting with `prefix`. */
  list(prefix: string): Promise<string[]>;
  remove(key: string): Promise<void>;
}

/** A resource whose objects are users: the session's `me` comes from it. */
export interface UserResource extends Resource {
  /** The user as scripts and /me see it (no password), or null. */
  findUser(uid: string): Promise<Record<string, unknown> | null>;
  /** Ids of the users matching a query (realtime's user-targeted emits); password never filters. */
  findUserIds(query: Record<string, unknown>): Promise<string[]>;
}

/** True when the resource can answer for a session's user. */
export function isUserResource(resource: Resource): resource is UserResource {
  return typeof (resource as Partial<UserResource>).findUser === 'function';
}
