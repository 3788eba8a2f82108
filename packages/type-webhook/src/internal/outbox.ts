import { DuplicateKeyError, crashPoint, createId } from '@svc/core';
import type { Doc, Filter, StoreCollection } from '@svc/core';
import { Journal } from './journal.js';
import type { WebhookEvent } from './settings.js';

/** Where a delivery stands. */
export type DeliveryStatus = 'pending' | 'delivered' | 'dead' | 'skipped';

/** One event of a webhook as its outbox keeps it (a store object). */
export interface DeliveryRecord {
  /** The event's id: the `svc-webhook-id` header and the payload's `id`, the same at every attempt. */
  id: string;
  status: DeliveryStatus;
  event: WebhookEvent;
  objectId: string;
  /** When the write was told (ms since 1970). */
  createdAt: number;
  /** When the next attempt is due (pending), ms. */
  nextAt: number;
  /** Attempts made so far, manual ones included. */
  attempts: number;
  /** The attempt after which a failure is final (maxAttempts; a manual retry: one more). */
  lastAllowed: number;
  /**
   * Until the first attempt: the object as stored (after the write; before it for a delete) and,
   * for an update, as it was. Replaced at the first attempt by `body`, the payload as the
   * webhook's principal may see it, sent unchanged at every later attempt.
   */
  object?: Doc;
  previous?: Doc;
  body?: string;
  lastAt?: number;
  /** The receiver's HTTP status at the last attempt (none when it did not answer). */
  lastStatus?: number;
  /** Why the last attempt failed (or why the event was skipped). */
  lastError?: string;
  /** The start of the receiver's last answer, as text. */
  excerpt?: string;
  durationMs?: number;
  /** When it was delivered, skipped or given up (ms). */
  doneAt?: number;
}

/** An attempt's outcome, as the record keeps it. */
export interface AttemptResult {
  ok: boolean;
  status?: number;
  error?: string;
  excerpt?: string;
  durationMs: number;
  /** The payload sent (kept for the next attempts). */
  body?: string;
  /** When to try again after a failure (ms), unless attempts are spent. */
  retryAt?: number;
}

/** What the dashboard lists of a delivery (no stored object, no whole body). */
export type DeliveryView = Omit<DeliveryRecord, 'object' | 'previous' | 'body' | 'nextAt'> & { nextAt?: number; bodyBytes?: number };

const LIST_FIELDS = { object: 0, previous: 0 } as const;
/**
 * `nextAt` of a record no longer pending, done at `now`: past every time, so that the range on
 * nextAt that reads due records never reaches it, and distinct per record (DONE_BASE + when it was
 * done): the embedded store's index keeps the records of one key in an array that each removal
 * scans, so one shared key would make every prune scan all the kept records.
 */
const DONE_BASE = 8e15;
const doneKey = (now: number): number => DONE_BASE + now;

/**
 * A new event's id: the time in ms (12 hex digits), then 16 random ones (createId). Events made
 * one after another have ids that sort together, so the outbox's unique index on `id` takes each
 * new record at its end: a commit of many events writes one or two of its pages, where random ids
 * put each record in a page of its own (the embedded engine writes every page a commit changed to
 * its WAL, and copies it again at the checkpoint). The random part keeps ids of one millisecond,
 * and of other processes, distinct.
 */
export function eventId(now: number): string {
  return now.toString(16).padStart(12, '0') + createId();
}

/**
 * A webhook's durable outbox, in the app's store (so: the embedded store's files, or MongoDB),
 * through the store contract only. A write's event is stored before the write's request is
 * answered, with the other events of its turn in one row of the journal (see Journal); it gets
 * its delivery record at its first attempt's outcome, or when the deliverer takes its row up
 * (due); it stays pending until an attempt succeeds or the attempts are spent; delivered and dead
 * records are kept, bounded, for the dashboard. Events in the journal count as pending and are
 * listed as such.
 */
export class Outbox {
  readonly journal: Journal;
  /** The last read of due records left journal rows behind: more may be due than it answered. */
  moreNew = false;

  constructor(
    readonly records: StoreCollection,
    journal: StoreCollection,
  ) {
    this.journal = new Journal(journal, records);
  }

  /**
   * One index, on `nextAt`: the read of due records is a range on it (records no longer pending
   * are past every time). Not on `status`: its few values would each hold thousands of records,
   * and the embedded store's index scans a key's records at every removal, so each attempt's
   * write (pending to delivered) would cost as much as the backlog is long. Every index is
   * updated at each attempt's write, so there is no other (the dashboard's list sorts the
   * bounded history without one).
   */
  async init(): Promise<void> {
    await this.records.ensureIndex({ field: 'nextAt' });
  }

