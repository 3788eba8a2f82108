import { jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import { SvcError } from '../../errors.js';
import { AppleClientSecret } from './appleClientSecret.js';
import type { OAuthProviderSettings } from './authSettings.js';
import { OidcDiscovery } from './oidcDiscovery.js';
import { fetchJson } from './providerHttp.js';
import { PROFILE_READERS, address, subjectOf } from './providerProfiles.js';
import type { ProviderApi, ProviderProfile } from './providerProfiles.js';

export type { ProviderProfile } from './providerProfiles.js';

/** Asymmetric signatures only: `none` and HMAC (keyed by the client secret) are refused. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** Tolerated clock difference with the provider. */
const CLOCK_TOLERANCE_S = 60;
/** Apple's `user` form field: a small JSON object, posted by the browser (so only names are taken from it). */
const MAX_APPLE_USER = 2048;

/** What the callback received besides code and state (Apple posts `user` on the first sign-in). */
export interface CallbackExtras {
  user?: unknown;
}

/** Talks to one provider: discovery, the authorization URL, the code exchange, the ID token check or the API. */
export class ProviderClient {
  private readonly oidc: OidcDiscovery | undefined;
  private readonly appleSecret: AppleClientSecret | undefined;

  constructor(readonly settings: OAuthProviderSettings) {
    this.oidc = settings.kind === 'oidc' ? new OidcDiscovery(settings) : undefined;
    this.appleSecret = settings.appleKey === undefined ? undefined : new AppleClientSecret(settings.appleKey, settings.clientId, settings.issuer as string);
  }

  async authorizationUrl(input: { state: string; nonce: string; challenge: string; callback: string }): Promise<string> {
    const endpoint = this.oidc !== undefined ? (await this.oidc.get()).authorizationEndpoint : (this.settings.authorizationEndpoint as string);
    const url = new URL(endpoint);
    const params: Record<string, string> = {
      ...this.settings.params,
      response_type: 'code',
      client_id: this.settings.clientId,
      redirect_uri: input.callback,
      state: input.state,
      code_challenge: input.challenge,
      code_challenge_method: 'S256',
    };
    if (this.settings.scopes.length > 0) params.scope = this.settings.scopes.join(' ');
    if (this.oidc !== undefined) params.nonce = input.nonce;
    if (this.settings.responseMode === 'form_post') params.response_mode = 'form_post';
    for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
    return url.toString();
  }

  /** Exchanges the code (with the PKCE verifier) and answers the verified profile. */
  async profile(input: { code: string; verifier: string; nonce: string; callback: string; extras?: CallbackExtras }): Promise<ProviderProfile> {
    const tokenEndpoint = this.oidc !== undefined ? (await this.oidc.get()).tokenEndpoint : (this.settings.tokenEndpoint as string);
    const tokens = await this.exchange(tokenEndpoint, input);
    if (this.oidc !== undefined) return this.fromIdToken(this.oidc, tokens, input.nonce, input.extras);
    const token = tokens.access_token;
    if (typeof token !== 'string' || token === '') throw new SvcError('BAD_GATEWAY', `${this.settings.name} answered no access token`);
    const reader = this.settings.profile === undefined ? undefined : PROFILE_READERS[this.settings.profile];
    if (reader === undefined) throw new SvcError('INTERNAL', `${this.settings.name}: an OAuth2 provider without a profile reader`);
    return reader(this.api(token));
  }

  private async exchange(endpoint: string, input: { code: string; verifier: string; callback: string }): Promise<Record<string, unknown>> {
    const form = new URLSearchParams({ grant_type: 'authorization_code', code: input.code, redirect_uri: input.callback, code_verifier: input.verifier });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    const secret = this.appleSecret !== undefined ? await this.appleSecret.value() : (this.settings.clientSecret as string);
    if (this.settings.tokenAuth === 'client_secret_post') {
      form.set('client_id', this.settings.clientId);
      form.set('client_secret', secret);
    } else {
      // RFC 6749 2.3.1: both parts form-encoded before base64.
      const pair = `${encodeURIComponent(this.settings.clientId)}:${encodeURIComponent(secret)}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    }
    const answer = await fetchJson(this.settings.name, endpoint, { method: 'POST', headers, body: form.toString() });
    // OAuth2's {error} (GitHub's with status 200), Slack's {ok: false, error}.
    if (typeof answer.error === 'string' || answer.ok === false) throw new SvcError('UNAUTHORIZED', `${this.settings.name} refused the code`);
    return answer;
  }

  private async fromIdToken(oidc: OidcDiscovery, tokens: Record<string, unknown>, nonce: string, extras: CallbackExtras | undefined): Promise<ProviderProfile> {
    const idToken = tokens.id_token;
    if (typeof idToken !== 'string') throw new SvcError('BAD_GATEWAY', `${this.settings.name} answered no ID token`);
    const discovered = await oidc.get();
    const invalid = () => new SvcError('UNAUTHORIZED', `the ID token of ${this.settings.name} is not valid`);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(idToken, discovered.jwks, {
        issuer: oidc.expectedIssuers(discovered, idToken),
        audience: this.settings.clientId,
        algorithms: ALGORITHMS,
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat'],
        clockTolerance: CLOCK_TOLERANCE_S,
      }));
    } catch (err) {
      throw new SvcError('UNAUTHORIZED', `the ID token of ${this.settings.name} is not valid`, { cause: err });
    }
    // With several audiences the token must be for this client (OIDC Core 3.1.3.7).
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== this.settings.clientId) throw invalid();
    if (typeof payload.nonce !== 'string' || payload.nonce !== nonce) throw invalid();
    const subject = subjectOf(payload.sub);
    if (subject === undefined) throw invalid();
    const claims = await this.withUserinfo(discovered.userinfoEndpoint, payload as Record<string, unknown> & { sub: string }, tokens.access_token);
    if (this.settings.apple) Object.assign(claims, appleNames(extras?.user, claims));
    const email = address(claims.email);
    return { subject, email, emailVerified: email !== undefined && this.vouches(claims), claims: { ...claims, ...(this.settings.apple ? { is_private_email: isTrue(claims.is_private_email) } : {}) } };
  }

  /**
   * Whether the provider vouches for the address: `email_verified` true (Apple's "true"), or for
   * Microsoft only `xms_edov` (its `email` is whatever the user's tenant set: the nOAuth attack).
   */
  private vouches(claims: Record<string, unknown>): boolean {
    if (this.settings.emailVerifiedClaim === 'xms_edov') return isTrue(claims.xms_edov) || claims.xms_edov === '1' || claims.xms_edov === 1;
    return isTrue(claims.email_verified);
  }

  /**
   * Providers may keep the profile out of the ID token (OIDC Core 5.4): then the userinfo endpoint
   * gives it, and its `sub` must be the ID token's (5.3.2), else its claims are not this person's.
   */
  private async withUserinfo(endpoint: string | undefined, idClaims: Record<string, unknown> & { sub: string }, accessToken: unknown): Promise<Record<string, unknown>> {
    if (typeof idClaims.email === 'string' || endpoint === undefined || typeof accessToken !== 'string') return { ...idClaims };
    const info = await fetchJson(this.settings.name, endpoint, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } });
    if (info.sub !== idClaims.sub) throw new SvcError('UNAUTHORIZED', `the userinfo of ${this.settings.name} is for someone else`);
    // The ID token's verified claims win over the userinfo's.
    return { ...info, ...idClaims };
  }

  /** The API of an OAuth2 provider, with the login's access token; only `apiBase`'s origin is ever asked. */
  private api(accessToken: string): ProviderApi {
    const name = this.settings.name;
    const base = (this.settings.apiBase as string).replace(/\/+$/, '');
    const origin = new URL(base).origin;
    return {
      provider: name,
      base,
      accessToken,
      clientSecret: this.settings.clientSecret ?? '',
      get: (path, options = {}) => {
        const url = new URL(/^https?:\/\//.test(path) ? path : `${base}${path}`);
        // A next-page link pointing elsewhere is not followed: the token goes only to the API.
        if (url.origin !== origin) throw new SvcError('BAD_GATEWAY', `${name} named a page of another host`);
        for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
        const headers = { authorization: `Bearer ${accessToken}`, accept: 'application/json', 'user-agent': 'svc', ...options.headers };
        return fetchJson(name, url.toString(), { headers }, options.list === true);
      },
    };
  }
}

function isTrue(value: unknown): boolean {
  return value === true || value === 'true';
}

/**
 * Apple sends the person's name once, on the first sign-in, in the posted `user` JSON (never in
 * the ID token). The browser posts it, so only names are taken, and only where the ID token has
 * none: never an address.
 */
function appleNames(user: unknown, claims: Record<string, unknown>): Record<string, string> {
  if (typeof user !== 'string' || user.length > MAX_APPLE_USER) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(user);
  } catch {
    return {};
  }
  const name = typeof parsed === 'object' && parsed !== null ? (parsed as { name?: unknown }).name : undefined;
  if (typeof name !== 'object' || name === null) return {};
  const { firstName, lastName } = name as { firstName?: unknown; lastName?: unknown };
  const out: Record<string, string> = {};
  if (typeof firstName === 'string' && firstName.length <= 200 && claims.given_name === undefined) out.given_name = firstName;
  if (typeof lastName === 'string' && lastName.length <= 200 && claims.family_name === undefined) out.family_name = lastName;
  const full = [out.given_name, out.family_name].filter(Boolean).join(' ');
  if (full !== '' && claims.name === undefined) out.name = full;
  return out;
}
