import { CONFLICT_POLICIES, Collection, OutboundPolicy, checkMigrationValue, convertValue, UserCollection, mountResource, parseAuthSettings, sendsMail, validateSettings } from '@svc/core';
import type { BlockedCollection, CollectionEventRunner, CollectionFilesConfig, ConflictPolicy, CollectionOptions, EventScripts, InternalRequest, Logger, OutboundAccess, PropertyDef, PropertyType, Realtime, ReceivedFiles, Reply, ThumbnailQueues, Resource, ResourceType, ScheduledJobs, Store } from '@svc/core';
import { OUTBOUND_DEFAULTS } from './scriptOutbound.js';
import { join, relative, sep } from 'node:path';
import type { AppFolder, ResourceFolder } from './loadApp.js';
import { checkRelationTargets, relationLimits, relationOf } from './relationConfig.js';
import { resolveEnvReferences } from './envReferences.js';
import { COLLECTION_EVENT_FILES, USER_ONLY_EVENT_FILES } from './scripts.js';
import { createAccountMailer } from './accountMail.js';
import { memoryRateCounter } from './rateCounter.js';
import type { RateCounter } from './rateCounter.js';
import { filesConfigOf } from './fileStorage.js';
import { refusingCollection } from './blockedCollection.js';

/** Makes the sandboxed event scripts of a resource folder. */
export interface ScriptFactory {
  /** Event scripts of a custom resource type, for the files it names. */
  forResource(folder: ResourceFolder, events: ReadonlySet<string>): EventScripts;
  /** A Collection's events; undefined when the folder has no event files. */
  forCollection(folder: ResourceFolder): CollectionEventRunner | undefined;
}

const PROPERTY_TYPES = new Set<PropertyType>(['string', 'number', 'boolean', 'object', 'array', 'date', 'relation', 'file']);
const PROPERTY_KEYS = new Set(['type', 'required', 'unique', 'index', 'search', 'private', 'read', 'write', '$renameFrom', '$default', 'collection', 'many', 'onDelete', 'maxSize', 'maxFiles', 'types', 'thumbs']);
/** Written by Deployd's dashboard on every property; svc has no use for them (nor warns about them). */
const DEPLOYD_PROPERTY_KEYS = new Set(['typeLabel', 'id', 'name', 'order']);
/** Written by Deployd's dashboard in a resource's config.json; svc has no use for them (nor warns about them). */
const DEPLOYD_RESOURCE_KEYS = new Set(['typeLabel', 'order', 'path']);
const COLLECTION_KEYS = new Set(['type', 'properties', 'publicCount', 'rules', 'offline']);
const USER_KEYS = new Set([...COLLECTION_KEYS, 'passwordCost', 'auth']);
const COLLECTION_EVENTS = new Set([...COLLECTION_EVENT_FILES].filter((file) => !USER_ONLY_EVENT_FILES.has(file)));

/** What building one resource needs. */
export interface BuildContext {
  app: AppFolder;
  store: Store;
  logger: Logger;
  env: 'development' | 'production';
  /** Installed and explicitly registered resource types, by name. */
  types: ReadonlyMap<string, ResourceType>;
  scripts: ScriptFactory;
  realtime: Realtime;
  /** Internal requests (bound to the server once it exists). */
  request(input: InternalRequest): Promise<Reply>;
  /** Scheduled jobs of this version of the resources. */
  jobs?: ScheduledJobs;
  /** Counters of the account mail limits (shared through Redis with --redis; startApp keeps one per server). Default: one for this build. */
  rateCounter?: RateCounter;
  /** Collections a failed migration keeps from being served (every request answers 503 MIGRATION_FAILED). */
  blocked?: ReadonlyMap<string, BlockedCollection>;
  /** Whether a blocked collection's migrations are applied now (by another process): it is served then. */
  recheckBlocked?(name: string): Promise<boolean>;
  /** Where file properties keep their files (set by buildResources). */
  files?: CollectionFilesConfig;
  /** The server's files being received and not yet published: one per server, kept across reloads. */
  received: ReceivedFiles;
  /** The server's thumbnails being made: one per server, kept across reloads. */
  thumbnailQueues: ThumbnailQueues;
}

