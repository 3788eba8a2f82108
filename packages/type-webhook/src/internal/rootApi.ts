import { SvcError, redactUrl } from '@svc/core';
import type { Reply, RootApiRequest } from '@svc/core';
import type { Deliverer } from './deliverer.js';
import type { Lease } from './lease.js';
import type { DeliveryStatus, Outbox } from './outbox.js';
import { describePrincipal } from './payload.js';
import type { WebhookConfig } from './settings.js';

/** What the dashboard API of a webhook works on. */
export interface RootApiDeps {
  name: string;
  config: WebhookConfig;
  outbox: Outbox;
  lease: Lease;
  deliverer: Deliverer;
}

const STATUSES: readonly DeliveryStatus[] = ['pending', 'delivered', 'dead', 'skipped'];
const MAX_LIST = 200;
/** Characters of a sent body one delivery's view shows. */
const MAX_BODY_SHOWN = 16 * 1024;
/** Dead letters one "retry all" sends again at most. */
const MAX_RETRY_ALL = 10_000;

/**
 * The dashboard's root-only API of a webhook (`/dashboard/api/resources/<name>/-/...`; the
 * dashboard checked the caller):
 *
 * - `GET deliveries?status=&limit=&before=`: the newest deliveries (status, response code,
 *   response excerpt, attempts, next try), the counts per status and who delivers;
 * - `GET deliveries/<id>`: one, with the body sent;
 * - `POST deliveries/<id>/retry`: a delivered or dead one sent again now;
 * - `POST deliveries/retry-dead`: every dead letter sent again now.
 */
export async function rootApi(request: RootApiRequest, deps: RootApiDeps): Promise<Reply> {
  const [what, id, action, ...rest] = request.parts;
  if (what !== 'deliveries' || rest.length > 0) throw new SvcError('NOT_FOUND', `no webhook API ${request.method} ${request.parts.join('/')}`);
  if (id === undefined && request.method === 'GET') return { status: 200, body: await overview(request.query, deps) };
  if (id === 'retry-dead' && action === undefined && request.method === 'POST') {
    const retried = await deps.outbox.retryDead(MAX_RETRY_ALL);
    deps.deliverer.wake();
    return { status: 200, body: { retried } };
  }
  if (id !== undefined && action === undefined && request.method === 'GET') {
    const found = await deps.outbox.get(id, MAX_BODY_SHOWN);
    if (found === null) throw new SvcError('NOT_FOUND', `no delivery ${id}`);
    return { status: 200, body: found };
  }
  if (id !== undefined && action === 'retry' && request.method === 'POST') {
    if (!(await deps.outbox.retry(id))) throw new SvcError('CONFLICT', `delivery ${id} is not delivered or dead (it may be pending already, or skipped: nothing to send)`);
    deps.deliverer.wake();
    return { status: 200, body: { retried: 1 } };
  }
  throw new SvcError('NOT_FOUND', `no webhook API ${request.method} ${request.parts.join('/')}`);
}

async function overview(query: Record<string, unknown>, deps: RootApiDeps): Promise<Record<string, unknown>> {
  const status = query.status;
  if (status !== undefined && status !== '' && !STATUSES.includes(status as DeliveryStatus)) throw new SvcError('BAD_REQUEST', `status must be one of ${STATUSES.join(', ')}`);
  const limit = query.limit === undefined ? 50 : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST) throw new SvcError('BAD_REQUEST', `limit must be a whole number from 1 to ${MAX_LIST}`);
  const before = query.before === undefined || query.before === '' ? undefined : Number(query.before);
  if (before !== undefined && !Number.isFinite(before)) throw new SvcError('BAD_REQUEST', 'before must be a time in ms (the createdAt of the last delivery shown)');
  const [counts, deliveries, holder] = await Promise.all([deps.outbox.counts(), deps.outbox.list(status === '' ? undefined : (status as DeliveryStatus | undefined), limit, before), deps.lease.holder()]);
  const { config } = deps;
  return {
    webhook: deps.name,
    collection: config.collection,
    url: redactUrl(config.url.href),
    events: [...config.events],
    as: describePrincipal(config.principal),
    maxAttempts: config.maxAttempts,
    delivering: holder === undefined ? null : { here: holder.mine, until: new Date(holder.until).toISOString() },
    counts,
    deliveries,
  };
}
