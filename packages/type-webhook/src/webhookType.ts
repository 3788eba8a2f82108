import { OutboundPolicy, crashPoint, SvcError, coreRangeOf, defineResourceType, isSvcError, matchesFilter } from '@svc/core';
import type { Collection, CollectionChange, Filter, Logger, ObjectChange, OutboundLookup, ResourceHost, ResourceImplementation, ResourceTypeContext } from '@svc/core';
import { Deliverer } from './internal/deliverer.js';
import { Lease } from './internal/lease.js';
import { Outbox } from './internal/outbox.js';
import { describePrincipal, principalContext } from './internal/payload.js';
import type { PayloadSource } from './internal/payload.js';
import { rootApi } from './internal/rootApi.js';
import { WEBHOOK_SETTINGS, checkSettings } from './internal/settings.js';
import type { WebhookConfig, WebhookSettings } from './internal/settings.js';

/** How long a lease lasts unless renewed (a killed holder's successor waits this long, but with the embedded store). */
const LEASE_TTL_MS = 15_000;

/** Timings of a webhook that tests and embedders may change (`createWebhook`). */
export interface WebhookTimings {
  /** How often the holder of the lease reads the outbox when nothing wakes it, ms (default 250 with shared stores, 2000 with the embedded store). */
  pollMs?: number;
  /** How often a process without the lease tries to take it, ms (default 1000). */
  leasePollMs?: number;
  /** How long the delivering lease lasts unless renewed, ms (default 15 s): how long a killed holder's successor waits, but with the embedded store. */
  leaseTtlMs?: number;
  /** Time in-flight attempts get to end at close before they are aborted, ms (default 2000). */
  closeGraceMs?: number;
  /** Host name resolution (tests). */
  lookup?: OutboundLookup;
}

/** The part of a Collection a webhook uses: its change feed and its read path for a caller. */
type Watched = Pick<Collection, 'path' | 'watchChanges' | 'showTo' | 'compileQueryFor'>;

function isWatchable(resource: unknown): resource is Watched {
  const r = resource as Partial<Watched> | undefined;
  return typeof r?.watchChanges === 'function' && typeof r.showTo === 'function' && typeof r.compileQueryFor === 'function';
}

/**
 * Makes one Webhook resource: it watches a collection's stored writes, puts each matching one in
 * its outbox (in the app's store) before the write's request is answered, and delivers the outbox
 * in the background (see docs/webhooks.md).
 */
export function createWebhook(context: ResourceTypeContext<WebhookSettings>, timings: WebhookTimings = {}): ResourceImplementation {
  const config = checkSettings(context.name, context.settings, context.outbound);
  const base = context.name.replaceAll('/', '_');
  const outbox = new Outbox(context.store.collection(`${base}_webhook`), context.store.collection(`${base}_webhook_new`));
  const soleProcess = context.jobs?.scope === 'process';
  const lease = new Lease({ store: context.store.collection(`${base}_webhook_lease`), key: `${context.appDir}|${context.name}`, ttlMs: timings.leaseTtlMs ?? LEASE_TTL_MS, soleProcess });
  const policy = context.outbound?.policy ?? new OutboundPolicy([]);
  let host: ResourceHost | undefined;
  let collection: Watched | undefined;
  const source = (): PayloadSource => ({
    webhook: context.name,
    collection: collection as Collection,
    principal: config.principal,
    resourceAt: (path) => host?.resourceAt?.(path),
  });
  const deliverer = new Deliverer({
    name: context.name,
    config,
    outbox,
    lease,
    policy,
    logger: context.logger,
    payloadSource: source,
    pollMs: timings.pollMs ?? (soleProcess ? 2000 : 250),
    leasePollMs: timings.leasePollMs ?? 1000,
    ...(timings.lookup ? { lookup: timings.lookup } : {}),
  });
  let unwatch: (() => void) | undefined;
  let closed = false;

  return {
    handle() {
      // Nothing of a webhook is public: its deliveries are the dashboard's (root only).
      return Promise.reject(new SvcError('NOT_FOUND', `${context.name} is a webhook: its deliveries are in the dashboard`));
    },
    async init(resourceHost) {
      host = resourceHost;
      const target = resourceHost.resourceAt?.(`/${config.collection}`);
      if (!isWatchable(target)) throw new Error(`resource ${context.name}: setting collection names ${config.collection}, which is not a Collection or UserCollection of this app`);
      collection = target;
      const filter = await compileFilter(context.name, config, target, source());
      await outbox.init();
      const logger = context.logger;
      unwatch = target.watchChanges(
        (change) => enqueue(change, filter, config, outbox, deliverer, context.name, logger),
        // Reads before a delete, and whole objects before relations' setNull updates, only for these.
        () => config.events.has('delete') || config.events.has('update'),
        (change, chars) => stage(change, chars, filter, config, outbox, deliverer, context.name, logger),
      );
      // Deliveries start once the app answers requests (an On Get needs the server).
      void (context.jobs?.ready ?? Promise.resolve()).then(() => {
        if (closed) return;
        deliverer.start();
        void deliverer.prune();
      });
    },
    async close() {
      closed = true;
      unwatch?.();
      await deliverer.stop(timings.closeGraceMs ?? 2000);
    },
    rootApi: (request) => rootApi(request, { name: context.name, config, outbox, lease, deliverer }),
  };
}

