import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { DuplicateKeyError } from '../store/Store.js';
import { isUnavailable } from './steps.js';
import type { StoreCollection } from '../store/Store.js';

/** The lock's object in `_migrations`. */
const LOCK_ID = 'lock';
/** Owners of leases held by this process now (two appliers in one process are told apart from a restart). */
const held = new Set<string>();

interface LockDoc {
  id: string;
  owner: string;
  host: string;
  pid: number;
  /** ms since 1970 (the holder's clock): past it, another process may take the lock. */
  expires: number;
  since: string;
}

/** Options of {@link acquireLease}. */
export interface LeaseOptions {
  /**
   * How long the lock holds without being renewed, ms (default 120 s; renewed every sixth of it,
   * by a timer of its own, whatever the step's database calls are doing). A holder killed on
   * another machine keeps the others waiting this long; one killed on this machine does not.
   */
  leaseMs?: number;
  /** How often a waiting process looks again, ms (default 250). */
  pollMs?: number;
  /** Told once when the lock is held by another process (and who). */
  onWait?(holder: { owner: string; since: string }): void;
  /** Gives up waiting after this many ms (default: waits as long as the holder renews). */
  waitMs?: number;
  /**
   * The longest one write may take, ms, from the lease check before it to its end in the database
   * (the client's queue time limit plus the write's maxTimeMS: see migrationWriteLimits); default 0
   * (the embedded stores write in this process). Must be under a third of the lease: a write is
   * sent only while the lock is surely held for a third of the lease yet. A process that takes the
   * lock over from another waits this long before its first write, so that a write the other sent
   * just before the database froze has ended (docs/migrations.md).
   */
  writeMs?: number;
}

/** The lease of the migrations' lock by default, ms. */
export const DEFAULT_LEASE_MS = 120_000;

/** How the client that applies migrations on MongoDB is bounded, for a lease (see migrationWriteLimits). */
export interface MigrationWriteLimits {
  /** Connections at most (the driver's pool). */
  maxConnections: number;
  /** A write's time limit in the database (maxTimeMS), ms. */
  writeTimeoutMs: number;
  /** How long a call may wait in the client for a connection before it fails unsent, ms. */
  queueTimeoutMs: number;
  /** The two together: LeaseOptions.writeMs. */
  writeMs: number;
}

/**
 * The bounds of a MongoDB client that applies migrations under a lease of `leaseMs`: a write is sent
 * at most a twentieth of the lease after its lease check (or not at all; it waits only when every
 * connection is busy) and runs at most a quarter of it in the database, 0.3 of the lease in all,
 * under the third of the lease a holder keeps in hand before each write. 8 connections: a step's
 * WRITES_AT_ONCE writes, its read, the lease's renewal, and spares, so that no write waits for one.
 */
export function migrationWriteLimits(leaseMs: number = DEFAULT_LEASE_MS): MigrationWriteLimits {
  const writeTimeoutMs = Math.max(1, Math.floor(leaseMs / 4));
  const queueTimeoutMs = Math.max(1, Math.floor(leaseMs / 20));
  return { maxConnections: 8, writeTimeoutMs, queueTimeoutMs, writeMs: writeTimeoutMs + queueTimeoutMs };
}

/** The lock, held. */
export interface Lease {
  readonly owner: string;
  /** Throws {@link LeaseLostError} when the lock is known lost or past its time (no renewal answered). */
  check(): void;
  /**
   * Called right before every write is sent: answers when the lock is surely this process's for a
   * third of the lease yet, renewing it first when the timer's renewals have not kept it so (a slow
   * database); throws {@link LeaseLostError} when the renewal finds it taken, or cannot renew it
   * before it ends, or once released. A holder that lost it never writes again.
   */
  hold(): Promise<void>;
  release(): Promise<void>;
}

/** The migrations' lock was lost (taken by another process after this one could not renew it in time): stop writing. */
export class LeaseLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LeaseLostError';
  }
}

/** Ms since 1970 of the first unanswered call in a row: a waiting process gives up after this long without an answer. */
const WAIT_UNANSWERED_MS = 10 * 60_000;

/**
 * Takes the migrations' lock: one object `{id: "lock"}` in the store's `_migrations`, made by an
 * insert (a unique id: only one process makes it), renewed while held, removed at the end. A lock
 * whose holder stopped renewing it (killed) is taken over once it expired, by a compare-and-set on
 * its owner and expiry; at once when its holder was a process of this machine that is gone (a
 * kill -9 and a restart need not wait). Waits while another process holds it.
 *
 * On MongoDB the insert and the compare-and-set are atomic. FerretDB v1's updates are not: two
 * processes taking over an expired lock at the same instant could both succeed. Every step is
 * idempotent (it finds the objects it has still to change), so two appliers repeat work but do not
 * corrupt it; the embedded stores admit one process per data folder, so the question is MongoDB's.
 */
