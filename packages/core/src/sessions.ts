import { createSessionId } from './ids.js';
import type { StoreCollection } from './store/Store.js';

/** A stored session. */
export interface SessionRecord {
  id: string;
  uid?: string;
  path?: string;
  createdAt: number;
  lastSeen: number;
}

/** Options of the {@link SessionManager}. */
export interface SessionManagerOptions {
  /** Idle time after which a session expires, seconds. Default 30 days. */
  idleSeconds?: number;
  /** How stale `lastSeen` may get before a request refreshes it, seconds. Default one hour. */
  touchSeconds?: number;
}

const DAY = 24 * 60 * 60;
const SESSION_ID = /^[0-9a-f]{64}$/;

/**
 * Sessions live in the store so that several server processes share them. A sid that is not a
 * stored, unexpired session is treated as no session at all (forged, expired or destroyed ids
 * alike).
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

  async init(): Promise<void> {
    await this.store.ensureIndex({ field: 'uid' });
  }

  /** The stored session for a sid cookie, or null. */
  async load(sid: string | undefined): Promise<SessionRecord | null> {
    if (sid === undefined || !SESSION_ID.test(sid)) return null;
    const doc = (await this.store.findOne({ id: sid })) as SessionRecord | null;
    if (doc === null) return null;
    const now = Date.now();
    if (now - doc.lastSeen > this.idleSeconds * 1000) {
      await this.store.remove({ id: sid });
      return null;
    }
    if (now - doc.lastSeen > this.touchMs) {
      doc.lastSeen = now;
      await this.store.update({ id: sid }, { $set: { lastSeen: now } });
    }
    return doc;
  }

  /** A new anonymous session, stored. */
  async create(): Promise<SessionRecord> {
    const now = Date.now();
    const record: SessionRecord = { id: createSessionId(), createdAt: now, lastSeen: now };
    await this.store.insert({ ...record });
    return record;
  }

  /**
   * Binds a user to a session under a fresh id (so an id known before login is worthless after
   * it) and removes the old one.
   */
  async login(previousId: string | undefined, uid: string, path: string): Promise<SessionRecord> {
    const now = Date.now();
    const record: SessionRecord = { id: createSessionId(), uid, path, createdAt: now, lastSeen: now };
    await this.store.insert({ ...record });
    if (previousId !== undefined) await this.store.remove({ id: previousId });
    return record;
  }

  /** Destroys a session (logout). */
  async destroy(id: string): Promise<void> {
    await this.store.remove({ id });
  }

  /** Ends every session of a user but one (a changed username or password). */
  async endUserSessions(uid: string, keepId?: string): Promise<number> {
    return this.store.remove(keepId === undefined ? { uid } : { uid, id: { $ne: keepId } });
  }

  /** Removes expired sessions; answers how many. */
  async sweep(now = Date.now()): Promise<number> {
    return this.store.remove({ lastSeen: { $lt: now - this.idleSeconds * 1000 } });
  }
}
