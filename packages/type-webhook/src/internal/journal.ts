import { DuplicateKeyError } from '@svc/core';
import type { Doc, StoreCollection } from '@svc/core';
import type { DeliveryRecord } from './outbox.js';
import type { WebhookEvent } from './settings.js';

/**
 * A new event as a journal row keeps it: what its record holds besides what every new record
 * holds alike (pending, due since its write, no attempt; its time is in its id, its object's id in
 * the object; its last allowed attempt in the row), a little over half the bytes.
 */
interface NewEvent {
  id: string;
  event: WebhookEvent;
  object: Doc;
  previous?: Doc;
}

/**
 * One stored row of a journal: the new events of one turn of the event loop, in one store write.
 * `id` is the smallest event id of the row (unique, as event ids are), `last` the largest, `n` how
 * many events it holds, `lastAllowed` their records' (the webhook's maxAttempts).
 */
export interface JournalRow {
  id: string;
  last: string;
  n: number;
  lastAllowed: number;
  events: NewEvent[];
}

/** A row of this process: how many of its events have no delivery record yet. */
interface OwnRow {
  id: string;
  left: number;
}

/**
 * Where a new event's record, as this process made it, holds its row while the row is tracked:
 * a symbol, so no store encodes it (JSON, the embedded store's name checks and BSON skip symbol
 * keys). A map of event ids to rows cost a store of its own per event, kept in the heap until the
 * record was stored or the map was cut (bench/RESULTS.md, "Issue 43, round 18").
 */
const ROW = Symbol('journal row');

/** A new event's record while its row is tracked. */
type Tracked = DeliveryRecord & { [ROW]?: OwnRow };

/** Rows read at once when events are taken up into the delivery records. */
const ROWS_READ = 16;
/** Rows one taking up reads at most (rows whose events all have records make none: the bound of its work). */
const MAX_ROWS_TAKEN = 256;
/** Rows of this process known by id, so that a row taken up is no longer removed by its records (past this, such a removal may run, and removes nothing). */
const MAX_TRACKED = 10_000;
/** Events in one row at most (a turn with more writes makes several rows). */
const MAX_PER_ROW = 256;
/**
 * Characters of objects in one row of a commit at most (stage), besides the first event's: large
 * objects written together make several rows, so that no row nears a string's or a row's limit (a
 * row that cannot be written fails its whole commit, the writes of other clients with it).
 */
const MAX_ROW_CHARS = 8 * 1024 * 1024;

/**
 * Where a webhook's new events are stored before the write's answer: the events of one turn of
 * the event loop (the writes of one group commit) in one row, one store insert for all of them,
 * where a record per event cost an insert each (a row, its `id` and `nextAt` index entries, its
 * JSON encoded and decoded: bench/RESULTS.md, "Issue 43, round 9").
 *
 * An event has its delivery record (the outbox's collection, where attempts, retries, dead letters
 * and the dashboard read it) once its first attempt's outcome is stored, or once the deliverer
 * took the row up (takeUp); a row is removed once each of its events has one. A record is only
 * ever inserted when none with the event's id exists (the id is the record's unique key), so a
 * row taken up twice (after a crash between the inserts and the removal, or by two processes
 * while the lease changes hands) makes no second record.
 */
export class Journal {
  /** The events of this turn, stored together at the end of it. */
  private open: { events: DeliveryRecord[]; stored: Promise<void> } | undefined;
  /** The events of the group commit under way (stage), stored in it as one row. */
  private committing: { events: DeliveryRecord[]; chars: number; stored: Promise<void> } | undefined;
  /** Events in the last row taken up (how many rows the next taking up reads at once). */
  private perRow = 1;
  /** This process's rows whose events do not all have their record yet, by id (see track). */
  private readonly ownRows = new Map<string, OwnRow>();

  constructor(
    readonly rows: StoreCollection,
    private readonly records: StoreCollection,
  ) {}

  /**
   * Stores a new event with the others told in this turn; resolves once their row is stored. The
   * row is written once the turn's promise callbacks have run (process.nextTick, queued from
   * them, runs after all of them), so the events of writes committed together share it.
   */
  add(event: DeliveryRecord): Promise<void> {
    if (this.open === undefined || this.open.events.length >= MAX_PER_ROW) {
      const events: DeliveryRecord[] = [];
      const stored = new Promise<void>((resolve, reject) => {
        process.nextTick(() => {
          if (this.open?.events === events) this.open = undefined;
          this.write(events).then(resolve, reject);
        });
      });
      this.open = { events, stored };
    }
    this.open.events.push(event);
    return this.open.stored;
  }

