import { randomBytes } from 'node:crypto';
import { SvcError } from '../../errors.js';
import type { Doc } from '../../store/Store.js';
import type { Context, Reply } from '../../types.js';
import type { AccountHost, LoginResult } from './AccountHost.js';
import type { MfaSettings } from './authSettings.js';
import { sha256 } from './AuthRecords.js';
import { TOTP_PERIOD_SECONDS, matchTotp, newTotpSecret, otpauthUri } from './totp.js';

/** How long the second step of a login may wait. */
const LOGIN_TOKEN_TTL_MS = 5 * 60_000;
/** A used time step stays claimed past the ±1 step window in which its code is accepted. */
const STEP_CLAIM_TTL_MS = 4 * TOTP_PERIOD_SECONDS * 1000;
const RECOVERY_CODES = 10;
/** Wrong codes one login token may take: then the password must be given again. */
const WRONG_CODES_PER_TOKEN = 5;
const BAD_CODE = 'invalid code';

/** A user's TOTP state, stored beside the user and never answered (store-only `_mfa`). */
interface StoredMfa {
  enabled?: boolean;
  secret?: string;
  /** A secret enrolled but not yet confirmed by a first code. */
  pending?: string;
}

/** Store-only fields of a user that hold the second factor. */
export const MFA_FIELDS = ['_mfa', '_mfaRecovery'] as const;

/**
 * TOTP two-factor (RFC 6238): enrol, confirm, verify a login's second step, disable. Every used
 * code is claimed once (a time step per user, a recovery code forever), so a code cannot be
 * replayed, in parallel either; attempts go through the collection's login limiter.
 */
export class MfaFlow {
  constructor(
    private readonly host: AccountHost,
    private readonly settings: MfaSettings | undefined,
    private readonly collectionName: string,
  ) {}

  /** POST /<users>/mfa/<action>, GET /<users>/mfa. */
  handle(ctx: Context): Promise<Reply> {
    const action = ctx.parts[1];
    if (ctx.parts.length === 1 && ctx.method === 'GET') return this.status(ctx);
    if (ctx.parts.length !== 2 || ctx.method !== 'POST') throw new SvcError('NOT_FOUND', 'not found');
    const body = bodyOf(ctx);
    switch (action) {
      case 'enroll':
        return this.enroll(ctx, body);
      case 'confirm':
        return this.confirm(ctx, body);
      case 'verify':
        return this.verify(ctx, body);
      case 'disable':
        return this.disable(ctx, body);
      default:
        throw new SvcError('NOT_FOUND', 'not found');
    }
  }

  /** Whether a user who passed the first factor must pass a second; if so, the token of that step. */
  async secondStep(user: Doc): Promise<LoginResult | undefined> {
    // Without auth.mfa there is no way to give a code: nothing is asked.
    if (this.settings === undefined) return undefined;
    const enabled = mfaOf(user).enabled === true;
    if (!enabled && this.settings?.required !== true) return undefined;
    const mfaToken = randomBytes(32).toString('base64url');
    await this.host.records.put('mfa-login', mfaToken, { uid: user.id, enroll: !enabled }, LOGIN_TOKEN_TTL_MS);
    return { kind: 'mfa', mfaToken, enroll: !enabled };
  }

  private async status(ctx: Context): Promise<Reply> {
    const user = await this.loggedIn(ctx);
    const recovery = Array.isArray(user._mfaRecovery) ? user._mfaRecovery.length : 0;
    return { status: 200, body: { enabled: mfaOf(user).enabled === true, required: this.settings?.required === true, recoveryCodesLeft: recovery } };
  }

  /** A new secret for the logged-in user (or a login whose second step is enrolment). */
  private async enroll(ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    const { user } = await this.enrollingUser(ctx, body);
    const mfa = mfaOf(user);
    if (mfa.enabled === true) throw new SvcError('CONFLICT', 'two-factor authentication is already on; disable it first');
    const secret = newTotpSecret();
    await this.host.updateUser({ id: user.id }, { $set: { _mfa: { ...mfa, pending: secret } } });
    const account = typeof user.username === 'string' ? user.username : user.id;
    return { status: 200, body: { secret, uri: otpauthUri(secret, this.settings?.issuer ?? this.collectionName, account) } };
  }