/** Creates the resources of an app from their config.json. */
export async function buildResources(context: BuildContext): Promise<Resource[]> {
  const out: Resource[] = [];
  checkRelationTargets(context.app);
  const withFiles = { ...context, files: filesConfigOf(context.app, () => out, context) };
  for (const folder of context.app.resources) out.push(await buildResource(folder, withFiles));
  return out;
}

async function buildResource(folder: ResourceFolder, context: BuildContext): Promise<Resource> {
  switch (folder.config.type) {
    case 'Collection':
      return buildCollection(folder, context);
    case 'UserCollection':
      return buildUserCollection(folder, context);
    default:
      return buildCustom(folder, context);
  }
}

async function buildCustom(folder: ResourceFolder, context: BuildContext): Promise<Resource> {
  const name = folder.path.slice(1);
  const type = context.types.get(folder.config.type);
  if (type === undefined) throw new Error(`resource ${name}: type ${folder.config.type} is not installed; add its package`);
  const events = new Set(type.events ?? []);
  warnUnknown(folder, new Set(['type', ...Object.keys(type.settings ?? {})]), events, context.logger);
  // folder.config keeps the references: the dashboard shows and saves those, never the values.
  const config = resolveEnvReferences(name, folder.config, type.settings);
  const settings = validateSettings<Record<string, unknown>>(name, type.settings, config);
  const impl = await type.create({
    path: folder.path,
    name,
    settings,
    config,
    dir: folder.dir,
    appDir: context.app.dir,
    store: context.store,
    env: context.env,
    logger: context.logger,
    scripts: context.scripts.forResource(folder, events),
    realtime: context.realtime,
    request: context.request,
    ...(context.jobs ? { jobs: context.jobs } : {}),
    outbound: outboundOf(context.app),
  });
  return mountResource(type, folder.path, impl);
}

/** app.json `outbound` as resource types get it (made per app version; the policy is checked at load). */
const outboundAccess = new WeakMap<AppFolder, OutboundAccess>();
function outboundOf(app: AppFolder): OutboundAccess {
  let access = outboundAccess.get(app);
  if (access === undefined) {
    const settings = app.settings.outbound;
    access = {
      policy: new OutboundPolicy(settings?.allow ?? []),
      timeoutMs: settings?.timeoutMs ?? OUTBOUND_DEFAULTS.timeoutMs,
      maxBytes: settings?.maxBytes ?? OUTBOUND_DEFAULTS.maxBytes,
      maxRedirects: settings?.maxRedirects ?? OUTBOUND_DEFAULTS.maxRedirects,
    };
    outboundAccess.set(app, access);
  }
  return access;
}

async function buildCollection(folder: ResourceFolder, context: BuildContext): Promise<Collection> {
  warnUnknown(folder, COLLECTION_KEYS, COLLECTION_EVENTS, context.logger);
  return new Collection(await collectionOptions(folder, context));
}

/** What Collection and UserCollection are both built from. */
async function collectionOptions(folder: ResourceFolder, context: BuildContext): Promise<CollectionOptions> {
  const events = context.scripts.forCollection(folder);
  const properties = readProperties(folder, context.logger);
  const name = folder.path.slice(1);
  const blocked = context.blocked?.get(name);
  const store = blocked ? refusingCollection(name, blocked, context.store.collection(name), context.recheckBlocked) : context.store.collection(name);
  return {
    path: folder.path,
    properties,
    store,
    publicCount: publicCountFor(folder, context.app),
    relations: relationLimits(context.app),
    ...(events ? { events } : {}),
    // Access rules are checked by the Collection against its properties and the users' (`@me.*`).
    ...(folder.config.rules !== undefined ? { rules: folder.config.rules } : {}),
    configFile: relative(context.app.dir, join(folder.dir, 'config.json')).split(sep).join('/'),
    meProperties: userProperties(context.app),
    ...(context.files ? { files: context.files } : {}),
    ...conflictsOf(folder),
  };
}

