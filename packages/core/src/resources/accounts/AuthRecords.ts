import { createHash, randomBytes } from 'node:crypto';
import { DuplicateKeyError } from '../../store/Store.js';
import type { Doc, StoreCollection } from '../../store/Store.js';

/** How often expired records are swept at most. */
const SWEEP_EVERY_MS = 60_000;

/**
 * Short-lived records of the account flows (OAuth state, MFA login tokens) and single-use claims,
 * in svc's own `_auth` collection, under ids that start with the kind and the user collection's
 * path. A claim is an insert under a unique id: the one atomic test-and-set that both stores give
 * (FerretDB v1's updates are read-modify-write, its inserts are refused by the unique `_id`), so
 * two parallel requests can never both use one code.
 *
 * Why not one collection with AccountTokens' `_accounts`: both hold expiring records swept by
 * `expiresAt`, but `_auth` also holds permanent ones (identity links, used recovery codes, the
 * signing key). A merge would need a start-up migration of those, and while processes of two
 * versions share a store (a rolling upgrade with --redis), one reading each collection, a used
 * recovery code could be used again and an identity link be missed (a duplicate user). One fewer
 * collection name is not worth that; the two never read each other's records.
 */
export class AuthRecords {
  private lastSweep = 0;
  private key: Promise<Buffer> | undefined;

  constructor(
    private readonly store: StoreCollection,
    private readonly path: string,
  ) {}

  /** The sweep removes by `expiresAt`: indexed, so that it reads only the expired records. */
  async init(): Promise<void> {
    await this.store.ensureIndex({ field: 'expiresAt' });
  }

  /** The record's id: kind, collection and the SHA-256 of the key (a secret never stored as given). */
  idOf(kind: string, key: string): string {
    return `${kind}:${this.path}:${sha256(key)}`;
  }

  async put(kind: string, key: string, data: Record<string, unknown>, ttlMs: number): Promise<void> {
    this.sweepSometimes();
    await this.store.insert({ id: this.idOf(kind, key), ...data, expiresAt: Date.now() + ttlMs });
  }

  /** The record, or undefined when there is none or it expired. */
  async get(kind: string, key: string): Promise<Doc | undefined> {
    const doc = await this.store.findOne({ id: this.idOf(kind, key) });
    if (doc === null || typeof doc.expiresAt !== 'number' || doc.expiresAt <= Date.now()) return undefined;
    return doc;
  }

  /** A permanent record (an identity's user), or undefined. */
  async find(kind: string, key: string): Promise<Doc | undefined> {
    return (await this.store.findOne({ id: this.idOf(kind, key) })) ?? undefined;
  }

  /**
   * Claims `key` once: true for the first caller, false for every other, concurrent or later (while
   * the claim lives: `ttlMs`, long enough for what it guards to expire, or Infinity).
   */
  async claim(kind: string, key: string, ttlMs: number, data: Record<string, unknown> = {}): Promise<boolean> {
    this.sweepSometimes();
    try {
      await this.store.insert({ id: this.idOf(kind, key), ...data, expiresAt: ttlMs === Infinity ? Number.MAX_SAFE_INTEGER : Date.now() + ttlMs });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /** Adds one event under `key` (a wrong code for a login token) and answers how many there are now. */
  async note(kind: string, key: string, ttlMs: number): Promise<number> {
    const of = this.idOf(kind, key);
    await this.store.insert({ id: `${of}:${randomBytes(8).toString('hex')}`, of, expiresAt: Date.now() + ttlMs });
    return this.store.count({ of });
  }

  async remove(kind: string, key: string): Promise<void> {
    await this.store.remove({ id: this.idOf(kind, key) });
  }

  /** Removes records by a filter on their data (a deleted user's identities). */
  async removeWhere(filter: Record<string, unknown>): Promise<void> {
    await this.store.remove(filter);
  }

  /**
   * The key that signs what svc hands the browser to keep (the OAuth login state), made by the
   * first process that needs it and shared by all through the store.
   */
  signingKey(): Promise<Buffer> {
    this.key ??= this.loadKey().catch((err: unknown) => {
      this.key = undefined;
      throw err;
    });
    return this.key;
  }

  private async loadKey(): Promise<Buffer> {
    const id = 'key:signing';
    const read = async () => {
      const doc = await this.store.findOne({ id });
      return typeof doc?.key === 'string' && /^[0-9a-f]{64}$/.test(doc.key) ? Buffer.from(doc.key, 'hex') : undefined;
    };
    const found = await read();
    if (found) return found;
    try {
      await this.store.insert({ id, key: randomBytes(32).toString('hex'), expiresAt: Number.MAX_SAFE_INTEGER });
    } catch (err) {
      // Another process made it first (the id is unique): use theirs.
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    const made = await read();
    if (!made) throw new Error('auth: could not store the signing key');
    return made;
  }

  private sweepSometimes(): void {
    const now = Date.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    // Expired records are refused when read already; the sweep only keeps the collection small.
    void this.store.remove({ expiresAt: { $lt: now } }).catch(() => undefined);
  }
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}
