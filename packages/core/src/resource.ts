import type { Context, Reply } from './types.js';

/** The methods a resource offers the client library (svc.<r>.get, .login, ...). */
export interface ClientShape {
  /** Collection shorthands: get/post/put/del on ids and objects. */
  collection?: boolean;
  /** User collection extras: login, logout, me. */
  users?: boolean;
  /** Extra RPC-style methods: name -> HTTP method and func segment. */
  methods?: Record<string, { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; func: string }>;
}

/** A resource mounted at a path: what the router hands requests to. */
export interface Resource {
  /** Its path, '/todos' or '/a/b'. */
  readonly path: string;
  /** Its type's name, 'Collection', 'Event', ... */
  readonly type: string;
  /** Answers one request; undefined when the resource wrote to `ctx.res` itself (streaming). */
  handle(ctx: Context): Promise<Reply | undefined>;
  /** The client library's view of it. */
  readonly client?: ClientShape;
  /** Runs once before the server accepts requests (indexes, connections). */
  init?(): Promise<void>;
  /** Runs at shutdown. */
  close?(): Promise<void>;
}

/** A resource whose objects are users: the session's `me` comes from it. */
export interface UserResource extends Resource {
  /** The user as scripts and /me see it (no password), or null. */
  findUser(uid: string): Promise<Record<string, unknown> | null>;
}

/** True when the resource can answer for a session's user. */
export function isUserResource(resource: Resource): resource is UserResource {
  return typeof (resource as Partial<UserResource>).findUser === 'function';
}
