import { createRequestScope, isUserResource } from '@svc/core';
import type { Collection, Context, Doc, Resource } from '@svc/core';
import type { DeliveryRecord } from './outbox.js';
import type { Principal } from './settings.js';

/** The JSON body of one delivery. */
export interface WebhookPayload {
  /** The event's id: the same at every attempt (receivers drop repeats by it). */
  id: string;
  /** The webhook resource's name. */
  webhook: string;
  /** The collection written. */
  collection: string;
  event: 'create' | 'update' | 'delete';
  /** When the write was stored (ISO 8601). */
  at: string;
  /** The object after the write (before it, for a delete), as the principal may read it. */
  object: Record<string, unknown>;
  /** An update's object before it, as the principal may read it; absent when the principal could not. */
  previous?: Record<string, unknown>;
}

/** A payload, or why there is none. */
export type Shown = { payload: WebhookPayload } | { skipped: string };

/** What {@link showPayload} needs. */
export interface PayloadSource {
  webhook: string;
  collection: Collection;
  principal: Principal;
  /** The app's resource at a path (the user collection of a user principal). */
  resourceAt(path: string): Resource | undefined;
}

/**
 * A caller as a GET of theirs would carry it, for the principal: anonymous (no session), root,
 * or a user (their object loaded now: rules reading `@me` see their current roles). Undefined
 * when the user no longer exists.
 */
export async function principalContext(source: Pick<PayloadSource, 'webhook' | 'principal' | 'resourceAt'>): Promise<Context | undefined> {
  const principal = source.principal;
  let me: Doc | undefined;
  let session: Context['session'] = { id: '', isNew: true };
  if (principal.kind === 'user') {
    const users = source.resourceAt(`/${principal.users}`);
    if (users === undefined || !isUserResource(users)) return undefined;
    const user = await users.findUser(principal.id);
    if (user === null) return undefined;
    me = user as Doc;
    session = { id: '', uid: principal.id, path: `/${principal.users}`, isNew: true };
  }
  return {
    method: 'GET',
    originalMethod: 'GET',
    url: '/',
    parts: [],
    query: {},
    body: undefined,
    bodyKind: 'none',
    headers: {},
    session,
    me,
    isRoot: principal.kind === 'root',
    internal: false,
    // As realtime shows objects: On Get runs as for a GET, but cannot emit.
    showing: true,
    scope: createRequestScope(`webhook:${source.webhook}`),
  };
}

/**
 * The payload of a record: its object (and an update's previous one) shown through the
 * collection's own read path for the principal (`Collection.showTo`: the read rule, On Get,
 * private properties, property read rules), exactly as a GET by the principal would show them.
 * An object the principal may not read (or On Get cancelled) gives no payload: the record is
 * skipped, and nothing of the object leaves the server.
 */
export async function showPayload(source: PayloadSource, record: DeliveryRecord): Promise<Shown> {
  const object = record.object;
  if (object === undefined) return { skipped: 'the stored object is missing from the record' };
  const ctx = await principalContext(source);
  if (ctx === undefined) return { skipped: source.principal.kind === 'user' ? `user ${source.principal.id} of ${source.principal.users} no longer exists` : 'no principal' };
  const docs = record.previous !== undefined ? [object, record.previous] : [object];
  const [shown, was] = await source.collection.showTo(ctx, docs);
  if (shown === null || shown === undefined) return { skipped: `the object is not one ${describePrincipal(source.principal)} may read` };
  const payload: WebhookPayload = {
    id: record.id,
    webhook: source.webhook,
    collection: source.collection.path.slice(1),
    event: record.event,
    at: new Date(record.createdAt).toISOString(),
    object: shown,
    ...(was !== null && was !== undefined ? { previous: was } : {}),
  };
  return { payload };
}

/** "anonymous", "root", "user u1 of users": for messages. */
export function describePrincipal(principal: Principal): string {
  return principal.kind === 'user' ? `user ${principal.id} of ${principal.users}` : principal.kind;
}
