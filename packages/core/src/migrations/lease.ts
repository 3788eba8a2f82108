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
}

/** The lock, held. */
export interface Lease {
  readonly owner: string;
  /** Throws {@link LeaseLostError} when the lock is known lost or past its time (no renewal answered). */
  check(): void;
  /**
   * Called before every write: answers when the lock is surely this process's for a while yet
   * (a third of the lease at least), renewing it first when the timer's renewals have not kept it
   * so (a slow database); throws {@link LeaseLostError} when the renewal finds it taken, or cannot
   * renew it before it ends. A holder that lost it never writes again.
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
  const leaseMs = options.leaseMs ?? 120_000;
  const pollMs = options.pollMs ?? 250;
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
        return hold(coll, owner, leaseMs);
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
      held = (await coll.findOne({ id: LOCK_ID })) as LockDoc | null;
      if (held !== null && (held.expires < Date.now() || isGone(held, host))) {
        const taken = await coll.update({ id: LOCK_ID, owner: held.owner, expires: held.expires }, { $set: { owner, host, pid: process.pid, expires: Date.now() + leaseMs, since: mine.since } });
        if (taken !== null && taken.owner === owner) return hold(coll, owner, leaseMs);
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

function hold(coll: StoreCollection, owner: string, leaseMs: number): Lease {
  held.add(owner);
  let lost: Error | undefined;
  let renewing: Promise<void> | undefined;
  let released = false;
  // Until when the lock is surely this process's: past it, another may have taken it. A renewal
  // moves it to the time it was *sent* plus the lease (the store may have written it late).
  let holdsUntil = Date.now() + leaseMs;
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
      if (lost) throw lost;
      // Less than a third of the lease left: renew before writing (wait for the store to answer).
      while (!lost && !released && holdsUntil - Date.now() < leaseMs / 3 && Date.now() <= holdsUntil) {
        await renew();
        if (holdsUntil - Date.now() < leaseMs / 3) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, leaseMs / 20)));
      }
      if (Date.now() > holdsUntil && !lost) {
        // Past its time: the lock may be another's now. Ours still (no one took it meanwhile), the
        // compare-and-set on the owner renews it; taken, it answers null and this holder stops.
        await renew();
        if (!lost && Date.now() > holdsUntil) lost = new LeaseLostError('the migrations\' lock could not be renewed in time (the store did not answer): stopping');
      }
      if (lost) throw lost;
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