  /** Stores a new event (pending, due now; in the journal, with the others of this turn) and answers it. */
  async add(event: WebhookEvent, object: Doc, previous: Doc | undefined, maxAttempts: number): Promise<DeliveryRecord> {
    const record = newRecord(event, object, previous, maxAttempts);
    await this.journal.add(record);
    return record;
  }

  /**
   * Stores a new event from inside the write it tells of (see Journal.stage; `chars`: its objects'
   * stored length); answers its record and the promise of its commit, or undefined where the
   * store cannot (then `add`, after the write).
   */
  stage(event: WebhookEvent, object: Doc, previous: Doc | undefined, maxAttempts: number, chars: number): { record: DeliveryRecord; stored: Promise<void> } | undefined {
    const record = newRecord(event, object, previous, maxAttempts);
    const stored = this.journal.stage(record, chars);
    return stored === undefined ? undefined : { record, stored };
  }

  /**
   * Up to `limit` pending records due by `now`, the earliest due first (a backlog goes out oldest
   * first: what bounds the delay of the last ones), once the oldest journal rows are taken up
   * (up to `limit` new records; `moreNew` says whether rows were left). A range and a sort on
   * the indexed nextAt only (records no longer pending are past every time, so no other condition
   * is needed): the embedded stores walk the index and stop at the limit; MongoDB reads the index
   * range in order.
   */
  async due(now: number, limit: number): Promise<DeliveryRecord[]> {
    this.moreNew = await this.journal.takeUp(limit);
    return (await this.records.find({ nextAt: { $lte: now } }, { sort: { nextAt: 1 }, limit })) as unknown as DeliveryRecord[];
  }

  /** Records the outcome of attempt number `attempt` of a record; answers the status it now has. */
  async finish(record: DeliveryRecord, attempt: number, result: AttemptResult): Promise<DeliveryStatus> {
    const now = Date.now();
    const status: DeliveryStatus = result.ok ? 'delivered' : attempt >= record.lastAllowed || result.retryAt === undefined ? 'dead' : 'pending';
    const set: Record<string, unknown> = { status, attempts: attempt, lastAt: now, durationMs: result.durationMs, nextAt: status === 'pending' ? (result.retryAt as number) : doneKey(now) };
    if (result.status !== undefined) set.lastStatus = result.status;
    set.lastError = result.error ?? '';
    set.excerpt = result.excerpt ?? '';
    if (status !== 'pending') set.doneAt = now;
    if (result.body !== undefined) set.body = result.body;
    // The stored objects go once the payload (what the principal may see of them) is kept.
    const unset: Record<string, true> = result.body !== undefined ? { object: true, previous: true } : {};
    if (result.status === undefined) unset.lastStatus = true;
    await this.record(record, set, unset);
    return status;
  }

  /** Marks a record skipped: its object is not one the principal may read (or no longer exists). */
  async skip(record: DeliveryRecord, reason: string): Promise<void> {
    const now = Date.now();
    await this.record(record, { status: 'skipped', lastError: reason, doneAt: now, nextAt: doneKey(now) }, { object: true, previous: true });
  }

