import { isPlainObject } from '@svc/core';
import type { OutboundAccess, SettingsSchema } from '@svc/core';

/** The writes a webhook can be told of. */
export type WebhookEvent = 'create' | 'update' | 'delete';

const EVENTS: readonly WebhookEvent[] = ['create', 'update', 'delete'];

/** config.json of a Webhook, as the schema checks it (see {@link WEBHOOK_SETTINGS}). */
export type WebhookSettings = {
  collection: string;
  url: string;
  secret: string;
  events?: unknown[];
  query?: Record<string, unknown>;
  as: string;
  users: string;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  timeoutMs?: number;
  concurrency: number;
  keepDelivered: number;
  keepDead: number;
};

/** The settings schema: validated at start, and the dashboard's Config page. */
export const WEBHOOK_SETTINGS: SettingsSchema = {
  collection: { type: 'string', required: true, description: 'The collection whose writes are sent (its name: "todos")' },
  url: { type: 'string', required: true, description: 'Where deliveries are POSTed (http: or https:)' },
  secret: { type: 'string', required: true, description: 'The HMAC key deliveries are signed with; write it as ${env:NAME}' },
  events: { type: 'array', description: 'Which writes are sent: any of "create", "update", "delete" (default all three)' },
  query: { type: 'object', description: 'Only objects matching this query (svc query language, as in GET /<collection>?...)' },
  as: { type: 'string', default: 'anonymous', description: 'Whose read rules the objects pass through: "anonymous", "root" or a user id' },
  users: { type: 'string', default: 'users', description: 'The user collection of "as" when it is a user id' },
  maxAttempts: { type: 'number', default: 12, description: 'Attempts before a delivery goes to the dead letters' },
  retryBaseMs: { type: 'number', default: 10_000, description: 'Wait before the first retry, ms; doubled at each retry (with jitter)' },
  retryMaxMs: { type: 'number', default: 3_600_000, description: 'Longest wait between two attempts, ms' },
  timeoutMs: { type: 'number', description: 'Time for one attempt, ms (default app.json outbound.timeoutMs, 10 s)' },
  concurrency: { type: 'number', default: 16, description: 'Deliveries waiting for the receiver at once' },
  keepDelivered: { type: 'number', default: 1000, description: 'Delivered (and skipped) deliveries kept for the dashboard' },
  keepDead: { type: 'number', default: 10_000, description: 'Dead letters kept (the oldest go past this)' },
};

/** The settings checked beyond the schema: what the deliverer runs on. */
export interface WebhookConfig {
  collection: string;
  url: URL;
  secret: string;
  events: ReadonlySet<WebhookEvent>;
  query: Record<string, unknown> | undefined;
  principal: Principal;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  timeoutMs: number;
  concurrency: number;
  keepDelivered: number;
  keepDead: number;
  /** Answer bytes kept as the response excerpt. */
  excerptBytes: number;
  maxRedirects: number;
}

/** Whose read rules a delivery's objects pass through. */
export type Principal = { kind: 'anonymous' } | { kind: 'root' } | { kind: 'user'; id: string; users: string };

/** Bytes of a receiver's answer kept for the dashboard. */
export const EXCERPT_BYTES = 1024;
/** Shortest secret accepted. */
const MIN_SECRET = 16;

/**
 * The checks a schema cannot express; each failure names the setting, so that start-up stops
 * with it (and the dashboard shows it beside the field).
 */
export function checkSettings(name: string, settings: WebhookSettings, outbound: OutboundAccess | undefined): WebhookConfig {
  const fail = (field: string, message: string): never => {
    throw new Error(`resource ${name}: setting ${field} ${message}`);
  };
  const collection = settings.collection.replace(/^\/+|\/+$/g, '');
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]*(\/[A-Za-z0-9][A-Za-z0-9_-]*)*$/.test(collection)) fail('collection', `must name a collection ("todos"), not ${JSON.stringify(settings.collection)}`);
  let url: URL | undefined;
  try {
    url = new URL(settings.url);
  } catch {
    fail('url', `must be an absolute http: or https: URL, not ${JSON.stringify(settings.url.slice(0, 200))}`);
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) return fail('url', 'must be an http: or https: URL');
  if (settings.secret.length < MIN_SECRET) fail('secret', `must have at least ${MIN_SECRET} characters (openssl rand -hex 32 makes one); write it as \${env:NAME}`);
  const events = new Set<WebhookEvent>();
  for (const event of settings.events ?? EVENTS) {
    if (!EVENTS.includes(event as WebhookEvent)) fail('events', `must list "create", "update" and/or "delete", not ${JSON.stringify(event)}`);
    events.add(event as WebhookEvent);
  }
  if (events.size === 0) fail('events', 'must name at least one of "create", "update", "delete"');
  if (settings.query !== undefined && !isPlainObject(settings.query)) fail('query', 'must be an object');
  const as = settings.as.trim();
  const principal: Principal = as === 'anonymous' ? { kind: 'anonymous' } : as === 'root' ? { kind: 'root' } : { kind: 'user', id: as, users: settings.users.replace(/^\/+|\/+$/g, '') };
  const whole = (field: keyof WebhookSettings, min: number, max: number): number => {
    const value = settings[field] as number;
    if (!Number.isInteger(value) || value < min || value > max) fail(field, `must be a whole number from ${min} to ${max}`);
    return value;
  };
  const limit = outbound?.timeoutMs ?? 10_000;
  return {
    collection,
    url,
    secret: settings.secret,
    events,
    query: settings.query,
    principal,
    maxAttempts: whole('maxAttempts', 1, 100),
    retryBaseMs: whole('retryBaseMs', 1, 86_400_000),
    retryMaxMs: whole('retryMaxMs', 1, 7 * 86_400_000),
    timeoutMs: settings.timeoutMs === undefined ? limit : whole('timeoutMs', 1, 600_000),
    concurrency: whole('concurrency', 1, 256),
    keepDelivered: whole('keepDelivered', 0, 1_000_000),
    keepDead: whole('keepDead', 1, 10_000_000),
    excerptBytes: EXCERPT_BYTES,
    maxRedirects: outbound?.maxRedirects ?? 5,
  };
}