export async function acquireLease(coll: StoreCollection, options: LeaseOptions = {}): Promise<Lease> {
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const pollMs = options.pollMs ?? 250;
  const writeMs = options.writeMs ?? 0;
  if (writeMs >= leaseMs / 3) throw new Error(`a write may take ${writeMs} ms, not under a third of the migrations' lease (${leaseMs} ms): a lease it outlasts does not keep two processes' writes apart`);
  const host = hostname();
  const owner = `${host}:${process.pid}:${randomBytes(6).toString('hex')}`;
  const started = Date.now();
  let told = false;
  let unanswered: number | undefined;
  for (;;) {
    const mine: LockDoc = { id: LOCK_ID, owner, host, pid: process.pid, expires: Date.now() + leaseMs, since: new Date().toISOString() };
    let held: LockDoc | null;
    try {
      try {
        await coll.insert({ ...mine });
        return hold(coll, owner, leaseMs, mine.expires);
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
      held = (await coll.findOne({ id: LOCK_ID })) as LockDoc | null;
      if (held !== null && (held.expires < Date.now() || isGone(held, host))) {
        const expires = Date.now() + leaseMs;
        const taken = await coll.update({ id: LOCK_ID, owner: held.owner, expires: held.expires }, { $set: { owner, host, pid: process.pid, expires, since: mine.since } });
        if (taken !== null && taken.owner === owner) {
          const lease = hold(coll, owner, leaseMs, expires);
          // The previous holder's last writes (sent before its lease ran short, perhaps still in
          // a frozen database's hands) end within writeMs of reaching it: none lands after ours.
          if (writeMs > 0) await new Promise((resolve) => setTimeout(resolve, writeMs));
          return lease;
        }
      }
      unanswered = undefined;
    } catch (err) {
      // The holder's work can keep a database busy past its time limit (FerretDB), or the database
      // is frozen for a while: wait on, for a while.
      unanswered ??= Date.now();
      if (!isUnavailable(err) || Date.now() - unanswered > Math.max(WAIT_UNANSWERED_MS, 2 * leaseMs)) throw err;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      continue;
    }
    if (held !== null && !told) {
      told = true;
      options.onWait?.({ owner: held.owner, since: held.since });
    }
    if (options.waitMs !== undefined && Date.now() - started > options.waitMs) throw new Error(`the migrations' lock is held by ${held?.owner ?? 'another process'} (since ${held?.since ?? '?'})`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** A holder on this machine whose process is gone (or is this process under another owner: a restart with the same pid). */
function isGone(lock: LockDoc, host: string): boolean {
  if (lock.host !== host || typeof lock.pid !== 'number') return false;
  if (lock.pid === process.pid) return !held.has(lock.owner);
  try {
    process.kill(lock.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function hold(coll: StoreCollection, owner: string, leaseMs: number, expires: number): Lease {
  held.add(owner);
  let lost: Error | undefined;
  let renewing: Promise<void> | undefined;
  let released = false;
  // Until when the lock is surely this process's: past it, another may have taken it. The expiry
  // written (computed before the call: the store may have answered late); a renewal moves it to
  // the time it was *sent* plus the lease.
  let holdsUntil = expires;
  const margin = leaseMs / 3;
  const renew = (): Promise<void> => {
    const asked = Date.now();
    renewing ??= coll
      .update({ id: LOCK_ID, owner }, { $set: { expires: asked + leaseMs } })
      .then(
        (renewed) => {
          if (renewed === null) lost = new LeaseLostError('the migrations\' lock was taken by another process (this one could not renew it in time): stopping');
          else holdsUntil = Math.max(holdsUntil, asked + leaseMs);
        },
        // A store that does not answer now may answer at the next renewal, before the lease ends.
        () => undefined,
      )
      .finally(() => (renewing = undefined));
    return renewing;
  };
  // Renewed on a timer of its own, not between the steps' calls: a slow call does not hold it up.
  const timer = setInterval(() => void renew(), Math.max(50, Math.floor(leaseMs / 6)));
  timer.unref();
  const check = (): void => {
    if (lost) throw lost;
    if (Date.now() > holdsUntil) throw new LeaseLostError('the migrations\' lock could not be renewed in time (the store did not answer): stopping');
  };
  return {
    owner,
    check,
    async hold() {
      // A write is sent only while the lock is surely this process's for a third of the lease
      // yet: more than the longest a write may take (writeMs), so it has ended before another
      // process can take the lock over.
      for (;;) {
        if (lost) throw lost;
        if (released) throw new LeaseLostError('the migrations\' lock was released: stopping');
        if (holdsUntil - Date.now() >= margin) return;
        const past = Date.now() > holdsUntil;
        // Past its time, the compare-and-set on the owner renews a lock no one took; one taken
        // answers null and this holder stops.
        await renew();
        if (lost) throw lost;
        if (holdsUntil - Date.now() >= margin) return;
        if (past && Date.now() > holdsUntil) {
          lost = new LeaseLostError('the migrations\' lock could not be renewed in time (the store did not answer): stopping');
          throw lost;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(1000, leaseMs / 20)));
      }
    },
    async release() {
      released = true;
      held.delete(owner);
      clearInterval(timer);
      await renewing;
      await coll.remove({ id: LOCK_ID, owner });
    },
  };
}