/** config.json `offline: {conflicts}`: how offline clients settle conflicts (docs/offline.md). */
function conflictsOf(folder: ResourceFolder): { conflicts?: ConflictPolicy } {
  const offline = (folder.config as { offline?: unknown }).offline;
  if (offline === undefined) return {};
  const conflicts = typeof offline === 'object' && offline !== null ? (offline as { conflicts?: unknown }).conflicts : undefined;
  if (!CONFLICT_POLICIES.includes(conflicts as ConflictPolicy)) {
    throw new Error(`${folder.path}/config.json: offline.conflicts must be one of ${CONFLICT_POLICIES.map((p) => `"${p}"`).join(', ')}`);
  }
  return { conflicts: conflicts as ConflictPolicy };
}

async function buildUserCollection(folder: ResourceFolder, context: BuildContext): Promise<UserCollection> {
  warnUnknown(folder, USER_KEYS, COLLECTION_EVENT_FILES, context.logger);
  const settings = context.app.settings;
  const cost = folder.config.passwordCost ?? settings.passwordCost;
  const options = await collectionOptions(folder, context);
  const name = folder.path.slice(1);
  // One reading of config.json's auth for the collection and its mailer; secrets (client secrets,
  // the SMTP password) come from the environment: ${env:NAME}.
  const resolveReferences = (auth: unknown) => resolveEnvReferences(name, { type: folder.config.type, auth }, undefined).auth;
  const auth = parseAuthSettings(name, folder.config.auth, new Set(Object.keys(options.properties)), resolveReferences);
  const mailer = sendsMail(auth.flows) ? await createAccountMailer({ folder, mail: auth.mail, app: context.app, env: context.env, logger: context.logger, counter: context.rateCounter ?? memoryRateCounter() }) : undefined;
  return new UserCollection({
    ...options,
    ...(folder.config.auth !== undefined ? { auth, authStore: context.store.collection('_auth') } : {}),
    ...(mailer ? { accounts: { policy: auth.flows, mailer, tokens: context.store.collection('_accounts') } } : {}),
    ...(typeof cost === 'number' ? { passwordCost: cost } : {}),
    ...(settings.loginRateLimit !== undefined ? { loginRateLimit: settings.loginRateLimit } : {}),
  });
}

/** Validates a Collection's properties: a wrong type stops start-up, naming resource and property. */
export function readProperties(folder: ResourceFolder, logger: Logger): Record<string, PropertyDef> {
  const raw = folder.config.properties ?? {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`resource ${folder.path.slice(1)}: "properties" must be an object`);
  const out: Record<string, PropertyDef> = {};
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (name === 'id' || name.startsWith('$') || name.includes('.')) throw new Error(`resource ${folder.path.slice(1)}: property name "${name}" is not allowed`);
    const def = value as Record<string, unknown> | null;
    const type = def?.type;
    if (typeof type !== 'string' || !PROPERTY_TYPES.has(type as PropertyType)) {
      throw new Error(`resource ${folder.path.slice(1)}: property ${name} has type ${String(type)}; use string, number, boolean, object, array, date, relation or file`);
    }
    const unknown = Object.keys(def as object).filter((k) => !PROPERTY_KEYS.has(k) && !DEPLOYD_PROPERTY_KEYS.has(k));
    if (unknown.length > 0) logger.warn(`resource ${folder.path.slice(1)}: property ${name}: ignoring ${unknown.join(', ')}`);
    checkDefaultHint(folder, name, type as PropertyType, (def as Record<string, unknown>).$default);
    out[name] = {
      type: type as PropertyType,
      required: (def as Record<string, unknown>).required === true,
      unique: (def as Record<string, unknown>).unique === true,
      index: (def as Record<string, unknown>).index === true,
      ...searchOf(folder, name, type as PropertyType, def as Record<string, unknown>),
      ...((def as Record<string, unknown>).private === true ? { private: true } : {}),
      ...ruleOf(def as Record<string, unknown>, 'read'),
      ...ruleOf(def as Record<string, unknown>, 'write'),
      ...(type === 'relation' ? relationOf(folder, name, def as Record<string, unknown>) : {}),
      ...(type === 'file' ? fileOptionsOf(def as Record<string, unknown>) : {}),
    };
  }
  return out;
}