  /** The first code from the app turns MFA on and answers the recovery codes (once). */
  private async confirm(ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    const { user, loginToken } = await this.enrollingUser(ctx, body);
    const code = codeOf(body);
    const mfa = mfaOf(user);
    if (mfa.enabled === true) throw new SvcError('CONFLICT', 'two-factor authentication is already on');
    if (mfa.pending === undefined) throw new SvcError('BAD_REQUEST', 'no enrolment under way; call mfa/enroll first');
    const attempt = await this.host.attempt(ctx, `mfa:${user.id}`);
    if (!(await this.useTotp(user.id, mfa.pending, code))) throw new SvcError('BAD_CREDENTIALS', BAD_CODE);
    await attempt.succeeded();
    const recoveryCodes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
    const updated = await this.host.updateUser(
      { id: user.id },
      { $set: { _mfa: { enabled: true, secret: mfa.pending }, _mfaRecovery: recoveryCodes.map(recoveryHash) } },
    );
    if (updated === null) throw new SvcError('NOT_FOUND', 'no such user');
    if (loginToken === undefined) return { status: 200, body: { enabled: true, recoveryCodes } };
    // Enrolment was the second step of a login: it ends as the login does.
    const reply = await this.completeLogin(ctx, loginToken, updated);
    return { ...reply, body: { ...(reply.body as object), recoveryCodes } };
  }

  /** POST /<users>/mfa/verify {mfaToken, code}: the second step of a login. */
  private async verify(ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    const token = tokenOf(body);
    const code = codeOf(body);
    const record = await this.host.records.get('mfa-login', token);
    if (record === undefined || record.enroll === true) throw new SvcError('UNAUTHORIZED', 'invalid or expired mfaToken');
    const uid = String(record.uid);
    const attempt = await this.host.attempt(ctx, `mfa:${uid}`);
    const user = await this.host.findById(uid);
    if (user === null || !(await this.useCode(user, code))) {
      // Codes are few (10^6): a token (a known password) gets a few tries, the limiter the rest.
      if ((await this.host.records.note('mfa-wrong', token, LOGIN_TOKEN_TTL_MS)) >= WRONG_CODES_PER_TOKEN) await this.host.records.remove('mfa-login', token);
      throw new SvcError('BAD_CREDENTIALS', BAD_CODE);
    }
    await attempt.succeeded();
    return this.completeLogin(ctx, token, user);
  }

  /** POST /<users>/mfa/disable {code}: a current code (or a recovery code) turns MFA off. */
  private async disable(ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    const user = await this.loggedIn(ctx);
    const code = codeOf(body);
    if (mfaOf(user).enabled !== true) throw new SvcError('CONFLICT', 'two-factor authentication is off');
    const attempt = await this.host.attempt(ctx, `mfa:${user.id}`);
    if (!(await this.useCode(user, code))) throw new SvcError('BAD_CREDENTIALS', BAD_CODE);
    await attempt.succeeded();
    await this.host.updateUser({ id: user.id }, { $unset: { _mfa: true, _mfaRecovery: true } });
    return { status: 200, body: { enabled: false } };
  }

  /** The login token is used once: a second verify with it (even in parallel) is refused. */
  private async completeLogin(ctx: Context, token: string, user: Doc): Promise<Reply> {
    if (!(await this.host.records.claim('mfa-login-used', token, LOGIN_TOKEN_TTL_MS))) throw new SvcError('UNAUTHORIZED', 'invalid or expired mfaToken');
    await this.host.records.remove('mfa-login', token);
    return this.host.startSession(ctx, user);
  }