  /**
   * Stores an attempt's outcome: an update of the event's record, or, when it has none yet (a new
   * event, still in the journal), the record as it now is (inserted; should the deliverer's taking
   * up insert it meanwhile, updated after all). Then the journal's row may go.
   */
  private async record(record: DeliveryRecord, set: Record<string, unknown>, unset: Record<string, true>): Promise<void> {
    const ops = { $set: set, ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}) };
    if ((await this.records.update({ id: record.id }, ops)) === null) {
      const doc: Record<string, unknown> = { ...record, ...set };
      for (const key of Object.keys(unset)) delete doc[key];
      try {
        await this.records.insert(doc as Doc);
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
        await this.records.update({ id: record.id }, ops);
      }
    }
    crashPoint('webhook:recorded');
    await this.journal.recorded(record);
  }

  /**
   * Sends a delivered or dead record again now (the dashboard's retry): pending, due now, one
   * more attempt allowed. Answers false when there is no such record, or it is pending or skipped.
   */
  async retry(id: string): Promise<boolean> {
    // A skipped record has no payload to send (the principal could not read its object).
    const found = (await this.records.findOne({ id, status: { $in: ['delivered', 'dead'] } })) as unknown as DeliveryRecord | null;
    if (found === null) return false;
    const updated = await this.records.update({ id, status: found.status }, { $set: { status: 'pending', nextAt: Date.now(), lastAllowed: found.attempts + 1 }, $unset: { doneAt: true } });
    return updated !== null;
  }

  /** Every dead letter sent again now (one more attempt each); answers how many. */
  async retryDead(limit: number): Promise<number> {
    const dead = (await this.records.find({ status: 'dead' }, { fields: { id: 1, attempts: 1 }, limit })) as unknown as Pick<DeliveryRecord, 'id' | 'attempts'>[];
    let count = 0;
    const now = Date.now();
    for (const record of dead) {
      if (await this.records.update({ id: record.id, status: 'dead' }, { $set: { status: 'pending', nextAt: now, lastAllowed: record.attempts + 1 }, $unset: { doneAt: true } })) count++;
    }
    return count;
  }

  /** The newest records (of one status, or all; journal events are pending), newest first, without stored objects; `before`: createdAt of the last one seen. */
  async list(status: DeliveryStatus | undefined, limit: number, before?: number): Promise<DeliveryView[]> {
    const filter: Filter = {};
    if (status !== undefined) filter.status = status;
    if (before !== undefined) filter.createdAt = { $lt: before };
    const docs = (await this.records.find(filter, { sort: { createdAt: -1 }, limit, fields: LIST_FIELDS })) as unknown as DeliveryRecord[];
    if (status === undefined || status === 'pending') {
      docs.push(...(await this.journal.newest(limit, before)));
      docs.sort((a, b) => b.createdAt - a.createdAt);
    }
    return docs.slice(0, limit).map(viewOf);
  }

  /** One record (or journal event), with the body sent (up to `maxBody` characters). */
  async get(id: string, maxBody: number): Promise<(DeliveryView & { body?: string }) | null> {
    const found = ((await this.records.findOne({ id }, { fields: LIST_FIELDS })) as unknown as DeliveryRecord | null) ?? (await this.journal.find(id));
    if (found === null) return null;
    return { ...viewOf(found), ...(found.body !== undefined ? { body: found.body.length > maxBody ? `${found.body.slice(0, maxBody)}…` : found.body } : {}) };
  }

  /** How many records have each status (the journal's events are pending). */
  async counts(): Promise<Record<DeliveryStatus, number>> {
    const [pending, delivered, dead, skipped] = await Promise.all((['pending', 'delivered', 'dead', 'skipped'] as const).map((status) => this.records.count({ status })));
    const fresh = await this.journal.count();
    return { pending: (pending ?? 0) + fresh, delivered: delivered ?? 0, dead: dead ?? 0, skipped: skipped ?? 0 };
  }

  /**
   * Keeps the newest `keep` records of the statuses given (by when they were done), removing the
   * older ones (10,000 at most a call); answers how many went. No count of the outbox: the records
   * done are the range of nextAt from DONE_BASE up (DONE_BASE + when done), read newest first
   * through the index past the `keep` newest; a pending backlog, however long, is not read.
   */
  async prune(statuses: readonly DeliveryStatus[], keep: number): Promise<number> {
    const filter: Filter = { nextAt: { $gte: DONE_BASE }, status: { $in: [...statuses] } };
    const old = await this.records.find(filter, { sort: { nextAt: -1 }, skip: keep, limit: 10_000, fields: { id: 1 } });
    if (old.length === 0) return 0;
    return this.records.remove({ id: { $in: old.map((d) => d.id) } });
  }
}

/** A new event's record: pending, due now. */
function newRecord(event: WebhookEvent, object: Doc, previous: Doc | undefined, maxAttempts: number): DeliveryRecord {
  const now = Date.now();
  return { id: eventId(now), status: 'pending', event, objectId: object.id, createdAt: now, nextAt: now, attempts: 0, lastAllowed: maxAttempts, object, ...(previous ? { previous } : {}) };
}

function viewOf(record: DeliveryRecord): DeliveryView {
  const { object: _object, previous: _previous, body, nextAt, ...rest } = record;
  // The next try means something for a pending record only.
  const view: DeliveryView = record.status === 'pending' ? { ...rest, nextAt } : (rest as DeliveryView);
  return body !== undefined ? { ...view, bodyBytes: Buffer.byteLength(body) } : view;
}