/** `search: true` on a string or array property (full-text search, docs/search.md). */
function searchOf(folder: ResourceFolder, name: string, type: PropertyType, def: Record<string, unknown>): Partial<PropertyDef> {
  if (def.search === undefined || def.search === false) return {};
  if (def.search !== true) throw new Error(`resource ${folder.path.slice(1)}: property ${name}: "search" must be true or false`);
  if (type !== 'string' && type !== 'array') throw new Error(`resource ${folder.path.slice(1)}: property ${name}: only a string or array property can be searchable ("search": true)`);
  return { search: true };
}

/**
 * `$default` (what the stored objects without a value get, through a migration file): a value of
 * the property's type that a store can hold. Refused before a migration file is written with it.
 */
function checkDefaultHint(folder: ResourceFolder, name: string, type: PropertyType, value: unknown): void {
  if (value === undefined || value === null) return;
  const where = `resource ${folder.path.slice(1)}: property ${name}: "$default"`;
  // A file is uploaded, never given as a value (and migrations do not move files).
  if (type === 'file') throw new Error(`${where}: a file property takes no default`);
  if (convertValue(value, type).kind !== 'same') throw new Error(`${where} must be a value of type ${type}`);
  checkMigrationValue(value, where);
}

/** A file property's settings as written (the Collection checks them: files/fileSettings.ts). */
function fileOptionsOf(def: Record<string, unknown>): Partial<PropertyDef> {
  const out: Partial<PropertyDef> = {};
  if (def.many !== undefined) out.many = def.many as boolean;
  for (const key of ['maxSize', 'maxFiles', 'types', 'thumbs'] as const) if (def[key] !== undefined) (out as Record<string, unknown>)[key] = def[key];
  return out;
}

/** A property's `read` or `write` rule as written (the Collection checks it). */
function ruleOf(def: Record<string, unknown>, key: 'read' | 'write'): Partial<PropertyDef> {
  const rule = def[key];
  return rule === undefined ? {} : { [key]: rule as PropertyDef['read'] };
}

/**
 * The properties of the app's user collections (what `@me.<prop>` may name in a rule); a name
 * with different types in two collections is untyped.
 */
function userProperties(app: AppFolder): Record<string, PropertyDef> {
  const out: Record<string, PropertyDef> = {};
  for (const folder of app.resources) {
    if (folder.config.type !== 'UserCollection' || !isRecord(folder.config.properties)) continue;
    for (const [name, def] of Object.entries(folder.config.properties)) {
      const type = isRecord(def) ? def.type : undefined;
      if (name === 'password' || typeof type !== 'string' || !PROPERTY_TYPES.has(type as PropertyType)) continue;
      const seen = out[name];
      out[name] = seen === undefined || seen.type === type ? { type: type as PropertyType } : { type: 'object' };
    }
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reports config keys and event files the resource type does not know (Deployd leftovers). */
export function warnUnknown(folder: ResourceFolder, keys: ReadonlySet<string>, events: ReadonlySet<string>, logger: Logger): void {
  const unknownKeys = Object.keys(folder.config).filter((k) => !keys.has(k) && !DEPLOYD_RESOURCE_KEYS.has(k));
  if (unknownKeys.length > 0) logger.warn(`resource ${folder.path.slice(1)}: ignoring config keys ${unknownKeys.join(', ')}`);
  const unknownFiles = [...folder.scripts.keys()].filter((f) => !events.has(f));
  if (unknownFiles.length > 0) logger.warn(`resource ${folder.path.slice(1)}: ignoring files ${unknownFiles.join(', ')}`);
}

function publicCountFor(folder: ResourceFolder, app: AppFolder): boolean {
  if (folder.config.publicCount === true) return true;
  const setting = app.settings.publicCount;
  if (setting === true) return true;
  return Array.isArray(setting) && setting.includes(folder.path.slice(1));
}
