import { hash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';
import { isSvcError } from './errors.js';
import { createSessionId } from './ids.js';
import type { Filter, StoreCollection } from './store/Store.js';

/** A stored session. */
export interface SessionRecord {
  id: string;
  uid?: string;
  path?: string;
  createdAt: number;
  lastSeen: number;
  /** Not stored: a visitor without a login (see SessionManager). */
  anonymous?: boolean;
}

/**
 * Told the ids of stored sessions that just ended (logout, credentials changed, user deleted,
 * idle expiry): realtime unbinds their sockets. The ending call waits for it, so that whatever
 * follows (the HTTP answer, an emit) comes after; a listener must not throw.
 */
export type SessionEndListener = (sessionIds: readonly string[]) => void | Promise<void>;

/** Options of the {@link SessionManager}. */
export interface SessionManagerOptions {
  /** Idle time after which a session expires, seconds. Default 30 days. */
  idleSeconds?: number;
  /** How stale `lastSeen` may get before a request refreshes it, seconds. Default one hour. */
  touchSeconds?: number;
}

const DAY = 24 * 60 * 60;
/** 128 hex characters (64 random bytes, as Deployd's); 64 are still read: ids from svc 0.1 before the change. */
const SESSION_ID = /^(?:[0-9a-f]{64}){1,2}$/;
const ANON_LENGTH = 128;
/** The document holding the key that signs anonymous ids; never a valid session id itself. */
const SECRET_ID = 'svc:anonymous-session-key';
/** Anonymous id: 48 random bytes, then the first 16 bytes of their HMAC (128 hex in all, like a stored id). */
const ANON_RANDOM = 48;
const ANON_MAC = 16;
/**
 * Random parts of anonymous ids made at once: one draw from the system's generator per this many
 * new ids instead of one per id (randomBytes of 48 bytes costs more than the rest of making an id,
 * a getpid() system call among it). Each part is handed out once.
 */
const ANON_RANDOM_BATCH = 64;
/** Verified anonymous ids remembered (a few MB at most). */
const VERIFIED_MAX = 10_000;
/** Sessions ended per batch (one store removal, one notice to the listeners). */
const END_BATCH = 1000;
/** Batches per sweep (the rest waits for the next), and per user whose sessions all end. */
const SWEEP_BATCHES = 100;
const END_BATCHES = 1000;

/**
 * Sessions live in the store so that several server processes share them. A sid that is not a
 * stored, unexpired session is treated as no session at all (forged, expired or destroyed ids
 * alike).
 *
 * A visitor without a login costs no store write: its session id is random bytes signed with a
 * key kept in the store (so every process shares it), recognised by its signature alone. Only a
 * login stores a session. An anonymous id cannot be forged (it needs the key), and nothing is kept
 * for it in memory either.
 */
export class SessionManager {
  readonly idleSeconds: number;
  private readonly touchMs: number;

  constructor(
    private readonly store: StoreCollection,
    options: SessionManagerOptions = {},
  ) {
    this.idleSeconds = options.idleSeconds ?? 30 * DAY;
    this.touchMs = (options.touchSeconds ?? Math.min(3600, this.idleSeconds / 10)) * 1000;
  }

  private readonly endListeners = new Set<SessionEndListener>();

  /** Calls `listener` with the ids of every stored session that ends, by any path; answers a function that unsubscribes. */
  onEnd(listener: SessionEndListener): () => void {
    this.endListeners.add(listener);
    return () => this.endListeners.delete(listener);
  }

  private async ended(ids: readonly string[]): Promise<void> {
    if (ids.length === 0 || this.endListeners.size === 0) return;
    // The session is gone from the store already: a failing listener must not fail the logout.
    await Promise.allSettled([...this.endListeners].map(async (listener) => listener(ids)));
  }

  /**
   * The two messages HMAC-SHA256 hashes, each after its key block (key XOR ipad, key XOR opad),
   * made once: signing writes the random part, then the inner hash, into them (no buffer is made
   * per signature; hashing is synchronous, so nothing else writes them meanwhile).
   */
  private macInput: { inner: Buffer; outer: Buffer } | undefined;
  /** Random parts not handed out yet: `randomAt` onwards (see ANON_RANDOM_BATCH). */
  private randoms = Buffer.alloc(0);
  private randomAt = 0;
  /** A new id's bytes (random part, then its signature), written before it is turned into hex. */
  private readonly idBytes = Buffer.alloc(ANON_RANDOM + ANON_MAC);

  async init(): Promise<void> {
    await this.store.ensureIndex({ field: 'uid' });
    const key = await this.loadKey();
    const block = (pad: number, rest: number) => Buffer.concat([Buffer.from(Buffer.concat([key, Buffer.alloc(64 - key.length)]).map((b) => b ^ pad)), Buffer.alloc(rest)]);
    this.macInput = { inner: block(0x36, ANON_RANDOM), outer: block(0x5c, 32) };
  }

  /** The signing key of anonymous ids, made by the first process that needs it. */
  private async loadKey(): Promise<Buffer> {
    const read = async () => {
      const doc = (await this.store.findOne({ id: SECRET_ID })) as { key?: unknown } | null;
      return typeof doc?.key === 'string' && /^[0-9a-f]{64}$/.test(doc.key) ? Buffer.from(doc.key, 'hex') : undefined;
    };
    const found = await read();
    if (found) return found;
    let failure: unknown;
    try {
      // lastSeen far ahead: the sweep of idle sessions never removes it.
      await this.store.insert({ id: SECRET_ID, key: randomBytes(32).toString('hex'), createdAt: Date.now(), lastSeen: Number.MAX_SAFE_INTEGER });
    } catch (err) {
      // Another process inserted it first (ids are unique): use theirs. Or the disk is full: say so.
      failure = err;
    }
    const made = await read();
    if (!made) throw failure ?? new Error('sessions: could not store the anonymous session key');
    return made;
  }

  /**
   * HMAC-SHA256 (RFC 2104) of the random part, truncated, from two one-shot hashes: it runs on
   * every request of an anonymous visitor, and createHmac costs several times more (bench/RESULTS.md, "Figures from code comments").
   */
  private sign(random: Buffer): Buffer {
    const input = this.macInput;
    if (!input) throw new Error('sessions: init() was not called');
    random.copy(input.inner, 64, 0, ANON_RANDOM);
    hash('sha256', input.inner, 'buffer').copy(input.outer, 64);
    return hash('sha256', input.outer, 'buffer').subarray(0, ANON_MAC);
  }

  /**
   * Anonymous ids whose signature was checked, most recent last: a returning visitor's request
   * skips the two hashes (bench/RESULTS.md, "Figures from code comments"). Only genuine ids get in (a forged
   * one cannot), and the map is bounded.
   */
  private readonly verified = new Map<string, true>();
  /**
   * Per connection (a request's socket), the anonymous id it presented last, verified: a
   * keep-alive connection sends the same id with each request, and comparing the two costs less
   * than a lookup in `verified`, which hashes each request's new 128-character string (bench/RESULTS.md, "Figures from code comments").
   * Held weakly: a closed connection's entry goes with it.
   */
  private readonly lastOnConnection = new WeakMap<object, string>();
  /**
   * Per connection, the last well-formed id it presented that is not an anonymous one (a stored
   * session's, or one that names none): whether an id is anonymous depends on the id alone (its
   * signature under the key), so a logged-in client's keep-alive connection has its id's two
   * hashes made once, not twice per request (anonymous(), then load()). Held weakly, as above.
   */
  private readonly storedOnConnection = new WeakMap<object, string>();

  /**
   * Well-formed ids of anonymous length found not to be anonymous (a stored session's, or a forged
   * one), most recent last: whether an id is anonymous depends on the id alone (its signature under
   * the key), so a logged-in client's request skips the pattern and the two hashes on any
   * connection, not only on the one that presented it last (a server behind a proxy, or a load
   * generator, sends many users' requests over each connection: ~9 µs per request, bench/RESULTS.md
   * "Issue 39, round 12"). Only ids that passed the pattern get in, and the map is bounded.
   */
  private readonly notAnonymous = new Map<string, true>();

  /** Whether a well-formed id (every caller has tested SESSION_ID, or made the id) is an anonymous visitor's. */
  private isAnonymous(sid: string): boolean {
    if (sid.length !== ANON_LENGTH) return false;
    if (this.verified.has(sid)) return true;
    if (this.notAnonymous.has(sid)) return false;
    const bytes = Buffer.from(sid, 'hex');
    const mac = bytes.subarray(ANON_RANDOM);
    const genuine = timingSafeEqual(mac, this.sign(bytes.subarray(0, ANON_RANDOM)));
    const known = genuine ? this.verified : this.notAnonymous;
    if (known.size >= VERIFIED_MAX) known.delete(known.keys().next().value as string);
    known.set(sid, true);
    return genuine;
  }

  /**
   * The record of an anonymous visitor's signed id, at once (no store read, no promise), or
   * undefined when `sid` is not one (then `load` decides).
   */
  anonymous(sid: string | undefined, connection?: object): SessionRecord | undefined {
    if (sid === undefined || sid.length !== ANON_LENGTH) return undefined;
    if (connection === undefined || this.lastOnConnection.get(connection) !== sid) {
      if (connection !== undefined && this.storedOnConnection.get(connection) === sid) return undefined;
      // A remembered id passed the pattern and the signature before: neither is run again.
      if (!this.verified.has(sid)) {
        if (!this.notAnonymous.has(sid) && !SESSION_ID.test(sid)) return undefined;
        if (!this.isAnonymous(sid)) {
          if (connection !== undefined) this.storedOnConnection.set(connection, sid);
          return undefined;
        }
      }
      if (connection !== undefined) this.lastOnConnection.set(connection, sid);
    }
    const now = Date.now();
    return { id: sid, createdAt: now, lastSeen: now, anonymous: true };
  }

  /**
   * The session of a sid cookie or bearer token: an anonymous visitor's record, the stored session,
   * or null. `connection`: the request's socket, whose last id anonymous() found not anonymous is
   * not hashed again.
   */
  async load(sid: string | undefined, connection?: object): Promise<SessionRecord | null> {
    // An id remembered as not anonymous passed the pattern before.
    if (sid === undefined || (!this.notAnonymous.has(sid) && !SESSION_ID.test(sid))) return null;
    const stored = connection !== undefined && this.storedOnConnection.get(connection) === sid;
    if (!stored && this.isAnonymous(sid)) {
      const now = Date.now();
      return { id: sid, createdAt: now, lastSeen: now, anonymous: true };
    }
    const doc = await this.loadStored(sid);
    if (doc === null) return null;
    const now = Date.now();
    if (now - doc.lastSeen > this.touchMs) {
      doc.lastSeen = now;
      await this.store.update({ id: sid }, { $set: { lastSeen: now } }).catch(unlessDiskRefused);
    }
    return doc;
  }

  /**
   * The stored (logged-in) session of `sid`, or null, without counting as a visit: `lastSeen` is
   * not refreshed (realtime checks the sessions of open sockets with it). An expired one is removed.
   */
  async check(sid: string): Promise<SessionRecord | null> {
    if (!SESSION_ID.test(sid) || sid === SECRET_ID || this.isAnonymous(sid)) return null;
    return this.loadStored(sid);
  }

  private async loadStored(sid: string): Promise<SessionRecord | null> {
    const doc = (await this.store.findOne({ id: sid })) as SessionRecord | null;
    if (doc === null) return null;
    if (Date.now() - doc.lastSeen > this.idleSeconds * 1000) {
      // On a disk that refuses writes (full, failing) the record stays until the sweep can remove
      // it, but the session has ended all the same (not made the request's failure).
      const removed = await this.store.remove({ id: sid }).then(
        (n) => n > 0,
        (err: unknown) => {
          unlessDiskRefused(err);
          return true;
        },
      );
      if (removed) await this.ended([sid]);
      return null;
    }
    return doc;
  }

  /** A new anonymous session: a signed id, nothing stored. */
  create(): Promise<SessionRecord> {
    return Promise.resolve(this.createNow());
  }

  /** {@link create}, at once (no promise): a request without any session id gets one before it is answered. */
  createNow(): SessionRecord {
    const now = Date.now();
    if (this.randomAt + ANON_RANDOM > this.randoms.length) {
      // A memory of its own, not a slice of Buffer's shared pool (whose other slices are other code's).
      this.randoms = randomFillSync(Buffer.allocUnsafeSlow(ANON_RANDOM * ANON_RANDOM_BATCH));
      this.randomAt = 0;
    }
    const random = this.randoms.subarray(this.randomAt, this.randomAt + ANON_RANDOM);
    this.randomAt += ANON_RANDOM;
    const bytes = this.idBytes;
    random.copy(bytes, 0);
    this.sign(random).copy(bytes, ANON_RANDOM);
    const id = bytes.toString('hex');
    return { id, createdAt: now, lastSeen: now, anonymous: true };
  }

  /**
   * Binds a user to a session under a fresh id (so an id known before login is worthless after
   * it) and removes the old one. That is no end: the same client goes on under the new id
   * (realtime moves its sockets on the server's session change).
   */
  async login(previousId: string | undefined, uid: string, path: string): Promise<SessionRecord> {
    const now = Date.now();
    let id = createSessionId();
    // A stored id must never read as an anonymous one (a 2^-64 chance).
    while (this.isAnonymous(id)) id = createSessionId();
    const record: SessionRecord = { id, uid, path, createdAt: now, lastSeen: now };
    await this.store.insert({ ...record });
    if (previousId !== undefined && previousId !== SECRET_ID) await this.store.remove({ id: previousId });
    return record;
  }

  /**
   * Tells the listeners that these stored sessions ended by other means: a restore of the store
   * removed them (realtime then closes their sockets).
   */
  async endedElsewhere(ids: readonly string[]): Promise<void> {
    await this.ended(ids.filter((id) => id !== SECRET_ID));
  }

  /** Destroys a session (logout). */
  async destroy(id: string): Promise<void> {
    if (id === SECRET_ID) return;
    if ((await this.store.remove({ id })) > 0) await this.ended([id]);
  }

  /**
   * Ends every session of a user but one (a changed username or password; none kept: the user
   * was deleted). The sessions found are removed by id, so that each one removed is told ended.
   */
  async endUserSessions(uid: string, keepId?: string): Promise<number> {
    return this.removeInBatches(keepId === undefined ? { uid } : { uid, id: { $ne: keepId } }, END_BATCHES);
  }

  /** Removes expired sessions; answers how many. */
  async sweep(now = Date.now()): Promise<number> {
    return this.removeInBatches({ lastSeen: { $lt: now - this.idleSeconds * 1000 }, id: { $ne: SECRET_ID } }, SWEEP_BATCHES);
  }

  /** Ends the sessions matching `filter`, a batch of ids at a time (the listeners get each batch). */
  private async removeInBatches(filter: Filter, batches: number): Promise<number> {
    let removed = 0;
    for (let batch = 0; batch < batches; batch++) {
      const found = await this.store.find(filter, { fields: { id: 1 }, limit: END_BATCH });
      removed += await this.removeEnded(found.map((d) => d.id));
      if (found.length < END_BATCH) break;
    }
    return removed;
  }

  private async removeEnded(ids: string[]): Promise<number> {
    const end = ids.filter((id) => id !== SECRET_ID);
    if (end.length === 0) return 0;
    const removed = await this.store.remove({ id: { $in: end } });
    await this.ended(end);
    return removed;
  }
}

/** Lets a write the disk refused (507 STORAGE_FULL, 503 STORAGE_FAILED) pass; throws anything else. */
function unlessDiskRefused(err: unknown): void {
  if (!isSvcError(err) || (err.code !== 'STORAGE_FULL' && err.code !== 'STORAGE_FAILED')) throw err;
}