  /**
   * Stores a new event from inside the write it tells of (a store's write hooks), in the same
   * transaction, with the other events of that group commit in one row: committed with the write or
   * not at all, and no second commit for the write's answer to wait for. `chars`: the length of the
   * event's objects as stored (rows are bounded by it). Resolves once committed; undefined where
   * the store has no such write (then `add`, after the write).
   */
  stage(event: DeliveryRecord, chars: number): Promise<void> | undefined {
    if (this.rows.insertAtCommit === undefined) return undefined;
    let row = this.committing;
    if (row === undefined || row.events.length >= MAX_PER_ROW || row.chars + chars > MAX_ROW_CHARS) {
      const events: DeliveryRecord[] = [];
      const entry: { events: DeliveryRecord[]; chars: number; stored: Promise<void> } = { events, chars: 0, stored: Promise.resolve() };
      // The row is made as the commit ends (no event of this commit joins it later).
      const made = this.rows.insertAtCommit(() => {
        if (this.committing === entry) this.committing = undefined;
        return rowOfEvents(events) as unknown as Doc;
      });
      entry.stored = made.then(
        () => this.track(events),
        (err: unknown) => {
          // The commit failed: its writes and this row with them. The next commit starts a row.
          if (this.committing === entry) this.committing = undefined;
          throw err;
        },
      );
      this.committing = row = entry;
    }
    row.events.push(event);
    row.chars += chars;
    return row.stored;
  }

  private async write(events: DeliveryRecord[]): Promise<void> {
    const row = rowOfEvents(events);
    try {
      await this.rows.insert(row as unknown as Doc);
    } catch (err) {
      // A row the store would not take (MongoDB's 16 MB per document, with large objects): a
      // record per event, as each would be taken up. Failing again (a full disk), the error stands.
      if (events.length === 1) throw err;
      await insertNew(this.records, events);
      return;
    }
    this.track(events);
  }

  /**
   * The events of a row this process stored: its row goes once each has its record (recorded).
   * Each record holds its row (ROW), for as long as the deliverer holds the record: one it let go
   * (a backlog: the outbox is read again later) leaves its row to be taken up.
   */
  private track(events: readonly DeliveryRecord[]): void {
    if (events.length === 0) return;
    const own: OwnRow = { id: rowIdOf(events), left: events.length };
    if (this.ownRows.size >= MAX_TRACKED) this.ownRows.clear();
    this.ownRows.set(own.id, own);
    for (const event of events) (event as Tracked)[ROW] = own;
  }

  /**
   * The event's delivery record is stored: its row goes once it was the last of the row's events
   * without one (a row of another process, a record read from the store, or a row taken up, goes
   * when taken up).
   */
  async recorded(record: DeliveryRecord): Promise<void> {
    const own = (record as Tracked)[ROW];
    if (own === undefined) return;
    (record as Tracked)[ROW] = undefined;
    if (--own.left !== 0 || own.id === '') return;
    this.ownRows.delete(own.id);
    await this.rows.remove({ id: own.id });
  }

  /**
   * Takes the oldest rows up into the records: each event without a record gets one (as it was
   * stored: pending, due since its write), then the row goes. Stops once `limit` records were
   * made, or MAX_ROWS_TAKEN rows were read; answers whether rows may be left.
   */
  async takeUp(limit: number): Promise<boolean> {
    let made = 0;
    for (let read = 0; read < MAX_ROWS_TAKEN; ) {
      // As many rows as the events still wanted fill, by the size of the last row read: rows of a
      // busy process hold dozens of events each, and 16 of them read (each decoded whole) to take
      // up 32 events was most of a delivery's reads (bench/RESULTS.md, "Issue 43, round 18").
      const page = Math.min(ROWS_READ, Math.max(1, Math.ceil((limit - made) / this.perRow)));
      const rows = (await this.rows.find({}, { sort: { id: 1 }, limit: page })) as unknown as JournalRow[];
      read += page;
      for (const row of rows) {
        if (made >= limit) return true;
        made += await this.takeUpRow(row);
        if (typeof row.n === 'number' && row.n > 0) this.perRow = row.n;
      }
      if (rows.length < page) return false;
    }
    return true;
  }

