import { Agent as HttpAgent } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { EventLoopUtilization } from 'node:perf_hooks';
import { Agent as HttpsAgent } from 'node:https';
import type { Logger, OutboundLookup, OutboundPolicy } from '@svc/core';
import { retryDelay } from './backoff.js';
import type { Lease } from './lease.js';
import type { DeliveryRecord, Outbox } from './outbox.js';
import { Pace } from './pace.js';
import { showPayload } from './payload.js';
import type { PayloadSource } from './payload.js';
import { sendDelivery } from './send.js';
import type { WebhookConfig } from './settings.js';

/** What a {@link Deliverer} works with. */
export interface DelivererOptions {
  name: string;
  config: WebhookConfig;
  outbox: Outbox;
  lease: Lease;
  policy: OutboundPolicy;
  logger: Logger;
  /** Shows a record's objects to the principal (bound to the collection when the webhook starts). */
  payloadSource(): PayloadSource;
  /** How often the outbox is looked at when nothing wakes the deliverer, ms (other processes' writes, due retries). */
  pollMs: number;
  /** How often a process without the lease tries to take it, ms. */
  leasePollMs: number;
  lookup?: OutboundLookup;
}

/** How often the utilisation is sampled, ms (each sample adjusts the slots: see Pace). */
const BUSY_SAMPLE_MS = 200;
/**
 * While writes saturate the process (Pace.paced): one delivery at a time, each started at least
 * this long after the previous one (at most 20 a second: a delivery out of a backlog cost ~300-450
 * µs of CPU, so ~1% of a core, where 50 a second took 2-3% of the writes' throughput; the outbox
 * never stops moving, oldest first, and catches up once there is room: bench/RESULTS.md, "Issue 43,
 * round 18").
 */
const BUSY_GAP_MS = 50;

/** Attempts finished here lately, by record id: a find begun before one finished must not start it again. */
const FINISHED_KEPT_MS = 10 * 60_000;

/**
 * Delivers a webhook's outbox while this instance holds the lease: due records, the earliest
 * first, `concurrency` at a time; a new event of this process is started at once when a slot is
 * free (no store read), others are found by reading the outbox (woken by a write here, else every
 * `pollMs`, and at the next due retry). Each attempt's outcome is stored before the next one of
 * the same record can start. Nothing here waits in a write's request.
 */
export class Deliverer {
  /** Records with an attempt under way here (sent, or its outcome being stored), by id. */
  private readonly inflight = new Map<string, { abort: AbortController; done: Promise<void> }>();
  /** Attempts waiting for the receiver: what `concurrency` bounds. */
  private sending = 0;
  /** Attempts made here lately: id -> the attempt number finished (a stale find shows fewer); in the order they finished. */
  private readonly finished = new Map<string, { attempt: number; at: number }>();
  private timer: NodeJS.Timeout | undefined;
  /** The timer is armed for a look at once (schedule(0)). */
  private timerSoon = false;
  private passing = false;
  private again = false;
  /** Records read (or offered) and not started yet, the oldest first; `queued` holds their ids. */
  private queue: DeliveryRecord[] = [];
  private readonly queued = new Set<string>();
  private filling = false;
  /** The last read of the outbox filled its page, or offers were dropped: more may be due than known here. */
  private backlog = true;
  /** The earliest retry this instance scheduled (ms), so the next look is not later than it. */
  private nextRetry = Infinity;
  private stopped = false;
  private renewing: NodeJS.Timeout | undefined;
  private readonly stopWaiting: () => void;
  private completions = 0;
  /** How many attempts may wait for the receiver, and whether writes saturate the process (writes first). */
  private readonly pace: Pace;
  /** Events offered here since the last sample. */
  private offered = 0;
  /** A record stayed queued for want of a slot since the last sample (set by fill). */
  private waited = false;
  /** When the last attempt started here (ms), for the pace while writes saturate the process. */
  private lastStart = 0;
  private pacing: NodeJS.Timeout | undefined;
  private elu: EventLoopUtilization = performance.eventLoopUtilization();
  private sampling: NodeJS.Timeout | undefined;
  /** Connections to the receiver, kept alive between deliveries (each checked by the guard when made). */
  private readonly agents: { http: HttpAgent; https: HttpsAgent };

