import { createHash, randomBytes, randomInt } from 'node:crypto';
import { DuplicateKeyError } from '../../store/Store.js';
import type { Doc, StoreCollection } from '../../store/Store.js';

/** What a token is for. */
export type TokenKind = 'reset' | 'verification' | 'login' | 'code';

/** A stored token or code: only its hash is kept. */
export interface TokenRecord extends Doc {
  kind: TokenKind;
  /** The user collection's path. */
  path: string;
  /** The user it was made for; absent on the stand-in made for an unknown address. */
  uid?: string;
  /** The address it was sent to (verification: the address being confirmed). */
  email: string;
  /** Verification: the user's address when the token was made (a later change voids it). */
  from?: string;
  /** Codes: the hash of the code (the record's id is per address, not per code). */
  codeHash?: string;
  /** Random per issue: the single-use claim is made on it. */
  nonce: string;
  expiresAt: number;
}

/** 32 random bytes in base64url: the only token shape ever accepted. */
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const SWEEP_EVERY_MS = 10 * 60_000;
/** How long a used token's claim is kept: longer than any token lives. */
const CLAIM_KEEP_MS = 31 * 24 * 60 * 60_000;

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Account tokens (reset, verification, magic links) and one-time codes, in the store's `_accounts`
 * collection shared by every process. A token is 32 random bytes sent by mail; the store keeps
 * its SHA-256 only, so a copy of the store grants nothing.
 *
 * Single use does not rest on a conditional update (FerretDB's are not atomic): a use first
 * inserts a claim record whose id is derived from the issue's nonce; the store's unique id makes
 * exactly one of any number of parallel uses win, on every store.
 */
export class AccountTokens {
  private lastSweep = 0;

  constructor(
    private readonly store: StoreCollection,
    private readonly path: string,
  ) {}

  async init(): Promise<void> {
    await this.store.ensureIndex({ field: 'expiresAt' });
  }

  /** Makes and stores a token; answers the token itself (to be mailed, never stored). */
  async issue(kind: Exclude<TokenKind, 'code'>, fields: { uid: string | undefined; email: string; from?: string }, ttlMs: number): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const record: TokenRecord = {
      id: `t:${sha256(token)}`,
      kind,
      path: this.path,
      email: fields.email,
      nonce: randomBytes(16).toString('hex'),
      expiresAt: Date.now() + ttlMs,
      ...(fields.uid !== undefined ? { uid: fields.uid } : {}),
      ...(fields.from !== undefined ? { from: fields.from } : {}),
    };
    await this.store.insert(record);
    this.sweepNow();
    return token;
  }

  /** The unexpired record of a token of this kind and collection, or null (unknown, used, expired, other kind). */
  async find(kind: TokenKind, token: string): Promise<TokenRecord | null> {
    const record = (await this.store.findOne({ id: `t:${sha256(token)}` })) as TokenRecord | null;
    return record !== null && record.kind === kind && record.path === this.path && record.expiresAt > Date.now() ? record : null;
  }

  /**
   * Makes a new one-time code for an address (replacing the one before); answers the code. The
   * record is per (collection, address), so that guesses at one address hit one record.
   */
  async issueCode(uid: string | undefined, email: string, length: number, ttlMs: number): Promise<string> {
    const code = String(randomInt(0, 10 ** length)).padStart(length, '0');
    const id = this.codeId(email);
    const nonce = randomBytes(16).toString('hex');
    const record: TokenRecord = {
      id,
      kind: 'code',
      path: this.path,
      email,
      codeHash: sha256(`${nonce}\n${code}`),
      nonce,
      expiresAt: Date.now() + ttlMs,
      ...(uid !== undefined ? { uid } : {}),
    };
    await this.store.remove({ id });
    try {
      await this.store.insert(record);
    } catch (err) {
      // Two requests for the same address at once: one code stands, the other is never valid.
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    this.sweepNow();
    return code;
  }

  /** The unexpired code record of an address, or null. */
  async findCode(email: string): Promise<TokenRecord | null> {
    const record = (await this.store.findOne({ id: this.codeId(email) })) as TokenRecord | null;
    return record !== null && record.kind === 'code' && record.expiresAt > Date.now() ? record : null;
  }

  /** Removes the code of an address (its sign-in link was used instead). */
  async removeCode(email: string): Promise<void> {
    await this.store.remove({ id: this.codeId(email) });
  }

  /** Whether `code` is the record's code (compared as hashes, so in constant time over the code). */
  codeMatches(record: TokenRecord, code: string): boolean {
    return record.codeHash === sha256(`${record.nonce}\n${code}`);
  }

  /**
   * Takes one of a code's `max` attempts, right or wrong: true when one was left. Each attempt
   * is an insert of a slot record with its own id (`a:<nonce>:<k>`), so however many guesses
   * arrive at once, on any store (a counter's $inc is not atomic on FerretDB), at most `max`
   * get a slot. With none left the code is removed.
   */
  async takeAttempt(record: TokenRecord, max: number): Promise<boolean> {
    for (let k = 0; k < max; k++) {
      try {
        await this.store.insert({ id: `a:${record.nonce}:${k}`, kind: 'attempt', expiresAt: record.expiresAt });
        return true;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
    await this.store.remove({ id: record.id, nonce: record.nonce });
    return false;
  }

  /** A wrong code: the code is removed when that was its last attempt (`k` counted from 0). */
  async wrongGuess(record: TokenRecord, max: number): Promise<void> {
    if ((await this.store.findOne({ id: `a:${record.nonce}:${max - 1}` }, { fields: { id: 1 } })) !== null) await this.store.remove({ id: record.id, nonce: record.nonce });
  }

  /**
   * Uses a record up: true for exactly one caller however many try at once (the claim's insert
   * is the decision), false for the others. The record itself is removed afterwards.
   */
  async claim(record: TokenRecord): Promise<boolean> {
    try {
      await this.store.insert({ id: `u:${record.nonce}`, kind: 'claim', expiresAt: Date.now() + CLAIM_KEEP_MS });
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
    await this.store.remove({ id: record.id, nonce: record.nonce });
    return true;
  }

  /** Voids every unused token of a kind for a user (a reset voids the other reset links). */
  async voidUser(kind: TokenKind, uid: string): Promise<void> {
    await this.store.remove({ kind, path: this.path, uid });
  }

  private codeId(email: string): string {
    return `c:${sha256(`${this.path}\n${email}`)}`;
  }

  /** Expired records go now and then (a failed sweep is retried at the next one). */
  private sweepNow(): void {
    const now = Date.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    this.store.remove({ expiresAt: { $lt: now } }).catch(() => {
      this.lastSweep = 0;
    });
  }
}
