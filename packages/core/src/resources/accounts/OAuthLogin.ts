import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { SvcError, isSvcError } from '../../errors.js';
import { readCookie, serializeCookie } from '../../http/cookies.js';
import type { Context, Reply } from '../../types.js';
import type { AccountHost } from './AccountHost.js';
import type { OAuthSettings } from './authSettings.js';
import { ProviderAccounts } from './ProviderAccounts.js';
import { ProviderClient } from './ProviderClient.js';
import type { ProviderProfile } from './ProviderClient.js';

/** How long a browser may take at the provider. */
const STATE_TTL_MS = 10 * 60_000;
const BINDING_COOKIE = 'svc_oauth';

/**
 * Login with OAuth2 / OpenID Connect providers: authorization code with PKCE (S256), `state`,
 * `nonce` and verifier in a signed cookie of the browser that started (nothing is stored before
 * the provider answers, so starts cost no storage) used once, the ID token verified (JWKS
 * signature, iss, aud, exp, nonce) or the provider's API read, redirects only to allow-listed
 * URLs. An identity is (provider, subject); which account a first sign-in joins or makes is
 * {@link ProviderAccounts}' to say (only through an address the provider vouches for and svc
 * proved for that account: no pre-hijack by someone who registered the address first).
 */
export class OAuthLogin {
  private readonly clients = new Map<string, ProviderClient>();
  private readonly accounts: ProviderAccounts;

  constructor(
    private readonly host: AccountHost,
    private readonly settings: OAuthSettings,
    verificationRequired = false,
  ) {
    for (const [name, provider] of settings.providers) this.clients.set(name, new ProviderClient(provider));
    this.accounts = new ProviderAccounts(host, settings, verificationRequired);
  }

  /** GET /<users>/oauth (the providers), GET /<users>/oauth/<p>, GET (POST for form_post) /<users>/oauth/<p>/callback. */
  handle(ctx: Context): Promise<Reply> {
    const [, name, step, ...rest] = ctx.parts;
    if (name === undefined && ctx.method === 'GET') return Promise.resolve({ status: 200, body: { providers: [...this.settings.providers.keys()] } });
    const client = name === undefined ? undefined : this.clients.get(name);
    if (client === undefined || rest.length > 0) throw new SvcError('NOT_FOUND', 'no such provider');
    if (step === undefined && ctx.method === 'GET') return this.start(ctx, client);
    // The answer comes the one way the provider was asked to send it.
    if (step === 'callback' && ctx.method === (client.settings.responseMode === 'form_post' ? 'POST' : 'GET')) return this.callback(ctx, client);
    throw new SvcError('NOT_FOUND', 'not found');
  }

  /** Sends the browser to the provider, with a fresh state, nonce and PKCE verifier. */
  private async start(ctx: Context, client: ProviderClient): Promise<Reply> {
    const redirect = this.checkedRedirect(ctx.query.redirect);
    const link = ctx.query.link === 'true' || ctx.query.link === true;
    const linkUid = link ? this.loggedInUid(ctx) : undefined;
    if (link && linkUid === undefined) throw new SvcError('UNAUTHORIZED', 'log in first to link a provider');
    const login: LoginState = {
      state: random(),
      provider: client.settings.name,
      nonce: random(),
      verifier: random(),
      callback: `${this.baseUrl(ctx)}${this.host.path}/oauth/${client.settings.name}/callback`,
      expiresAt: Date.now() + STATE_TTL_MS,
      ...(redirect ? { redirect } : {}),
      ...(linkUid ? { linkUid } : {}),
    };
    const authorize = await client.authorizationUrl({ state: login.state, nonce: login.nonce, challenge: s256(login.verifier), callback: login.callback });
    const cookie = await this.sealed(login);
    return { status: 302, headers: { location: authorize, 'set-cookie': this.bindingCookie(ctx, client, cookie), 'cache-control': 'no-store' } };
  }