  constructor(private readonly options: DelivererOptions) {
    this.stopWaiting = options.lease.onRelease(() => this.wake());
    this.pace = new Pace(options.config.concurrency);
    const pool = { keepAlive: true, maxSockets: options.config.concurrency, maxFreeSockets: options.config.concurrency, timeout: 60_000 };
    this.agents = { http: new HttpAgent(pool), https: new HttpsAgent(pool) };
  }

  /** Records read from the outbox at once. */
  private get batch(): number {
    return Math.max(32, this.options.config.concurrency * 4);
  }

  /** Starts delivering (once the app serves requests). */
  start(): void {
    const renewMs = Math.max(100, Math.floor(this.options.lease.ttlMs / 3));
    this.renewing = setInterval(() => {
      if (this.options.lease.holds()) this.options.lease.acquire().catch((err: unknown) => this.warn('could not renew its lease', err));
    }, renewMs);
    this.renewing.unref();
    this.sampling = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const utilization = performance.eventLoopUtilization(now, this.elu).utilization;
      this.pace.sample({ utilization, offered: this.offered, waited: this.waited || (this.backlog && this.sending >= this.slots) });
      this.elu = now;
      this.offered = 0;
      this.waited = false;
      this.fill();
    }, BUSY_SAMPLE_MS);
    this.sampling.unref();
    this.wake();
  }

  /**
   * Attempts waiting for the receiver at most now: between one and the setting, as Pace adjusts
   * them (the deliveries are asynchronous: they give way to the writes, keep going one at a time at
   * BUSY_GAP_MS intervals while writes saturate the process, and catch up once there is room).
   */
  private get slots(): number {
    return this.pace.paced ? 1 : this.pace.slots;
  }

  /**
   * A new event of this process, just stored: queued here when this instance delivers and knows
   * of nothing older that waits (no store read); started after the current turn, so that the
   * write's answer goes first. Otherwise the next read of the outbox finds it.
   */
  offer(record: DeliveryRecord): void {
    this.offered++;
    // Not delivering here: whoever holds the lease finds it at its next look (pollMs).
    if (this.stopped || !this.options.lease.holds(1000)) return;
    if (this.backlog || this.queue.length >= this.batch) {
      this.backlog = true;
      // Idle with nothing known: a read finds it. Records queued here start first (fill; paced
      // while writes saturate the process): no read, and no timer per write, while the outbox has a backlog.
      if (this.sending === 0) {
        if (this.queue.length === 0) this.wake();
        else this.fill();
      }
      return;
    }
    this.queue.push(record);
    this.queued.add(record.id);
    if (!this.filling) {
      this.filling = true;
      setImmediate(() => {
        this.filling = false;
        this.fill();
      });
    }
  }

  /** Looks at the outbox soon. */
  wake(): void {
    if (this.stopped) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  /**
   * Stops: no new attempt starts; those under way get `graceMs` to end, then are aborted (their
   * records stay as they were, and are attempted again by whoever delivers next). The lease is
   * released.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.renewing);
    clearInterval(this.sampling);
    clearTimeout(this.pacing);
    this.stopWaiting();
    this.queue = [];
    this.queued.clear();
    const all = Promise.all([...this.inflight.values()].map((d) => d.done));
    const grace = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([all, grace]);
    for (const delivery of this.inflight.values()) delivery.abort.abort();
    await all;
    this.agents.http.destroy();
    this.agents.https.destroy();
    await this.options.lease.release().catch((err: unknown) => this.warn('could not release its lease (it expires by itself)', err));
  }

  /**
   * The next look, in `ms`. A look already due at once stays as it is: while the outbox has a
   * backlog and nothing is being sent, every new event asks for one (offer), and re-arming a timer
   * per write cost a timer's removal and insertion each time.
   */
  private schedule(ms: number): void {
    if (ms === 0 && this.timerSoon) return;
    clearTimeout(this.timer);
    this.timerSoon = ms === 0;
    this.timer = setTimeout(() => {
      this.timerSoon = false;
      void this.pass();
    }, ms);
    this.timer.unref();
  }

  /** Starts queued records while slots are free; an empty queue with slots free asks for a read. */
  private fill(): void {
    if (this.stopped) return;
    if (this.pace.paced && this.queue.length > 0) {
      const wait = this.lastStart + BUSY_GAP_MS - Date.now();
      if (wait > 0) {
        this.fillIn(wait);
        return;
      }
    }
    const concurrency = this.slots;
    while (this.sending < concurrency && this.queue.length > 0) {
      const record = this.queue.shift() as DeliveryRecord;
      this.queued.delete(record.id);
      if (this.inflight.has(record.id) || this.isStale(record)) continue;
      this.begin(record);
    }
    if (this.queue.length > 0) this.waited = true;
    if (this.queue.length === 0 && this.backlog && this.sending < concurrency) this.wake();
  }

  /** Fills again in `ms` (once, however often asked). */
  private fillIn(ms: number): void {
    if (this.pacing !== undefined) return;
    this.pacing = setTimeout(() => {
      this.pacing = undefined;
      this.fill();
    }, ms);
    this.pacing.unref();
  }

  /**
   * One look at the outbox: take or renew the lease, read what is due (a batch, unless records
   * wait here already), start it, and plan the next look: at once while more is due, else at the
   * earliest retry scheduled here or after `pollMs` (other processes' writes, retries of records
   * read by another instance), whichever comes first.
   */
  private async pass(): Promise<void> {
    if (this.stopped || this.passing) return;
    this.passing = true;
    this.again = false;
    let next = this.options.pollMs;
    try {
      if (!this.options.lease.holds(2000) && !(await this.options.lease.acquire())) {
        this.queue = [];
        this.queued.clear();
        next = this.options.leasePollMs;
        return;
      }
      if (this.queue.length === 0 && this.sending < this.slots) {
        const now = Date.now();
        if (this.nextRetry <= now) this.nextRetry = Infinity;
        const due = await this.options.outbox.due(now, this.batch);
        this.backlog = due.length >= this.batch || this.options.outbox.moreNew;
        this.forgetOld();
        for (const record of due) {
          if (this.inflight.has(record.id) || this.queued.has(record.id) || this.isStale(record)) continue;
          this.queue.push(record);
          this.queued.add(record.id);
        }
      }
      this.fill();
      if (this.backlog && this.queue.length === 0) next = 0;
      else if (this.nextRetry !== Infinity) next = Math.min(next, Math.max(0, this.nextRetry - Date.now()));
    } catch (err) {
      this.warn('could not read its outbox', err);
      next = Math.max(next, 1000);
    } finally {
      this.passing = false;
      if (!this.stopped) this.schedule(this.again ? 0 : next);
    }
  }

  /** A record read before an attempt of it finished here: what the store said then is out of date. */
  private isStale(record: DeliveryRecord): boolean {
    const done = this.finished.get(record.id);
    return done !== undefined && record.attempts < done.attempt;
  }

  /**
   * Drops what finished more than FINISHED_KEPT_MS ago. The map is in the order attempts finished
   * (see noteFinished), so the walk stops at the first one kept: it costs what it drops, not the
   * whole map at every read (a profile of a drain of 37,000 deliveries had the full walk at 2.7%
   * of the server's CPU).
   */
  private forgetOld(): void {
    const old = Date.now() - FINISHED_KEPT_MS;
    for (const [id, done] of this.finished) {
      if (done.at >= old) break;
      this.finished.delete(id);
    }
  }

  /** Notes an attempt finished now, at the end of the map (its order is the order of `at`). */
  private noteFinished(id: string, attempt: number): void {
    this.finished.delete(id);
    this.finished.set(id, { attempt, at: Date.now() });
  }

  private begin(record: DeliveryRecord): void {
    const abort = new AbortController();
    this.sending++;
    this.lastStart = Date.now();
    let sent = false;
    // The slot is free once the receiver answered: the outcome's write to the store does not hold
    // it (the record stays in `inflight` until that write is done, so no other attempt starts).
    const release = (): void => {
      if (sent) return;
      sent = true;
      this.sending--;
      // The next queued record takes the slot; an empty queue asks for a read when more may be due.
      if (this.queue.length > 0) this.fill();
      else if (this.backlog) this.wake();
    };
    const done = this.attempt(record, abort.signal, release)
      .catch((err: unknown) => this.warn(`could not record an attempt of delivery ${record.id}`, err))
      .finally(() => {
        this.inflight.delete(record.id);
        release();
      });
    this.inflight.set(record.id, { abort, done });
  }

  /** One attempt of one record, its outcome stored. */
  private async attempt(record: DeliveryRecord, signal: AbortSignal, sent: () => void): Promise<void> {
    const { config, outbox } = this.options;
    const attempt = record.attempts + 1;
    let body = record.body;
    let fresh: string | undefined;
    if (body === undefined) {
      const shown = await showPayload(this.options.payloadSource(), record).catch((err: unknown) => ({ failed: err instanceof Error ? err.message : String(err) }));
      if ('failed' in shown) {
        // The payload could not be made (an On Get script failed): an attempt that failed.
        const retryAt = this.noteRetry(Date.now() + retryDelay(attempt, config.retryBaseMs, config.retryMaxMs));
        await outbox.finish(record, attempt, { ok: false, error: `the payload could not be made: ${shown.failed}`, durationMs: 0, retryAt });
        this.noteFinished(record.id, attempt);
        return;
      }
      if ('skipped' in shown) {
        await outbox.skip(record, shown.skipped);
        this.noteFinished(record.id, Number.MAX_SAFE_INTEGER);
        return;
      }
      body = fresh = JSON.stringify(shown.payload);
    }
    const outcome = await sendDelivery({
      url: config.url,
      body,
      secret: config.secret,
      id: record.id,
      event: record.event,
      attempt,
      policy: this.options.policy,
      timeoutMs: config.timeoutMs,
      excerptBytes: config.excerptBytes,
      maxRedirects: config.maxRedirects,
      signal,
      agents: this.agents,
      ...(this.options.lookup ? { lookup: this.options.lookup } : {}),
    });
    sent();
    // Stopped under way: the receiver may or may not have it; the record stays as it was, for the next deliverer.
    if (signal.aborted) return;
    const status = await outbox.finish(record, attempt, {
      ok: outcome.ok,
      durationMs: outcome.durationMs,
      excerpt: outcome.excerpt,
      ...(outcome.status !== undefined ? { status: outcome.status } : {}),
      ...(outcome.error !== undefined ? { error: outcome.error } : {}),
      ...(fresh !== undefined ? { body: fresh } : {}),
      ...(outcome.ok ? {} : { retryAt: this.noteRetry(Date.now() + retryDelay(attempt, config.retryBaseMs, config.retryMaxMs, outcome.retryAfterMs)) }),
    });
    this.noteFinished(record.id, attempt);
    if (status === 'dead') this.options.logger.warn(`webhook ${this.options.name}: delivery ${record.id} (${record.event} of ${record.objectId}) failed ${attempt} times and is in the dead letters: ${outcome.error ?? ''}`);
    // Every half of keepDelivered at least: each prune reads the kept records past the newest.
    if (++this.completions % Math.max(200, Math.ceil(this.options.config.keepDelivered / 2)) === 0) void this.prune();
  }

  /** Remembers when a retry is due, so that the next look at the outbox is not later; answers it. */
  private noteRetry(at: number): number {
    if (at < this.nextRetry) {
      this.nextRetry = at;
      if (!this.passing && !this.stopped) this.schedule(Math.max(0, Math.min(this.options.pollMs, at - Date.now())));
    }
    return at;
  }

  /** Keeps the delivered and skipped records, and the dead letters, within their bounds. */
  async prune(): Promise<void> {
    const { outbox, config } = this.options;
    try {
      await outbox.prune(['delivered', 'skipped'], config.keepDelivered);
      const dropped = await outbox.prune(['dead'], config.keepDead);
      if (dropped > 0) this.options.logger.warn(`webhook ${this.options.name}: ${dropped} of the oldest dead letters dropped (keepDead ${config.keepDead})`);
    } catch (err) {
      this.warn('could not prune its outbox', err);
    }
  }

  private warn(what: string, err: unknown): void {
    this.options.logger.warn(`webhook ${this.options.name}: ${what}: ${err instanceof Error ? err.message : String(err)}`, { error: err });
  }
}
