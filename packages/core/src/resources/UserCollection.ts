import { isDeepStrictEqual } from 'node:util';
import { RuleError } from '../access/parseRule.js';
import { SvcError, isSvcError } from '../errors.js';
import { compileFilter } from '../query/compileQuery.js';
import type { ClientShape, ResourceHost, UserResource } from '../resource.js';
import type { Doc, StoreCollection } from '../store/Store.js';
import type { Context, PropertyDef, Reply } from '../types.js';
import { Collection } from './Collection.js';
import type { CollectionOptions } from './Collection.js';
import type { EventOutcome } from './events.js';
import { LoginLimiter } from './loginLimiter.js';
import type { LoginAttempt, LoginLimiterOptions, LoginLimits } from './loginLimiter.js';
import { DEFAULT_PASSWORD_COST, dummyHash, hashPassword, isLegacyHash, verifyPassword } from './passwords.js';
import { AccountFlows, ACCOUNT_FIELDS } from './accounts/AccountFlows.js';
import type { AuthSettings } from './accounts/authSettings.js';
import { Accounts, isAccountRoute } from './accounts/Accounts.js';
import type { CredentialCheck } from './accounts/Accounts.js';
import type { AccountMailer } from './accounts/AccountMailer.js';
import type { AccountPolicy } from './accounts/accountSettings.js';
import { isEmailAddress } from './accounts/accountInput.js';
import { EMAIL_PROOF, provesEmail } from './accounts/emailProof.js';

/** Options of a {@link UserCollection}. */
export interface UserCollectionOptions extends CollectionOptions {
  /** bcrypt cost; default 10. */
  passwordCost?: number;
  loginRateLimit?: LoginLimiterOptions;
  /** `auth` of config.json: OAuth/OIDC providers and MFA (see docs/accounts.md). */
  auth?: AuthSettings;
  /** svc's own `_auth` collection (OAuth states, identities, used codes); needed by `auth`. */
  authStore?: StoreCollection;
  /** Mail-based account flows (config.json `auth`): docs/accounts.md. */
  accounts?: UserAccountOptions;
}

/** What the mail-based account flows of a UserCollection need. */
export interface UserAccountOptions {
  policy: AccountPolicy;
  mailer: AccountMailer;
  /** Where tokens and codes are kept (the store's `_accounts`). */
  tokens: StoreCollection;
}

const BAD_CREDENTIALS = 'bad credentials';

/**
 * A Collection of users: `username` (unique, by a unique index) and `password` (bcrypt, never
 * answered, never filterable), plus /login, /logout and /me. A non-root, non-internal update of
 * another user's object has its `username` and `password` dropped; the rest is saved.
 */
export class UserCollection extends Collection implements UserResource {
  override readonly type: string = 'UserCollection';
  override get client(): ClientShape {
    return this.conflicts === undefined ? { collection: true, users: true } : { collection: true, users: true, conflicts: this.conflicts };
  }
  private readonly cost: number;
  private readonly limitOptions: LoginLimiterOptions | undefined;
  private limiter: LoginLimits;
  private host: ResourceHost | undefined;
  private dummy: Promise<string> | undefined;
  /** Requests of /me: a user's own private properties are answered to them (README). */
  private readonly meRequests: WeakSet<Context>;
  /** Users created by a provider login: they have no password. */
  private readonly passwordless = new WeakSet<Context>();
  /** OAuth/OIDC and MFA, when config.json's `auth` asks for them. */
  private readonly flows: AccountFlows | undefined;
  /** Password reset, email verification, one-time codes (config.json `auth`); undefined when off. */
  private readonly accounts: Accounts | undefined;
  /** Properties only the server sets (`verified`): a client's value in a POST or PUT is dropped. */
  private readonly serverSet: readonly string[];