  /** The provider sends the browser back: check everything, then log in (or answer the MFA step). */
  private async callback(ctx: Context, client: ProviderClient): Promise<Reply> {
    const params = ctx.method === 'POST' ? formOf(ctx.body) : ctx.query;
    const { state, code, error } = params;
    // Strings only, checked before the state is spent: an array or object here is a forgery.
    if (typeof state !== 'string' || state.length === 0 || state.length > 200) throw new SvcError('BAD_REQUEST', 'state is missing');
    if (error !== undefined ? typeof error !== 'string' : typeof code !== 'string' || code.length === 0 || code.length > 4096) throw new SvcError('BAD_REQUEST', 'code is missing');
    // Bound to this browser (its cookie), this provider, and used once (the claim is atomic on both stores).
    const record = await this.opened(readCookie(ctx.headers.cookie, BINDING_COOKIE));
    if (record === undefined || record.provider !== client.settings.name || record.expiresAt <= Date.now() || !sameText(record.state, state)) {
      throw new SvcError('BAD_REQUEST', 'invalid or expired login state; start the login again');
    }
    if (!(await this.host.records.claim('oauth-state-used', state, STATE_TTL_MS))) throw new SvcError('BAD_REQUEST', 'invalid or expired login state; start the login again');
    const redirect = record.redirect;
    const clearBinding = this.bindingCookie(ctx, client, null);
    try {
      if (typeof error === 'string' || typeof code !== 'string') throw new SvcError('UNAUTHORIZED', `the provider refused the login (${String(error).slice(0, 60).replace(/[^\w.-]/g, '')})`);
      // Apple posts the person's name once, in `user` (taken for names only: the browser sent it).
      const extras = ctx.method === 'POST' ? { user: params.user } : {};
      const profile = await client.profile({ code, verifier: record.verifier, nonce: record.nonce, callback: record.callback, extras });
      const answer = await this.logIn(ctx, client, profile, record.linkUid);
      return withCookie(redirect === undefined ? answer : redirectWith(redirect, answer), clearBinding);
    } catch (err) {
      if (redirect === undefined || !isSvcError(err) || err.status >= 500) throw err;
      return withCookie(redirectTo(redirect, { svc_oauth_error: err.message }), clearBinding);
    }
  }

  /** Finds or makes the user of a provider profile, then logs in as /login does. */
  private async logIn(ctx: Context, client: ProviderClient, profile: ProviderProfile, linkUid: string | undefined): Promise<Reply> {
    const provider = client.settings;
    const attempt = await this.host.attempt(ctx, `oauth:${provider.name}:${profile.subject}`);
    const identityKey = `${provider.name}\n${profile.subject}`;
    let user = await this.accounts.userOfIdentity(identityKey);
    if (linkUid !== undefined) {
      if (user !== null && user.id !== linkUid) throw new SvcError('CONFLICT', `this ${provider.name} account is linked to another user`);
      user ??= await this.accounts.link(identityKey, provider, linkUid);
    }
    user ??= await this.accounts.firstSignIn(ctx, provider, profile, identityKey);
    await this.host.onLogin(ctx, user);
    await attempt.succeeded();
    const result = await this.host.finishLogin(ctx, user);
    if (result.kind === 'session') return result.reply;
    return { status: 200, body: { mfaRequired: true, mfaToken: result.mfaToken, ...(result.enroll ? { enroll: true } : {}) } };
  }

  /** The login state as the cookie's value: JSON, then its HMAC-SHA256 under svc's signing key. */
  private async sealed(login: LoginState): Promise<string> {
    const body = Buffer.from(JSON.stringify(login)).toString('base64url');
    return `${body}.${createHmac('sha256', await this.host.records.signingKey()).update(body).digest('base64url')}`;
  }

