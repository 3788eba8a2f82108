import { randomInt } from 'node:crypto';
import { SvcError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { SessionManager } from '../../sessions.js';
import type { Doc, StoreCollection } from '../../store/Store.js';
import type { Context, Reply } from '../../types.js';
import type { AccountMail, AccountMailer } from './AccountMailer.js';
import type { AccountPolicy } from './accountSettings.js';
import { AccountTokens } from './AccountTokens.js';
import type { TokenRecord } from './AccountTokens.js';
import { bodyOf, codeField, emailField, isEmailAddress, languageOf, passwordField, tokenField } from './accountInput.js';
import { EMAIL_PROOF, emailProof, provesEmail } from './emailProof.js';

/** The result of checking a login method's credential: the user it names (if any) and whether it was right. */
export interface CredentialCheck {
  user: Doc | null;
  ok: boolean;
}

/** What the flows need from their UserCollection. */
export interface AccountUsers {
  readonly path: string;
  readonly store: StoreCollection;
  readonly tokens: StoreCollection;
  readonly logger: () => Logger | undefined;
  readonly sessions: () => SessionManager;
  hashPassword(password: string): Promise<string>;
  /** Stores a change of a user's own fields, mapping a unique index's refusal to a 400. */
  setFields(uid: string, fields: Record<string, unknown>): Promise<Doc | null>;
  /**
   * Logs in through the collection's one login path (login limits, On Login, verification
   * required, the new session) with a credential checked by `check`; `name` is what the limits count.
   */
  login(ctx: Context, name: string, check: () => Promise<CredentialCheck>): Promise<Reply>;
  /** On BeforeReset with the user as `this`: a cancel() refuses the reset (thrown). */
  beforeReset(ctx: Context, user: Doc): Promise<void>;
}

/** The requests the mail-based flows answer: POST /<users>/<name>. */
export const ACCOUNT_ROUTES = ['requestPasswordReset', 'confirmPasswordReset', 'requestVerification', 'confirmVerification', 'requestCode', 'loginWithCode'] as const;
export type AccountRoute = (typeof ACCOUNT_ROUTES)[number];

/** Whether a path segment names an account call (never an object id: ids are hex). */
export function isAccountRoute(name: string | undefined): name is AccountRoute {
  return (ACCOUNT_ROUTES as readonly (string | undefined)[]).includes(name);
}

const INVALID_TOKEN = 'the token is invalid or has expired';
/** The same answer for every request for a mail, whatever became of it (a new object each time: replies may be changed on the way out). */
function mailRequested(): Reply {
  return { status: 202, body: { requested: true } };
}

/**
 * Password reset, email verification and one-time codes / magic links of one UserCollection, by
 * mail. Requests for a mail answer the same whether or not a user has the address, after the same
 * work (a token is made and stored either way; the mail goes out after the answer); tokens are
 * single use under any concurrency (see {@link AccountTokens}).
 */
export class Accounts {
  private readonly tokens: AccountTokens;

  constructor(
    private readonly users: AccountUsers,
    readonly policy: AccountPolicy,
    private readonly mailer: AccountMailer,
  ) {
    this.tokens = new AccountTokens(users.tokens, users.path);
  }

  init(): Promise<void> {
    return this.tokens.init();
  }

  /** Whether this collection answers POST /<users>/<name>. */
  answers(name: string | undefined): name is AccountRoute {
    if (name === 'requestPasswordReset' || name === 'confirmPasswordReset') return this.policy.reset.enabled;
    if (name === 'requestVerification' || name === 'confirmVerification') return this.policy.verification.enabled;
    if (name === 'requestCode' || name === 'loginWithCode') return this.policy.codes.enabled;
    return false;
  }

  async handle(ctx: Context, route: AccountRoute): Promise<Reply> {
    if (ctx.method !== 'POST') throw new SvcError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported; POST ${this.users.path}/${route}`, { headers: { allow: 'POST' } });
    const body = bodyOf(ctx.body);
    switch (route) {
      case 'requestPasswordReset':
        return this.requestMail(ctx, body, 'reset');
      case 'confirmPasswordReset':
        return this.confirmReset(ctx, body);
      case 'requestVerification':
        return this.requestMail(ctx, body, 'verification');
      case 'confirmVerification':
        return this.confirmVerification(body);
      case 'requestCode':
        return this.requestMail(ctx, body, 'code');
      case 'loginWithCode':
        return this.loginWithCode(ctx, body);
    }
  }

  /**
   * A mail is asked for an address. The limits count first; then, for a user with that address
   * (verification: one not yet verified), a token is made and mailed; for anyone else a stand-in
   * token is made and stored all the same (bound to no user, never sent). Same answer either way.
   */
  private async requestMail(ctx: Context, body: Record<string, unknown>, kind: AccountMail['kind']): Promise<Reply> {
    const email = emailField(body);
    await this.countMail(ctx, email);
    const found = await this.users.store.findOne({ email });
    // Verification: also to a user marked verified by root or a script, whose address svc never proved.
    const user = found === null || (kind === 'verification' && found.verified === true && provesEmail(found, email)) ? null : found;
    const language = languageOf(body, headerOf(ctx, 'accept-language'));
    const mail = await this.prepare(kind, user, email, language);
    if (user !== null) this.sendLater(ctx, mail);
    return mailRequested();
  }

  /** Makes the token (or code) of a mail and the mail itself. */
  private async prepare(kind: AccountMail['kind'], user: Doc | null, email: string, language: string | undefined): Promise<AccountMail> {
    const uid = user?.id;
    const values: Record<string, string> = { email, username: typeof user?.username === 'string' ? user.username : '', collection: this.users.path.slice(1) };
    if (kind === 'code') {
      const { codes } = this.policy;
      const code = await this.tokens.issueCode(uid, email, codes.length, codes.expiresMs);
      const token = await this.tokens.issue('login', { uid, email }, codes.expiresMs);
      return { kind, to: email, language, values: { ...values, code, token, link: linkOf(codes.url, token), ...expiryValues(codes.expiresMs) } };
    }
    const policy = kind === 'reset' ? this.policy.reset : this.policy.verification;
    const token = await this.tokens.issue(kind, { uid, email, ...(kind === 'verification' ? { from: email } : {}) }, policy.expiresMs);
    return { kind, to: email, language, values: { ...values, token, link: linkOf(policy.url, token), ...expiryValues(policy.expiresMs) } };
  }

  /**
   * The mail is rendered and sent once the answer has gone out (its response closed), after a
   * random pause of 10 to 50 ms: neither the rendering nor the mail server's time shows in the
   * answer's, and the CPU it takes does not follow the answer at a fixed distance either
   * (bench/accounts-timing.js).
   */
  private sendLater(ctx: Context, mail: AccountMail): void {
    const send = () => {
      this.mailer.send(mail).catch((err: unknown) => {
        this.users.logger()?.warn(`${this.users.path.slice(1)}: the ${mail.kind} mail could not be sent: ${err instanceof Error ? err.message : String(err)}`, { error: err });
      });
    };
    const later = () => setTimeout(send, 10 + randomInt(41));
    const res = ctx.res;
    if (res === undefined || res.closed) later();
    else res.once('close', later);
  }

  /** The unused record of a token of `kind` bound to a user, or a 400 (unknown, expired, used, another kind). */
  private async found(kind: TokenRecord['kind'], token: string): Promise<TokenRecord & { uid: string }> {
    const record = await this.tokens.find(kind, token);
    if (record === null || record.uid === undefined) throw new SvcError('BAD_REQUEST', INVALID_TOKEN);
    return record as TokenRecord & { uid: string };
  }

  /** Uses a record up, or answers 400 when another use of it won. */
  private async claim(record: TokenRecord): Promise<void> {
    if (!(await this.tokens.claim(record))) throw new SvcError('BAD_REQUEST', INVALID_TOKEN);
  }

  /** Uses a token of `kind` up, or answers 400 (unknown, expired, used, another kind, lost a race). */
  private async use(kind: TokenRecord['kind'], token: string): Promise<TokenRecord & { uid: string }> {
    const record = await this.found(kind, token);
    await this.claim(record);
    return record;
  }

  /**
   * A new password from a reset token: stored, the user's other reset links voided, and every
   * session of the user ended (all processes share the store; realtime sockets leave them).
   * A reset proves the address too: the user becomes verified when it is still theirs.
   */
  private async confirmReset(ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    const token = tokenField(body);
    const password = passwordField(body);
    const record = await this.found('reset', token);
    const user = await this.users.store.findOne({ id: record.uid });
    // A link sent to an address the user no longer has is void (the old mailbox may be someone else's now).
    if (user === null || user.email !== record.email) throw new SvcError('BAD_REQUEST', INVALID_TOKEN);
    // Before the claim: a reset the app refuses leaves the token as it was.
    await this.users.beforeReset(ctx, user);
    await this.claim(record);
    const fields: Record<string, unknown> = { password: await this.users.hashPassword(password), [EMAIL_PROOF]: emailProof(record.email) };
    if (this.policy.verification.enabled) fields.verified = true;
    await this.users.setFields(user.id, fields);
    await this.tokens.voidUser('reset', user.id);
    await this.users.sessions().endUserSessions(user.id);
    return { status: 204 };
  }

  /**
   * Confirms an address: the sign-up's (verified becomes true) or a new one asked for by the user
   * (it replaces the old one only now). A token made before the user's address changed is void.
   */
  private async confirmVerification(body: Record<string, unknown>): Promise<Reply> {
    const token = tokenField(body);
    const record = await this.use('verification', token);
    const user = await this.users.store.findOne({ id: record.uid });
    if (user === null || (record.from !== undefined && (typeof user.email === 'string' ? user.email : '') !== record.from)) throw new SvcError('BAD_REQUEST', INVALID_TOKEN);
    // Without a unique index on email, this is where an address stays one user's.
    if ((await this.users.store.findOne({ email: record.email, id: { $ne: user.id } }, { fields: { id: 1 } })) !== null) {
      throw new SvcError('VALIDATION_FAILED', undefined, { errors: { email: 'is already in use' } });
    }
    const updated = await this.users.setFields(user.id, { email: record.email, verified: true, [EMAIL_PROOF]: emailProof(record.email) });
    if (updated === null) throw new SvcError('BAD_REQUEST', INVALID_TOKEN);
    return { status: 200, body: { verified: true, email: record.email } };
  }

  /**
   * Login by a mailed code ({email, code}) or magic link ({token}), through the collection's login
   * path. A code allows `maxAttempts` wrong guesses, then it is gone; either is single use.
   */
  private loginWithCode(ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    if (body.token !== undefined) {
      const token = tokenField(body);
      return this.users.login(ctx, `link\n${token.slice(0, 8)}`, async () => {
        const record = await this.tokens.find('login', token);
        if (record === null || record.uid === undefined) return { user: null, ok: false };
        const user = await this.users.store.findOne({ id: record.uid });
        const ok = user !== null && user.email === record.email && (await this.tokens.claim(record));
        return { user: ok && user !== null ? await this.signedInByMail(user) : user, ok };
      });
    }
    const email = emailField(body);
    const code = codeField(body, this.policy.codes.length);
    return this.users.login(ctx, email, async () => {
      const record = await this.tokens.findCode(email);
      if (record === null) return { user: null, ok: false };
      const user = record.uid === undefined ? null : await this.users.store.findOne({ id: record.uid });
      // Every guess, right or wrong, takes one of the code's attempts first.
      if (!(await this.tokens.takeAttempt(record, this.policy.codes.maxAttempts))) return { user, ok: false };
      if (!this.tokens.codeMatches(record, code)) {
        await this.tokens.wrongGuess(record, this.policy.codes.maxAttempts);
        return { user, ok: false };
      }
      const ok = user !== null && user.email === record.email && (await this.tokens.claim(record));
      return { user: ok && user !== null ? await this.signedInByMail(user) : user, ok };
    });
  }

  /**
   * A code or link sign-in: the code and the links of the same mails are void now (one sign-in
   * per mail), and the address is proved: the user is verified from then on.
   */
  private async signedInByMail(user: Doc): Promise<Doc> {
    await this.tokens.voidUser('login', user.id);
    if (typeof user.email !== 'string') return user;
    await this.tokens.removeCode(user.email);
    const verify = this.policy.verification.enabled && user.verified !== true;
    if (!verify && provesEmail(user, user.email)) return user;
    return (await this.users.setFields(user.id, { [EMAIL_PROOF]: emailProof(user.email), ...(verify ? { verified: true } : {}) })) ?? user;
  }

  /**
   * Counts a mail asked for `email` by ctx's client; a 429 when either is over its limit. Asked
   * before the address is looked up, so the answer does not depend on whether a user has it.
   */
  async countMail(ctx: Context, email: string): Promise<void> {
    const retryAfter = await this.mailer.limit(clientOf(ctx), email);
    if (retryAfter > 0) throw new SvcError('TOO_MANY_REQUESTS', 'too many mails asked; try again later', { headers: { 'retry-after': String(retryAfter) } });
  }

  /**
   * Sign-up: the verification mail to the new user's address (when it has one). Counted by the
   * mail limits; over them the user is still created, without the mail (requestVerification
   * sends one later), so that sign-ups cannot flood an address.
   */
  async signedUp(ctx: Context, user: Doc): Promise<void> {
    if (!this.policy.verification.enabled || !isEmailAddress(user.email)) return;
    if ((await this.mailer.limit(clientOf(ctx), user.email)) > 0) {
      this.users.logger()?.warn(`${this.users.path.slice(1)}: no verification mail for a new user: the mail limits for the address or the client are reached`);
      return;
    }
    this.sendLater(ctx, await this.prepare('verification', user, user.email, languageOf({}, headerOf(ctx, 'accept-language'))));
  }

  /**
   * A user asked for a new address: it is mailed a verification token and replaces the old one
   * only once confirmed (see confirmVerification). The caller counted the mail (countMail) before
   * the update, so that a refused mail leaves the object unchanged.
   */
  async emailChangeAsked(ctx: Context, user: Doc, email: string): Promise<void> {
    const token = await this.tokens.issue('verification', { uid: user.id, email, from: typeof user.email === 'string' ? user.email : '' }, this.policy.verification.expiresMs);
    const values = { email, username: typeof user.username === 'string' ? user.username : '', collection: this.users.path.slice(1), token, link: linkOf(this.policy.verification.url, token), ...expiryValues(this.policy.verification.expiresMs) };
    this.sendLater(ctx, { kind: 'verification', to: email, language: languageOf({}, headerOf(ctx, 'accept-language')), values });
  }
}

function linkOf(url: string | undefined, token: string): string {
  return url === undefined ? token : url.replaceAll('{token}', encodeURIComponent(token));
}

/**
 * How long a mail's token or code works: `expiresMinutes` (a number, for templates written before)
 * and `expires` in words, in the largest unit that says it exactly ('10 minutes', '1 hour',
 * '90 minutes', '1 day', '30 days'): a reader should not have to divide 1440 by 60.
 */
function expiryValues(ms: number): { expires: string; expiresMinutes: string } {
  const minutes = Math.round(ms / 60_000);
  const [count, unit] = minutes % 1440 === 0 ? [minutes / 1440, 'day'] : minutes % 60 === 0 ? [minutes / 60, 'hour'] : [minutes, 'minute'];
  return { expires: `${count} ${unit}${count === 1 ? '' : 's'}`, expiresMinutes: String(minutes) };
}

function headerOf(ctx: Context, name: string): string | undefined {
  const value = ctx.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** Who asks: the request's client (behind trusted proxies, the one they name). */
export function clientOf(ctx: Context): string {
  return ctx.internal || ctx.req === undefined ? 'internal' : ctx.scope.client;
}