  constructor(options: UserCollectionOptions) {
    const { password, username, ...rest } = options.properties;
    if (password?.read !== undefined || password?.write !== undefined) {
      // The hash is never answered and only its owner (or root) changes it: no rule may open it.
      throw new RuleError(`${options.configFile ?? `resources${options.path}/config.json`}: properties.password: the password takes no read or write rule (it is never readable)`);
    }
    for (const field of ACCOUNT_FIELDS) delete rest[field];
    // username's own access rules are kept; its type and index are not the config's to change.
    const usernameRules = { ...(username?.read !== undefined ? { read: username.read } : {}), ...(username?.write !== undefined ? { write: username.write } : {}) };
    const properties: Record<string, PropertyDef> = { username: { type: 'string', required: true, unique: true, ...usernameRules }, ...rest };
    if (options.accounts && properties.email?.type !== 'string') {
      throw new Error(`resource ${options.path.slice(1)}: auth.verification, auth.reset and auth.codes need an "email" property of type string (unique, so that an address names one user)`);
    }
    if (options.accounts?.policy.verification.enabled) properties.verified = { type: 'boolean', ...readRulesOf(properties.verified) };
    if (options.auth !== undefined) privateAccountFields(properties, options.auth);
    const meRequests = new WeakSet<Context>();
    const path = options.path;
    // The facts of users: the password hash and account fields are stored only; /me shows a user's
    // own private properties, and on their own object they are no secret to them (writes).
    super(
      { ...options, properties },
      {
        storeOnly: ['password', ...ACCOUNT_FIELDS],
        ownObject: (ctx) => meRequests.has(ctx),
        ownStored: (ctx, stored) => ctx.me?.id === stored.id && ctx.session.path?.toLowerCase() === path.toLowerCase(),
      },
    );
    this.meRequests = meRequests;
    this.flows = AccountFlows.create(options, {
      path: this.path,
      properties: this.properties,
      attempt: (ctx, key) => this.attempt(ctx, key),
      findById: (id) => this.store.findOne({ id }),
      findOne: (filter) => this.store.findOne(filter),
      find: (filter) => this.store.find(filter),
      updateUser: (filter, ops) => this.writing(() => this.store.update(filter, ops)),
      createUser: (ctx, body) => this.createPasswordless(ctx, body),
      onLogin: (ctx, user) => this.onLogin(ctx, user, true),
      startSession: (ctx, user) => this.startSession(ctx, user),
      secureCookies: (ctx) => this.requireHost().sessionCookie('', ctx).includes('; Secure'),
    });
    this.cost = options.passwordCost ?? DEFAULT_PASSWORD_COST;
    this.limitOptions = options.loginRateLimit;
    this.limiter = new LoginLimiter(options.loginRateLimit);
    this.accounts = options.accounts && this.accountsOf(options.accounts);
    this.serverSet = serverSetProperties(options, this.properties);
  }

  private accountsOf(options: UserAccountOptions): Accounts {
    return new Accounts(
      {
        path: this.path,
        store: this.store,
        tokens: options.tokens,
        logger: () => this.logger,
        sessions: () => this.requireHost().sessions,
        hashPassword: (password) => hashPassword(password, this.cost),
        setFields: (uid, fields) => this.writing(() => this.store.update({ id: uid }, { $set: fields })),
        login: (ctx, name, check) => this.authenticate(ctx, name, check),
        beforeReset: async (ctx, user) => {
          if (!this.events.has('beforereset')) return;
          const visible = this.withoutStoreOnly(user);
          await this.events.run('beforereset', { ctx, object: { ...visible }, previous: visible, locals: { event: 'RESET' } });
        },
      },
      options.policy,
      options.mailer,
    );
  }


  override async init(host?: ResourceHost): Promise<void> {
    this.host = host;
    if (host?.loginLimits) this.limiter = host.loginLimits(this.limitOptions);
    await super.init(host);
    // Every mail request looks users up by address.
    const email = this.properties.email;
    if (this.accounts && email && !email.unique && !email.index) await this.store.ensureIndex({ field: 'email' });
    await this.accounts?.init();
    await this.flows?.init();
    if (this.accounts?.policy.verification.required) await this.warnUnverified();
  }

  /**
   * The users `auth.verification.required` keeps from logging in: how many have no verified email
   * address (`verified` not true), and how many of those have no address at all (no link can
   * reach them). For the start's warning and the dashboard's Accounts tab.
   */
  async unverifiedUsers(): Promise<{ count: number; withoutAddress: number }> {
    const unverified = { verified: { $ne: true } };
    const count = await this.store.count(unverified);
    const withoutAddress = count === 0 ? 0 : await this.store.count({ ...unverified, $or: [{ email: { $exists: false } }, { email: null }, { email: '' }] });
    return { count, withoutAddress };
  }