  private async takeUpRow(row: JournalRow): Promise<number> {
    const missing = await withoutRecord(this.records, recordsOf(row));
    await insertNew(this.records, missing);
    await this.rows.remove({ id: row.id });
    // Its records made here, in memory, no longer remove it.
    const own = this.ownRows.get(row.id);
    if (own !== undefined) {
      own.id = '';
      this.ownRows.delete(row.id);
    }
    return missing.length;
  }

  /** How many events the rows hold (some may have their record already, for a moment: see recorded). */
  async count(): Promise<number> {
    const rows = await this.rows.find({}, { fields: { n: 1 } });
    let n = 0;
    for (const row of rows) n += typeof row.n === 'number' ? row.n : 0;
    return n;
  }

  /** The newest events without a record, newest first, made before `before` (ms) when given; `limit` at most. */
  async newest(limit: number, before?: number): Promise<DeliveryRecord[]> {
    const rows = (await this.rows.find({}, { sort: { id: -1 }, limit })) as unknown as JournalRow[];
    const events = rows.flatMap(recordsOf).filter((e) => before === undefined || e.createdAt < before);
    events.sort((a, b) => b.createdAt - a.createdAt);
    return (await withoutRecord(this.records, events.slice(0, limit))).slice(0, limit);
  }

  /** The event with this id while it has no record, or null. */
  async find(eventId: string): Promise<DeliveryRecord | null> {
    const rows = (await this.rows.find({ id: { $lte: eventId }, last: { $gte: eventId } })) as unknown as JournalRow[];
    for (const row of rows) {
      const found = row.events.find((e) => e.id === eventId);
      if (found !== undefined) return recordOf(found, row.lastAllowed);
    }
    return null;
  }
}

/** A row's id: the smallest of its events' ids. */
function rowIdOf(events: readonly DeliveryRecord[]): string {
  let first = (events[0] as DeliveryRecord).id;
  for (const event of events) if (event.id < first) first = event.id;
  return first;
}

/** The row of these events (at least one). */
function rowOfEvents(events: readonly DeliveryRecord[]): JournalRow {
  const first = rowIdOf(events);
  let last = first;
  for (const event of events) if (event.id > last) last = event.id;
  return { id: first, last, n: events.length, lastAllowed: (events[0] as DeliveryRecord).lastAllowed, events: events.map(newEvent) };
}

function newEvent(record: DeliveryRecord): NewEvent {
  const { id, event, object, previous } = record;
  return previous === undefined ? { id, event, object: object as Doc } : { id, event, object: object as Doc, previous };
}

/** The record of a new event, as it was when its write was told. */
function recordOf(e: NewEvent, lastAllowed: number): DeliveryRecord {
  // The id begins with the time it was made, in ms (eventId).
  const createdAt = Number.parseInt(e.id.slice(0, 12), 16);
  return { id: e.id, status: 'pending', event: e.event, objectId: e.object.id, createdAt, nextAt: createdAt, attempts: 0, lastAllowed, object: e.object, ...(e.previous !== undefined ? { previous: e.previous } : {}) };
}

function recordsOf(row: JournalRow): DeliveryRecord[] {
  return row.events.map((e) => recordOf(e, row.lastAllowed));
}

/** The events that have no delivery record. */
async function withoutRecord(records: StoreCollection, events: readonly DeliveryRecord[]): Promise<DeliveryRecord[]> {
  if (events.length === 0) return [];
  const have = await records.find({ id: { $in: events.map((e) => e.id) } }, { fields: { id: 1 } });
  if (have.length === 0) return [...events];
  const recorded = new Set(have.map((d) => d.id));
  return events.filter((e) => !recorded.has(e.id));
}

/**
 * Inserts the records, in one call where the store has it; one that exists meanwhile (its attempt's
 * outcome was stored since the read) is left as it is.
 */
async function insertNew(records: StoreCollection, events: DeliveryRecord[]): Promise<void> {
  if (events.length === 0) return;
  if (records.insertMany !== undefined && events.length > 1) {
    try {
      await records.insertMany(events as unknown as Doc[]);
      return;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
  }
  for (const event of events) {
    try {
      await records.insert(event as unknown as Doc);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
  }
}
