import type { FileStorage } from './files/FileStorage.js';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SvcError } from './errors.js';
import type { Logger } from './logger.js';
import type { ClientShape, Resource, ResourceFiles, ResourceHost, RootApiRequest } from './resource.js';
import type { OutboundPolicy } from './net/outboundPolicy.js';
import type { Store } from './store/Store.js';
import type { Context, Reply, ResourceConfig } from './types.js';
import type { Realtime } from './realtime.js';
import type { InternalRequest } from './serverTypes.js';

/** The type of one setting in a resource type's settings schema. */
export type SettingType = 'string' | 'number' | 'boolean' | 'object' | 'array';

/** One setting of a resource type (drives validation at start and the dashboard's Config page). */
export interface SettingSpec {
  type: SettingType;
  required?: boolean;
  default?: unknown;
  description?: string;
  /** Allowed values, for strings and numbers. */
  enum?: readonly (string | number)[];
}

/** A resource type's settings: name -> spec. */
export type SettingsSchema = Record<string, SettingSpec>;

/** What one event script run did (cancel() and error() reject instead, with an SvcError). */
export interface ScriptOutcome {
  /** `this` after the run. */
  object: Record<string, unknown>;
  hidden: readonly string[];
  protectedProps: readonly string[];
  /** What setResult() set, when it was called. */
  result?: unknown;
  resultSet: boolean;
}

/** Input of one event script run. */
export interface ScriptRunInput {
  /** `this`; `{}` for resources with no domain. */
  object?: Record<string, unknown>;
  /** Extra names for the script (url, parts, fileSize, fileName, previous, ...). */
  locals?: Record<string, unknown>;
}

/** The event scripts of one resource, run in the sandbox. */
export interface EventScripts {
  has(event: string): boolean;
  run(event: string, ctx: Context, input?: ScriptRunInput): Promise<ScriptOutcome>;
}

/**
 * What the server offers resources that run jobs on a schedule (the Event type's `schedule`): a
 * way to make each run once across the app's processes, and the moment to stop.
 */
export interface ScheduledJobs {
  /**
   * Who shares the claims: 'redis' every process of the app on the same Redis (--redis); 'process'
   * this process only, the app's only one (the embedded store); 'each' this process only while
   * other processes may serve the same app (--db without --redis): each of them runs the jobs.
   */
  readonly scope: 'redis' | 'process' | 'each';
  /** Wall time a request's scripts may take (app.json scripts.requestWallMs): a run lasts no longer. */
  readonly runWallMs: number;
  /** Resolves once the server answers internal requests: no run starts before. */
  readonly ready: Promise<void>;
  /** Aborted when these resources are replaced (a reload) or the app stops: timers stop then. */
  readonly signal: AbortSignal;
  /**
   * True for the first caller, among those sharing the claims, to claim `key`; the claim lasts
   * `ttlMs` or until released. False too when the claim cannot be checked (Redis unreachable): a
   * run is better skipped than made twice.
   */
  claim(key: string, ttlMs: number): Promise<boolean>;
  /** Ends a claim this process holds (nothing when it holds none). */
  release(key: string): Promise<void>;
}

/**
 * How a resource may call out over HTTP (app.json `outbound`): through `outboundFetch` with this
 * policy and within these limits, unless the resource has stricter ones of its own.
 */
export interface OutboundAccess {
  /** The addresses beyond the public Internet that app.json `outbound.allow` opens. */
  readonly policy: OutboundPolicy;
  /** Time for one call, redirects and the whole answer included, ms. */
  readonly timeoutMs: number;
  /** Largest answer body, bytes. */
  readonly maxBytes: number;
  /** Redirects followed at most. */
  readonly maxRedirects: number;
}

/** What a resource type's `create` receives for one resource. */
export interface ResourceTypeContext<S> {
  /** '/mail', '/a/b'. */
  path: string;
  /** The folder name path without the leading slash: 'mail', 'a/b'. */
  name: string;
  /** Settings from config.json, validated against the schema, defaults applied. */
  settings: S;
  /** The whole config.json. */
  config: ResourceConfig;
  /** The resource's folder. */
  dir: string;
  /** The app's folder. */
  appDir: string;
  store: Store;
  env: 'development' | 'production';
  logger: Logger;
  /** The resource's event scripts (from the files named in `events`). */
  scripts: EventScripts;
  realtime: Realtime;
  /** Sends an internal request through the app's resources (as scripts do). */
  request(input: InternalRequest): Promise<Reply>;
  /** Scheduled jobs (absent when the host runs none: contexts made by hand, other hosts). */
  jobs?: ScheduledJobs;
  /**
   * app.json `outbound`: the policy and limits of requests to the outside (absent from contexts
   * made by hand: a type then refuses every private address, as an empty allow list does).
   */
  outbound?: OutboundAccess;
}

/** What a resource type creates for one resource: a request handler and optional hooks. */
export interface ResourceImplementation {
  handle(ctx: Context): Promise<Reply | undefined>;
  /** Leave request bodies unread so `handle` can stream `ctx.req` (uploads). */
  rawBody?: boolean;
  init?(host: ResourceHost): Promise<void>;
  close?(): Promise<void>;
  /** See Resource.files. */
  files?: ResourceFiles;
  /** See Resource.rootApi: the dashboard's root-only requests for this resource. */
  rootApi?(request: RootApiRequest): Promise<Reply>;
  /** See Resource.fileStorage. */
  fileStorage?: FileStorage;
}

