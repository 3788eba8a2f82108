import type { Doc } from '../../store/Store.js';
import type { Context, PropertyDef, Reply } from '../../types.js';
import type { LoginAttempt } from '../loginLimiter.js';
import type { AuthRecords } from './AuthRecords.js';

/**
 * What the account flows (OAuth, MFA) need of their UserCollection: the one login path it owns
 * (limits, On Login, the session), so that every method goes through the same steps.
 */
export interface AccountHost {
  readonly path: string;
  readonly properties: Readonly<Record<string, PropertyDef>>;
  readonly records: AuthRecords;
  /** A login limiter attempt (429 thrown when refused; waits out a slowdown). */
  attempt(ctx: Context, key: string): Promise<LoginAttempt>;
  findById(id: string): Promise<Doc | null>;
  findOne(filter: Record<string, unknown>): Promise<Doc | null>;
  find(filter: Record<string, unknown>): Promise<Doc[]>;
  /** Sets store-only fields (`_mfa`, `_identities`) of a user; answers the user after, or null. */
  updateUser(filter: Record<string, unknown>, ops: { $set?: Record<string, unknown>; $unset?: Record<string, true>; $pull?: Record<string, unknown[]>; $addToSet?: Record<string, unknown[]> }): Promise<Doc | null>;
  /** Creates a user through POST's path (scripts, validation), without a password. */
  createUser(ctx: Context, body: Record<string, unknown>): Promise<Doc>;
  /** Runs On Login for a successful login by another method (a cancel throws). */
  onLogin(ctx: Context, user: Doc): Promise<void>;
  /** After the first factor: the MFA step when due, else the session (as /login answers it). */
  finishLogin(ctx: Context, user: Doc): Promise<LoginResult>;
  /** Starts the user's session: the answer of /login (session record, sid cookie). */
  startSession(ctx: Context, user: Doc): Promise<Reply>;
  /** True when a cookie for this request would be Secure (https, or cross-site cookies). */
  secureCookies(ctx: Context): boolean;
}

/** The end of a first factor: a session, or the second step to take. */
export type LoginResult = { kind: 'session'; reply: Reply } | { kind: 'mfa'; mfaToken: string; enroll: boolean };