  /** A TOTP code (its time step claimed) or an unused recovery code (claimed and removed). */
  private async useCode(user: Doc, code: string): Promise<boolean> {
    const mfa = mfaOf(user);
    if (mfa.enabled !== true || mfa.secret === undefined) return false;
    if (/^\d{6}$/.test(code)) return this.useTotp(user.id, mfa.secret, code);
    const hash = recoveryHash(code);
    const hashes = Array.isArray(user._mfaRecovery) ? user._mfaRecovery : [];
    if (!hashes.includes(hash)) return false;
    if (!(await this.host.records.claim('mfa-recovery', `${user.id}:${hash}`, Infinity))) return false;
    await this.host.updateUser({ id: user.id }, { $pull: { _mfaRecovery: [hash] } });
    return true;
  }

  private async useTotp(uid: string, secret: string, code: string): Promise<boolean> {
    const step = matchTotp(secret, code, Date.now());
    if (step === undefined) return false;
    return this.host.records.claim('mfa-step', `${uid}:${step}`, STEP_CLAIM_TTL_MS);
  }

  /** The logged-in user of this collection, as stored. */
  private async loggedIn(ctx: Context): Promise<Doc> {
    const uid = ctx.me?.id;
    if (uid === undefined || ctx.session.path?.toLowerCase() !== this.host.path.toLowerCase()) throw new SvcError('UNAUTHORIZED', 'not logged in');
    const user = await this.host.findById(uid);
    if (user === null) throw new SvcError('UNAUTHORIZED', 'not logged in');
    return user;
  }

  /** Enrolment is by the logged-in user, or by a login whose second step is to enrol (mfa.required). */
  private async enrollingUser(ctx: Context, body: Record<string, unknown>): Promise<{ user: Doc; loginToken?: string }> {
    if (body.mfaToken === undefined) return { user: await this.loggedIn(ctx) };
    const token = tokenOf(body);
    const record = await this.host.records.get('mfa-login', token);
    if (record === undefined || record.enroll !== true) throw new SvcError('UNAUTHORIZED', 'invalid or expired mfaToken');
    const user = await this.host.findById(String(record.uid));
    if (user === null) throw new SvcError('UNAUTHORIZED', 'invalid or expired mfaToken');
    return { user, loginToken: token };
  }
}

function bodyOf(ctx: Context): Record<string, unknown> {
  const body = ctx.body ?? {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new SvcError('BAD_REQUEST', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

/** Strings only: an object or array here (`{"$ne": ""}`) is refused, never compared. */
function codeOf(body: Record<string, unknown>): string {
  const code = body.code;
  if (typeof code !== 'string' || code === '' || code.length > 64) throw new SvcError('BAD_REQUEST', 'code must be a string', { errors: { code: 'must be a string' } });
  return code.replace(/[\s-]/g, '');
}

function tokenOf(body: Record<string, unknown>): string {
  const token = body.mfaToken;
  if (typeof token !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(token)) throw new SvcError('BAD_REQUEST', 'mfaToken must be the string a login answered', { errors: { mfaToken: 'must be a string' } });
  return token;
}

function mfaOf(user: Doc): StoredMfa {
  const mfa = user._mfa;
  if (typeof mfa !== 'object' || mfa === null) return {};
  const { enabled, secret, pending } = mfa as Record<string, unknown>;
  return { enabled: enabled === true, ...(typeof secret === 'string' ? { secret } : {}), ...(typeof pending === 'string' ? { pending } : {}) };
}

/** 10 characters from an alphabet without look-alikes, shown as xxxxx-xxxxx. */
function newRecoveryCode(): string {
  const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789';
  const bytes = randomBytes(10);
  const chars = [...bytes].map((b) => alphabet[b % alphabet.length]).join('');
  return `${chars.slice(0, 5)}-${chars.slice(5)}`;
}

function recoveryHash(code: string): string {
  return sha256(`recovery:${code.replace(/[\s-]/g, '').toLowerCase()}`);
}