/** A resource type: the public contract of every type package. */
export interface ResourceTypeDefinition<S = Record<string, unknown>> {
  /** The name config.json's `type` uses: 'Email', 'Bucket', ... */
  name: string;
  /** The @svc/core versions the type works with, as a semver range ('^0.1.0'); checked at load. */
  core?: string;
  settings?: SettingsSchema;
  /** Event script file names the type loads ('get.js', 'post.js'); others are warned about. */
  events?: readonly string[];
  /** The client library's view of resources of this type. */
  client?: ClientShape;
  /** Dashboard hints (labels, which events to show); free-form. */
  dashboard?: Record<string, unknown>;
  create(context: ResourceTypeContext<S>): ResourceImplementation | Promise<ResourceImplementation>;
}

/**
 * A resource type of any settings shape, for lists of types (`startApp({resourceTypes})`): a
 * type's settings are its own business once it is registered.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyResourceType = ResourceType<any>;

/** A checked resource type, as the server registers it. */
export interface ResourceType<S = Record<string, unknown>> extends ResourceTypeDefinition<S> {
  readonly kind: 'svc.resourceType';
}

/**
 * Declares a resource type. Type packages default-export the result; the server loads it from the
 * app's dependencies and checks `core` against its own version.
 */
export function defineResourceType<S = Record<string, unknown>>(definition: ResourceTypeDefinition<S>): ResourceType<S> {
  if (!/^[A-Za-z][A-Za-z0-9]*$/.test(definition.name)) throw new Error(`resource type name "${definition.name}" must be letters and digits`);
  if (typeof definition.create !== 'function') throw new Error(`resource type ${definition.name}: create() is missing`);
  return { ...definition, kind: 'svc.resourceType' };
}

/**
 * The `@svc/core` range a type package supports, read from its own package.json's
 * peerDependencies, so that the range the server checks is the one the package manager (and a
 * release's version bump) sees. Call it with the type module's `import.meta.url`; the package.json
 * is looked up in the module's folder and the ones above it.
 *
 * @example
 * export default defineResourceType({ name: 'Greeting', core: coreRangeOf(import.meta.url), ... });
 */
export function coreRangeOf(moduleUrl: string): string {
  let dir = dirname(fileURLToPath(moduleUrl));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; peerDependencies?: Record<string, string> };
      const range = pkg.peerDependencies?.['@svc/core'];
      if (typeof range !== 'string') throw new Error(`${file}: peerDependencies["@svc/core"] is missing; a resource type package declares the @svc/core it supports there`);
      return range;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(moduleUrl)}`);
    dir = parent;
  }
}

/** True for a value made by {@link defineResourceType}. */
export function isResourceType(value: unknown): value is ResourceType {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'svc.resourceType';
}

/**
 * Validates a resource's settings against its type's schema and applies defaults; a wrong value
 * throws an Error naming the resource and the failing field.
 */
export function validateSettings<S>(resource: string, schema: SettingsSchema | undefined, config: ResourceConfig): S {
  const out: Record<string, unknown> = {};
  for (const [field, spec] of Object.entries(schema ?? {})) {
    let value = config[field];
    if (value === undefined || value === null || value === '') value = spec.default;
    if (value === undefined) {
      if (spec.required) throw new Error(`resource ${resource}: setting ${field} is required (${spec.type})`);
      continue;
    }
    if (!hasType(value, spec.type)) throw new Error(`resource ${resource}: setting ${field} must be a ${spec.type}, not ${JSON.stringify(value)}`);
    if (spec.enum && !spec.enum.includes(value as string | number)) throw new Error(`resource ${resource}: setting ${field} must be one of ${spec.enum.join(', ')}`);
    out[field] = value;
  }
  return out as S;
}

function hasType(value: unknown, type: SettingType): boolean {
  switch (type) {
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    default:
      return typeof value === type;
  }
}

/** Wraps a type's implementation as a mounted resource. */
export function mountResource(type: ResourceType<never> | ResourceType, path: string, impl: ResourceImplementation): Resource {
  const resource: Resource = {
    path,
    type: type.name,
    handle: (ctx) => impl.handle(ctx),
    ...(type.client ? { client: type.client } : {}),
    ...(impl.rawBody ? { rawBody: true } : {}),
    ...(impl.init ? { init: (host: ResourceHost) => (impl.init as (h: ResourceHost) => Promise<void>)(host) } : {}),
    ...(impl.close ? { close: () => (impl.close as () => Promise<void>)() } : {}),
    ...(impl.files ? { files: impl.files } : {}),
    ...(impl.rootApi ? { rootApi: (request: RootApiRequest) => (impl.rootApi as (r: RootApiRequest) => Promise<Reply>)(request) } : {}),
    ...(impl.fileStorage ? { fileStorage: impl.fileStorage } : {}),
  };
  return resource;
}

/** The error a script's cancel() becomes. */
export function cancelError(message: string, status = 400): SvcError {
  return new SvcError('CANCELLED', message, { status });
}