  /** Turning `verification.required` on locks out every user not verified yet: said at each start, with the count. */
  private async warnUnverified(): Promise<void> {
    const name = this.path.slice(1);
    try {
      const { count, withoutAddress } = await this.unverifiedUsers();
      if (count === 0) return;
      this.logger?.warn(
        `${name}: auth.verification.required is on and ${count} user${count === 1 ? ' has' : 's have'} no verified email address` +
          `${withoutAddress > 0 ? ` (${withoutAddress} without any address)` : ''}: they cannot log in until they confirm one. ` +
          `They ask for a link with POST /${name}/requestVerification {email}; root may mark users it trusts "verified": true; see docs/accounts.md ("Turning verification.required on")`,
      );
    } catch (err) {
      this.logger?.warn(`${name}: could not count the users without a verified email address: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  override handle(ctx: Context): Promise<Reply> {
    const func = ctx.parts.length === 1 ? ctx.parts[0] : undefined;
    if (func === 'login' && ctx.method === 'POST') return this.login(ctx);
    if (func === 'logout' && ctx.method === 'POST') return this.logout(ctx);
    if (func === 'me' && ctx.method === 'GET') return this.me(ctx);
    const flow = this.flows?.route(ctx);
    if (flow !== undefined) return flow;
    if (this.accounts?.answers(func)) return this.accounts.handle(ctx, func);
    if (isAccountRoute(func)) return Promise.reject(new SvcError('NOT_FOUND', `${func} is not turned on for ${this.path.slice(1)} (config.json auth: docs/accounts.md)`));
    return super.handle(ctx);
  }

  /** The user as /me and scripts see it. */
  async findUser(uid: string): Promise<Record<string, unknown> | null> {
    const doc = await this.store.findOne({ id: uid });
    return doc === null ? null : this.visibility.withoutStoreOnly(doc);
  }

  /**
   * Root's reset of a user's two-factor (a lost device, from the dashboard): TOTP and recovery
   * codes removed, and every session of the user ended, as a password change does. Answers how
   * many sessions ended, or null when there is no such user.
   */
  async resetTwoFactor(uid: string): Promise<number | null> {
    const updated = await this.writing(() => this.store.update({ id: uid }, { $unset: { _mfa: true, _mfaRecovery: true } }));
    if (updated === null) return null;
    return this.host ? this.host.sessions.endUserSessions(uid) : 0;
  }

  async findUserIds(query: Record<string, unknown>): Promise<string[]> {
    const docs = await this.store.find(compileFilter(query, this.properties), { fields: { id: 1 } });
    return docs.map((d) => d.id);
  }

  protected override async create(ctx: Context, body: Record<string, unknown>): Promise<Reply> {
    const password = body.password;
    if ((typeof password !== 'string' || password === '') && !this.passwordless.has(ctx)) {
      // Both credentials are reported at once, as Deployd does.
      const username = body.username;
      const errors: Record<string, string> = typeof username === 'string' && username !== '' ? {} : { username: 'is required' };
      errors.password = 'is required';
      throw new SvcError('VALIDATION_FAILED', undefined, { errors });
    }
    return super.create(ctx, this.withoutAccountFields(ctx, body));
  }

  protected override async update(ctx: Context, id: string, given: Record<string, unknown>): Promise<Reply> {
    let body = this.withoutAccountFields(ctx, given);
    // With mail-based flows the address is a credential too: whoever sets it can reset the password.
    const credentials = this.accounts ? ['username', 'password', 'email'] : ['username', 'password'];
    const changesCredentials = credentials.some((name) => Object.hasOwn(body, name));
    if (changesCredentials && !ctx.isRoot && !ctx.internal && ctx.me?.id !== id) {
      // As in Deployd 1.2: another user's credentials are dropped and the rest is saved. ctx.body
      // is replaced too, so that the dropped password never reaches the hash nor ends sessions.
      // Self is only the logged-in user's id (not Deployd's `|| body.id`, true for any body id).
      body = Object.fromEntries(Object.entries(body).filter(([name]) => !credentials.includes(name)));
      ctx.body = body;
    }
    const newEmail = await this.heldEmailChange(ctx, id, body);
    if (newEmail !== undefined) {
      const { email: _email, ...rest } = body;
      body = rest;
      ctx.body = rest;
    }
    if (body.password !== undefined && (typeof body.password !== 'string' || body.password === '')) {
      throw new SvcError('VALIDATION_FAILED', undefined, { errors: { password: 'must be a non-empty string' } });
    }
    const reply = await super.update(ctx, id, body);
    if (newEmail !== undefined && this.accounts) await this.accounts.emailChangeAsked(ctx, newEmail.user, newEmail.email);
    return reply;
  }

  /**
   * `verified` is the server's to set: a client's value is dropped (root and event scripts may
   * set it). A new copy when something is dropped, so that the caller's body stays as sent.
   */
  private withoutAccountFields(ctx: Context, body: Record<string, unknown>): Record<string, unknown> {
    if (ctx.isRoot || ctx.internal || !this.serverSet.some((name) => Object.hasOwn(body, name))) return body;
    const rest = Object.fromEntries(Object.entries(body).filter(([name]) => !this.serverSet.includes(name)));
    ctx.body = rest;
    return rest;
  }

  /**
   * A user's own change of address, with verification on: held back (the old address stays) and
   * confirmed by mail. Root and event scripts change it at once. Answers the change held, if any.
   */
  private async heldEmailChange(ctx: Context, id: string, body: Record<string, unknown>): Promise<{ user: Doc; email: string } | undefined> {
    if (!this.accounts?.policy.verification.enabled || ctx.isRoot || ctx.internal || !Object.hasOwn(body, 'email')) return undefined;
    const email = body.email;
    if (!isEmailAddress(email)) throw new SvcError('VALIDATION_FAILED', undefined, { errors: { email: 'is not an email address' } });
    const user = await this.store.findOne({ id });
    if (user === null) return undefined;
    // The held address leaves the update: its write rule is checked here, before the comparison.
    this.assertPropertyWrite(ctx, user, 'email', email);
    if (user.email === email) return undefined;
    await this.accounts.countMail(ctx, email);
    return { user, email };
  }

  /** The password hash is computed here, after the scripts, and stored beside the object. */
  protected override async hiddenValues(ctx: Context, _previous: Doc | undefined): Promise<Record<string, unknown>> {
    const password = (ctx.body as Record<string, unknown> | undefined)?.password;
    return typeof password === 'string' && password !== '' ? { password: await hashPassword(password, this.cost) } : {};
  }

  /** A changed username or password ends the user's other sessions. */
  protected override async afterWrite(ctx: Context, stored: Doc, previous: Doc | undefined): Promise<void> {
    if (previous === undefined && this.accounts) await this.accounts.signedUp(ctx, stored);
    if (previous === undefined || !this.host) return;
    const body = ctx.body as Record<string, unknown> | undefined;
    const changed = body?.password !== undefined || stored.username !== previous.username;
    if (!changed) return;
    const keep = ctx.session.uid === stored.id ? ctx.session.id : undefined;
    await this.host.sessions.endUserSessions(stored.id, keep);
  }

  protected override readonly tracksDeletes: boolean = true;

  /** A deleted user's sessions end with it (their sockets no longer get that user's messages). */
  protected override async afterDelete(ids: readonly string[]): Promise<void> {
    await this.flows?.forgetUsers(ids);
    if (!this.host) return;
    for (const id of ids) await this.host.sessions.endUserSessions(id);
  }

  /** One login attempt for `key` (a username, an MFA step): refused with 429 over the limits. */
  private async attempt(ctx: Context, key: string): Promise<LoginAttempt> {
    const attempt = await this.limiter.attempt(clientAddress(ctx), `${this.path}\n${key}`);
    if (attempt.retryAfter > 0) {
      throw new SvcError('TOO_MANY_REQUESTS', 'too many login attempts; try again later', { headers: { 'retry-after': String(attempt.retryAfter) } });
    }
    if (attempt.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, attempt.delayMs));
    return attempt;
  }

  /** A user made by a provider login: POST's path (scripts, validation), without a password. */
  async createPasswordless(ctx: Context, body: Record<string, unknown>): Promise<Doc> {
    const inner: Context = { ...ctx, method: 'POST', parts: [], url: '/', query: {}, body, bodyKind: 'json', me: undefined };
    this.passwordless.add(inner);
    const reply = await this.create(inner, body);
    const id = (reply.body as { id?: unknown } | undefined)?.id;
    const user = typeof id === 'string' ? await this.store.findOne({ id }) : null;
    if (user === null) throw new SvcError('INTERNAL', 'the new user was not stored');
    return user;
  }

  /**
   * POST /<users>/login: `{username, password}` (Deployd's), or `{email, password}` when a mail
   * flow is on (a given username wins, as Deployd ignored other keys).
   * Either way one lookup and one bcrypt check, an unknown account against a stand-in hash, and
   * the same 401: neither the time nor the answer tells whether an account exists.
   */
  private async login(ctx: Context): Promise<Reply> {
    const body = (ctx.body ?? {}) as Record<string, unknown>;
    const { username, password, email } = body;
    const byEmail = username === undefined && email !== undefined;
    const name = byEmail ? email : username;
    if (typeof name !== 'string' || typeof password !== 'string' || name === '' || password === '') {
      throw new SvcError('BAD_REQUEST', byEmail ? 'email or password not specified' : 'username or password not specified');
    }
    if (byEmail && !this.accounts) {
      // Only then is the address a credential that no other caller may change (see update()).
      throw new SvcError('BAD_REQUEST', `log in with {username, password}: login by email needs auth.verification, auth.reset or auth.codes on ${this.path.slice(1)}`);
    }
    // The limits count the text given (a username and an identical address share a count), never the account.
    return this.authenticate(ctx, name, async () => {
      const user = byEmail ? await this.userOfEmail(name) : await this.store.findOne({ username: name });
      const stored = typeof user?.password === 'string' ? user.password : undefined;
      // An unknown user still costs one bcrypt check, so timing does not tell which credential was wrong.
      const ok = stored === undefined ? (await verifyPassword(password, await this.dummyHash()), false) : await verifyPassword(password, stored);
      if (ok && user !== null && stored !== undefined && isLegacyHash(stored)) {
        await this.store.update({ id: user.id }, { $set: { password: await hashPassword(password, this.cost) } });
      }
      return { user, ok };
    });
  }

  /**
   * The user an address names for a login: the one user with it, or, where several have it (no
   * unique index), the one whose address svc proved; otherwise nobody (answered as unknown).
   */
  private async userOfEmail(email: string): Promise<Doc | null> {
    const holders = await this.store.find({ email }, { limit: 2 });
    if (holders.length < 2) return holders[0] ?? null;
    const proved = await this.store.find({ email, [`${EMAIL_PROOF}.email`]: email });
    return proved.find((user) => provesEmail(user, email)) ?? null;
  }

  /**
   * The one login path of every method with a credential (password, mailed code, magic link):
   * the login limits count the attempt before `check` runs, On Login sees it, a required
   * verification is checked once the credential was right, then the second factor (MFA) or a
   * new session. Provider logins (OIDC) run the same limits, On Login and second step in AccountFlows.
   */
  private async authenticate(ctx: Context, name: string, check: () => Promise<CredentialCheck>): Promise<Reply> {
    // Counted before the credential check, so that parallel attempts cannot all pass (see LoginLimiter).
    const attempt = await this.attempt(ctx, name);
    const { user, ok } = await check();
    await this.onLogin(ctx, user, ok && user !== null);
    if (!ok || user === null) throw new SvcError('BAD_CREDENTIALS', BAD_CREDENTIALS);
    await attempt.succeeded();
    if (this.accounts?.policy.verification.required && user.verified !== true) throw new SvcError('FORBIDDEN', 'the email address is not verified yet');
    const second = await this.flows?.secondStep(user);
    if (second !== undefined) return second;
    return this.startSession(ctx, user);
  }

  /** Binds the request's session to the user: what every login method ends with. */
  async startSession(ctx: Context, user: Doc): Promise<Reply> {
    const host = this.requireHost();
    const previousId = ctx.session.id;
    const session = await host.sessions.login(previousId, user.id, this.path);
    host.sessionChanged(session.id, user.id, previousId);
    return {
      status: 200,
      body: { id: session.id, path: this.path, uid: user.id },
      headers: { 'set-cookie': host.sessionCookie(session.id, ctx) },
    };
  }

  /**
   * On Login (Deployd 1.2): every attempt that reached the password check, with the user as `this`
   * when the username matched ({} otherwise) and `success` telling whether the password was right.
   * A cancel() refuses the login with its own message. What the script changed on a known user is
   * stored on a failed attempt (even a cancelled one, as Deployd does) and on a successful one that
   * was not cancelled; only declared properties are written (never username, password or id),
   * other keys are ignored, and no other event runs.
   */
  async onLogin(ctx: Context, user: Doc | null, success: boolean): Promise<void> {
    if (!this.events.has('login')) return;
    const visible = user === null ? {} : this.withoutStoreOnly(user);
    const outcome = await this.events.run('login', { ctx, object: { ...visible }, previous: visible, locals: { success, event: 'LOGIN' }, answerCancel: true });
    if (user !== null && (!success || outcome.cancelled === undefined)) await this.storeLoginChanges(user, outcome);
    if (outcome.cancelled !== undefined) throw outcome.cancelled;
  }

  private async storeLoginChanges(user: Doc, outcome: EventOutcome): Promise<void> {
    const guarded = new Set([...outcome.protectedProps, 'username', 'password', 'id']);
    const changes: Record<string, unknown> = {};
    for (const name of Object.keys(this.properties)) {
      if (guarded.has(name) || !Object.hasOwn(outcome.object, name)) continue;
      const value = outcome.object[name];
      if (value !== undefined && !isDeepStrictEqual(user[name], value)) changes[name] = value;
    }
    if (Object.keys(changes).length > 0) await this.writing(() => this.store.update({ id: user.id }, { $set: changes }));
  }

  private async logout(ctx: Context): Promise<Reply> {
    const host = this.requireHost();
    await host.sessions.destroy(ctx.session.id);
    host.sessionChanged(ctx.session.id, undefined);
    return { status: 204, headers: { 'set-cookie': host.sessionCookie(null, ctx) } };
  }

  /** A file download (files/CollectionFiles.ts): a user's own private files are theirs to fetch, as /me shows them. */
  override async readOneAs(ctx: Context, id: string): Promise<{ stored: Doc; shown: Record<string, unknown> } | null> {
    if (ctx.me?.id === id && ctx.session.path?.toLowerCase() === this.path.toLowerCase()) this.meRequests.add(ctx);
    return super.readOneAs(ctx, id);
  }

  /**
   * GET /<users>/me (Deployd 1.2): GET /<users>/<uid> of the logged-in user, with the request's
   * query, On BeforeRequest and On Get (hide() applies), with the user's own private properties.
   * No login, a cancel, an error() or a query that does not match answer 204, as in Deployd; a
   * server error stays one.
   */
  private async me(ctx: Context): Promise<Reply> {
    const uid = ctx.me?.id;
    if (uid === undefined || ctx.session.path?.toLowerCase() !== this.path.toLowerCase()) return noUser();
    ctx.parts = [uid];
    this.meRequests.add(ctx);
    try {
      const reply = await super.handle(ctx);
      // 304: the caller's If-None-Match names this user's answer as it is now (a browser
      // revalidating its cached /me); the ETag is of what this session reads, so never another's.
      return reply.status === 200 || reply.status === 304 ? reply : noUser();
    } catch (err) {
      if (isSvcError(err) && err.status < 500) return noUser();
      throw err;
    }
  }

  private dummyHash(): Promise<string> {
    this.dummy ??= dummyHash(this.cost);
    return this.dummy;
  }

  private requireHost(): ResourceHost {
    if (!this.host) throw new SvcError('INTERNAL', 'user collection used before init');
    return this.host;
  }
}

/** The answer of /me without a user (a new object each time: replies may be changed on the way out). */
function noUser(): Reply {
  return { status: 204 };
}

/** A property's own `read` and `private`, when config.json gives them. */
function readRulesOf(def: PropertyDef | undefined): Partial<PropertyDef> {
  return { ...(def?.read !== undefined ? { read: def.read } : {}), ...(def?.private !== undefined ? { private: def.private } : {}) };
}

/**
 * With `auth`, the account fields (the address, the verified flag) are private unless config.json
 * gives them a `read` rule or `private` of their own: the user at /me and root read them, others
 * neither see nor filter them (issue 38: anyone listed every user's address, and `?email=` told
 * whether an address has an account). `username` stays as in Deployd.
 */
function privateAccountFields(properties: Record<string, PropertyDef>, auth: AuthSettings): void {
  const names = new Set(['email', 'verified', ...(auth.oauth ? [auth.oauth.emailProperty, auth.oauth.verifiedProperty] : [])]);
  names.delete('username');
  for (const name of names) {
    const def = Object.hasOwn(properties, name) ? properties[name] : undefined;
    if (def !== undefined && def.read === undefined && def.private === undefined) properties[name] = { ...def, private: true };
  }
}

/**
 * The properties only the server sets: `verified` with email verification on, and the property an
 * OAuth sign-up marks verified (`auth.oauth.verifiedProperty`), so that no client claims it.
 */
function serverSetProperties(options: UserCollectionOptions, properties: Readonly<Record<string, PropertyDef>>): string[] {
  const names = new Set<string>();
  if (options.accounts?.policy.verification.enabled) names.add('verified');
  const flag = options.auth?.oauth?.verifiedProperty;
  if (flag !== undefined && Object.hasOwn(properties, flag) && flag !== 'username' && flag !== 'password') names.add(flag);
  return [...names];
}

/** Who is logging in: the request's client (behind trusted proxies, the one they name). */
function clientAddress(ctx: Context): string {
  return ctx.internal || ctx.req === undefined ? 'internal' : ctx.scope.client;
}
