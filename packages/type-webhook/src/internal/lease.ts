import { randomBytes } from 'node:crypto';
import { DuplicateKeyError } from '@svc/core';
import type { StoreCollection } from '@svc/core';

/** This process, among the processes sharing the store (a lease names its holder's process). */
const BOOT = `${process.pid}-${randomBytes(6).toString('hex')}`;
const LEASE_ID = 'lease';
let instances = 0;

/** Instances of this process waiting for a lease another instance of this process releases (a reload). */
const waiting = new Map<string, Set<() => void>>();

/** Options of a {@link Lease}. */
export interface LeaseOptions {
  /** The store collection holding the lease object. */
  store: StoreCollection;
  /** What the lease is for, to wake this process's other holders when it is released. */
  key: string;
  /** How long a lease lasts unless renewed, ms. */
  ttlMs: number;
  /**
   * True when no other process can serve this store (the embedded store's folder lock): a lease
   * another process holds is then the leftover of a dead one, taken at once.
   */
  soleProcess: boolean;
}

/**
 * Which process (and which version of the resource in it) delivers a webhook's outbox: one lease
 * object in the store, taken and renewed with an atomic conditional update (the store contract's
 * `update` on the first match), so processes on one MongoDB agree without Redis. A holder that
 * stops renewing (killed) loses it after `ttlMs`; with the embedded store at once.
 */
export class Lease {
  readonly owner = `${BOOT}/${++instances}`;
  private until = 0;

  constructor(private readonly options: LeaseOptions) {}

  /** How long the lease lasts unless renewed, ms. */
  get ttlMs(): number {
    return this.options.ttlMs;
  }

  /** Whether this instance holds the lease for at least `marginMs` more (at most a third of the lease). */
  holds(marginMs = 0): boolean {
    return this.until - Math.min(marginMs, this.options.ttlMs / 3) > Date.now();
  }

  /** Takes or renews the lease; answers whether this instance holds it now. */
  async acquire(): Promise<boolean> {
    const now = Date.now();
    const until = now + this.options.ttlMs;
    const takeable: Record<string, unknown>[] = [{ owner: this.owner }, { until: { $lt: now } }];
    if (this.options.soleProcess) takeable.push({ boot: { $ne: BOOT } });
    const store = this.options.store;
    const taken = await store.update({ id: LEASE_ID, $or: takeable }, { $set: { owner: this.owner, boot: BOOT, until } });
    if (taken !== null) {
      this.until = until;
      return true;
    }
    try {
      await store.insert({ id: LEASE_ID, owner: this.owner, boot: BOOT, until });
      this.until = until;
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) {
        this.until = 0;
        return false;
      }
      throw err;
    }
  }

  /**
   * Gives the lease up (if held), waking this process's other instances waiting for it. Rejects
   * when the store cannot be written: the lease then ends when it expires.
   */
  async release(): Promise<void> {
    const held = this.until > 0;
    this.until = 0;
    try {
      if (held) await this.options.store.update({ id: LEASE_ID, owner: this.owner }, { $set: { until: 0 } });
    } finally {
      for (const wake of waiting.get(this.options.key) ?? []) wake();
    }
  }

  /** Calls `wake` when an instance of this process releases the lease; answers how to stop. */
  onRelease(wake: () => void): () => void {
    let set = waiting.get(this.options.key);
    if (set === undefined) waiting.set(this.options.key, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0) waiting.delete(this.options.key);
    };
  }

  /** The holder recorded in the store (the dashboard shows it), or undefined. */
  async holder(): Promise<{ owner: string; until: number; mine: boolean } | undefined> {
    const doc = await this.options.store.findOne({ id: LEASE_ID });
    if (doc === null || typeof doc.owner !== 'string' || typeof doc.until !== 'number' || doc.until < Date.now()) return undefined;
    return { owner: doc.owner, until: doc.until, mine: doc.owner === this.owner };
  }
}