/**
 * Tells the outbox of one stored write: awaited by the write before its answer, so that an
 * answered write's event is stored. Must not throw (the collection's other listeners and the
 * write's answer follow): a refused insert is logged as an error naming the object.
 */
function enqueue(change: CollectionChange, filter: Filter | undefined, config: WebhookConfig, outbox: Outbox, deliverer: Deliverer, name: string, logger: Logger): Promise<void> | undefined {
  if (change.kind === 'resync') {
    logger.warn(`webhook ${name}: objects of ${config.collection} changed without being told one by one (a backup restored): no deliveries for them`);
    return undefined;
  }
  if (!isWatched(change, filter, config)) return undefined;
  return outbox.add(change.kind, change.object, change.kind === 'update' ? change.previous : undefined, config.maxAttempts).then(
    (record) => {
      crashPoint('webhook:stored');
      deliverer.offer(record);
    },
    (err: unknown) => logger.error(`webhook ${name}: the ${change.kind} of ${config.collection} ${change.object.id} is stored but its delivery could not be put in the outbox: ${err instanceof Error ? err.message : String(err)}`, { error: err }),
  );
}

/** Whether a write makes an event of this webhook: one of its events, matching its query. */
function isWatched(change: ObjectChange, filter: Filter | undefined, config: WebhookConfig): boolean {
  return config.events.has(change.kind) && (filter === undefined || matchesFilter(change.object, filter));
}

/**
 * Tells the outbox of a create, an update or a delete from inside its write (a store that can: see
 * Journal.stage): the event is committed with the write, in one commit, and the write's answer
 * waits for nothing more. Undefined when the event is not this webhook's (its events, its query)
 * or the store cannot: then `enqueue` is told after the write, as before.
 */
function stage(change: ObjectChange, chars: number, filter: Filter | undefined, config: WebhookConfig, outbox: Outbox, deliverer: Deliverer, name: string, logger: Logger): Promise<void> | undefined {
  if (!isWatched(change, filter, config)) return undefined;
  const staged = outbox.stage(change.kind, change.object, change.kind === 'update' ? change.previous : undefined, config.maxAttempts, chars);
  if (staged === undefined) return undefined;
  return staged.stored.then(
    () => {
      crashPoint('webhook:stored');
      deliverer.offer(staged.record);
    },
    // The commit failed, the object's write with it: that write's error is its request's answer.
    (err: unknown) => logger.warn(`webhook ${name}: a commit holding a ${change.kind} of ${config.collection} failed, and its event with it: ${err instanceof Error ? err.message : String(err)}`),
  );
}

/**
 * The `query` setting as a GET by the principal compiles it: a condition on a property the
 * principal may not read is refused (start-up stops), so no delivery depends on what the
 * principal could not see. Paging and sorting keys mean nothing here and are refused too.
 */
async function compileFilter(name: string, config: WebhookConfig, target: Watched, payload: PayloadSource): Promise<Filter | undefined> {
  const query = config.query;
  if (query === undefined || Object.keys(query).length === 0) return undefined;
  const commands = Object.keys(query).filter((k) => k.startsWith('$') && k !== '$or' && k !== '$and' && k !== '$nor');
  if (commands.length > 0) throw new Error(`resource ${name}: setting query may hold conditions only, not ${commands.join(', ')}`);
  const ctx = await principalContext(payload);
  if (ctx === undefined) throw new Error(`resource ${name}: setting as names ${describePrincipal(config.principal)}, who does not exist: the query cannot be checked for them`);
  try {
    return target.compileQueryFor(ctx, { ...query }).filter;
  } catch (err) {
    if (isSvcError(err)) throw new Error(`resource ${name}: setting query: ${err.message} (checked as a GET by ${describePrincipal(config.principal)})`, { cause: err });
    throw err;
  }
}

/** The Webhook resource type. */
export const webhookType = defineResourceType<WebhookSettings>({
  name: 'Webhook',
  core: coreRangeOf(import.meta.url),
  settings: WEBHOOK_SETTINGS,
  events: [],
  client: {},
  dashboard: { label: 'Webhook', pages: ['deliveries'], events: {} },
  create: (context) => createWebhook(context),
});
