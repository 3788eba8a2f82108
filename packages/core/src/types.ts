import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { RequestScope } from './requestScope.js';
import type { RuleSource } from './access/ruleTypes.js';
import type { Doc } from './store/Store.js';

/** The property types a Collection knows. `date` is Deployd's, accepted for old apps. */
export type PropertyType = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'date' | 'relation' | 'file';

/** What deleting an object does to the objects whose relation points at it. */
export type OnDelete = 'restrict' | 'setNull' | 'cascade';

/** One property of a Collection's config.json. */
export interface PropertyDef {
  type: PropertyType;
  required?: boolean;
  /** A unique index in the store. */
  unique?: boolean;
  /** A non-unique index in the store. */
  index?: boolean;
  /**
   * Searchable by `$search` (a string, or an array of strings): a full-text index in the store
   * (FTS5 on the embedded engine, a text index on MongoDB). See docs/search.md.
   */
  search?: boolean;
  /**
   * Readable, filterable and sortable only by root and by event scripts (as `password` is):
   * answers to other requests leave it out and their queries cannot test it. Writable as usual.
   */
  private?: boolean;
  /** `relation`: the path of the collection the ids point into ('/users'). */
  collection?: string;
  /** `relation`: an array of ids rather than one id; `file`: a list of files rather than one. */
  many?: boolean;
  /** `relation`: what deleting the pointed-at object does (default restrict). */
  onDelete?: OnDelete;
  /**
   * Who may read the property (access rules, docs/access-rules.md): `true`, `false` or a rule
   * evaluated per object; a filter or sort on it by a caller it does not allow everywhere is refused.
   */
  read?: RuleSource;
  /** Who may set or change the property: `true`, `false` or a rule (with `@new`/`@old`). */
  write?: RuleSource;
  /** `file`: bytes one file may hold (default 10 MB; docs/files.md). */
  maxSize?: number;
  /** `file` with `many`: how many files the property may hold (default 20). */
  maxFiles?: number;
  /** `file`: the types allowed, as sniffed from the bytes (`image/png`, `image/*`). */
  types?: string[];
  /** `file`: the thumbnail sizes served on request (`"100x100"`, `"400x0"`); any other is refused. */
  thumbs?: string[];
}

/** A resource's config.json: its type plus type-specific settings. */
export interface ResourceConfig {
  type: string;
  properties?: Record<string, PropertyDef>;
  [setting: string]: unknown;
}

/** The session of a request. */
export interface Session {
  readonly id: string;
  /** Id of the logged-in user, when one is. */
  uid?: string | undefined;
  /** Path of the user's User Collection, when logged in. */
  path?: string | undefined;
  /** False for a session made for this request and not yet stored. */
  readonly isNew: boolean;
}

/** An answer of a resource: the status, a JSON-able body (or none) and extra headers. */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string | string[]>;
  /**
   * Which way a Collection answered a GET (its AnswerPlan: `objects`, `storedText`, ...), for the
   * access log and /metrics; a fixed set of values. Absent for anything else.
   */
  plan?: string;
}

/**
 * One request as a resource sees it, from HTTP or from a script's internal call. Data only,
 * plus the raw req/res for resources that stream (absent on internal calls).
 */
export interface Context {
  /** The method after method override. */
  method: string;
  /** The method the client sent. */
  originalMethod: string;
  /** The request path within the resource, starting with '/' ('/' for the resource itself). */
  url: string;
  /** `url` split on '/', empty segments removed. */
  parts: string[];
  /** The query string object (plain or JSON form). */
  query: Record<string, unknown>;
  /** The parsed request body (undefined when there is none). */
  body: unknown;
  /** How the body arrived: a form's values are all strings. */
  bodyKind: 'json' | 'form' | 'none';
  headers: IncomingHttpHeaders;
  session: Session;
  /** The logged-in user; undefined when nobody is. */
  me: Doc | undefined;
  isRoot: boolean;
  /** True when a script sent the request. */
  internal: boolean;
  /**
   * True while realtime shows objects to a socket's caller (live queries, emits of objects): the
   * On Get scripts it runs cannot emit (an emit there would be shown again, without end).
   */
  showing?: boolean;
  /**
   * Shared by the request and every internal call it causes: recursion counts, the client, whether
   * it is still there, the scripts' budget.
   */
  scope: RequestScope;
  /**
   * Who reads, when that outlives this context: a live query's contexts (one per event) carry
   * their subscription's, so that its read scope is made once (Visibility.scope). Absent: the
   * context itself (one per request). A scope kept for a reader serves only the caller it was
   * made for (ReadScope.isFor).
   */
  reader?: object;
  /** The raw request: absent on internal calls. */
  req?: IncomingMessage;
  /** The raw response: absent on internal calls. */
  res?: ServerResponse;
}