  /** The login state of a cookie whose signature holds, else undefined. */
  private async opened(cookie: string | undefined): Promise<LoginState | undefined> {
    if (cookie === undefined || cookie.length > 4096) return undefined;
    const dot = cookie.indexOf('.');
    if (dot <= 0) return undefined;
    const body = cookie.slice(0, dot);
    const mac = createHmac('sha256', await this.host.records.signingKey()).update(body).digest('base64url');
    if (!sameText(mac, cookie.slice(dot + 1))) return undefined;
    const login = JSON.parse(Buffer.from(body, 'base64url').toString()) as LoginState;
    return typeof login.state === 'string' && typeof login.expiresAt === 'number' ? login : undefined;
  }

  /** Exact match against auth.oauth.redirects: no prefix, no normalisation, no other host. */
  private checkedRedirect(value: unknown): string | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !this.settings.redirects.has(value)) throw new SvcError('BAD_REQUEST', 'redirect is not one of auth.oauth.redirects', { errors: { redirect: 'not allowed' } });
    return value;
  }

  private loggedInUid(ctx: Context): string | undefined {
    const uid = ctx.me?.id;
    return uid !== undefined && ctx.session.path?.toLowerCase() === this.host.path.toLowerCase() ? uid : undefined;
  }

  private baseUrl(ctx: Context): string {
    if (this.settings.baseUrl !== undefined) return this.settings.baseUrl;
    const host = ctx.headers.host;
    if (host === undefined || !/^[A-Za-z0-9.:[\]-]+$/.test(host)) throw new SvcError('BAD_REQUEST', 'no Host header; set auth.oauth.baseUrl');
    return `${this.host.secureCookies(ctx) ? 'https' : 'http'}://${host}`;
  }

  /** The cookie that binds a login to the browser that started it (SameSite=None when the provider POSTs back). */
  private bindingCookie(ctx: Context, client: ProviderClient, value: string | null): string {
    const crossSitePost = client.settings.responseMode === 'form_post';
    return serializeCookie(BINDING_COOKIE, value ?? '', {
      path: `${this.host.path}/oauth/${client.settings.name}/callback`,
      maxAgeSeconds: value === null ? 0 : STATE_TTL_MS / 1000,
      httpOnly: true,
      secure: crossSitePost || this.host.secureCookies(ctx),
      sameSite: crossSitePost ? 'None' : 'Lax',
    });
  }
}

/** What a login started with, kept by the browser in the signed `svc_oauth` cookie. */
interface LoginState {
  state: string;
  provider: string;
  nonce: string;
  verifier: string;
  callback: string;
  expiresAt: number;
  redirect?: string;
  linkUid?: string;
}

function random(): string {
  return randomBytes(32).toString('base64url');
}

function s256(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function formOf(body: unknown): Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

function withCookie(reply: Reply, cookie: string): Reply {
  const existing = reply.headers?.['set-cookie'];
  const cookies = existing === undefined ? [cookie] : [...(Array.isArray(existing) ? existing : [existing]), cookie];
  return { ...reply, headers: { ...reply.headers, 'set-cookie': cookies } };
}

/** The login's answer carried to the app's page in the fragment (never sent to a server). */
function redirectWith(redirect: string, answer: Reply): Reply {
  const body = answer.body as Record<string, unknown>;
  const fragment: Record<string, string> =
    body.mfaRequired === true
      ? { svc_mfa: String(body.mfaToken), ...(body.enroll === true ? { svc_mfa_enroll: 'true' } : {}) }
      : { svc_session: String(body.id), svc_uid: String(body.uid), svc_path: String(body.path) };
  const reply = redirectTo(redirect, fragment);
  return { ...reply, headers: { ...reply.headers, ...(answer.headers?.['set-cookie'] !== undefined ? { 'set-cookie': answer.headers['set-cookie'] } : {}) } };
}

function redirectTo(redirect: string, fragment: Record<string, string>): Reply {
  const url = new URL(redirect);
  url.hash = new URLSearchParams(fragment).toString();
  return { status: 302, headers: { location: url.toString(), 'cache-control': 'no-store' } };
}
