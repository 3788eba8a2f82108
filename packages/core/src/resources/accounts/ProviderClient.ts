import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import { SvcError } from '../../errors.js';
import type { OAuthProviderSettings } from './authSettings.js';

/** What a provider told about the person who logged in. */
export interface ProviderProfile {
  /** The provider's stable id of the person (`sub`, GitHub's numeric id). */
  subject: string;
  email: string | undefined;
  /** True only when the provider says so explicitly (email_verified true, GitHub's verified flag). */
  emailVerified: boolean;
  /** The ID token's claims (or GitHub's user object), for `map`. */
  claims: Record<string, unknown>;
}

interface Discovered {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  userinfoEndpoint: string | undefined;
  jwks: ReturnType<typeof createRemoteJWKSet>;
  fetchedAt: number;
}

/** Asymmetric signatures only: `none` and HMAC (keyed by the client secret) are refused. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const DISCOVERY_TTL_MS = 60 * 60_000;
const FETCH_TIMEOUT_MS = 10_000;
/** Tolerated clock difference with the provider. */
const CLOCK_TOLERANCE_S = 60;

/** Talks to one provider: discovery, the authorization URL, the code exchange, the ID token check. */
export class ProviderClient {
  private discovered: Promise<Discovered> | undefined;

  constructor(readonly settings: OAuthProviderSettings) {}

  async authorizationUrl(input: { state: string; nonce: string; challenge: string; callback: string }): Promise<string> {
    const endpoint = this.settings.kind === 'oidc' ? (await this.discovery()).authorizationEndpoint : (this.settings.authorizationEndpoint as string);
    const url = new URL(endpoint);
    const params: Record<string, string> = {
      ...this.settings.params,
      response_type: 'code',
      client_id: this.settings.clientId,
      redirect_uri: input.callback,
      scope: this.settings.scopes.join(' '),
      state: input.state,
      code_challenge: input.challenge,
      code_challenge_method: 'S256',
    };
    if (this.settings.kind === 'oidc') params.nonce = input.nonce;
    if (this.settings.responseMode === 'form_post') params.response_mode = 'form_post';
    for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
    return url.toString();
  }

  /** Exchanges the code (with the PKCE verifier) and answers the verified profile. */
  async profile(input: { code: string; verifier: string; nonce: string; callback: string }): Promise<ProviderProfile> {
    const tokenEndpoint = this.settings.kind === 'oidc' ? (await this.discovery()).tokenEndpoint : (this.settings.tokenEndpoint as string);
    const tokens = await this.exchange(tokenEndpoint, input);
    return this.settings.kind === 'oidc' ? this.fromIdToken(tokens, input.nonce) : this.fromGitHub(tokens);
  }

  private async exchange(endpoint: string, input: { code: string; verifier: string; callback: string }): Promise<Record<string, unknown>> {
    const form = new URLSearchParams({ grant_type: 'authorization_code', code: input.code, redirect_uri: input.callback, code_verifier: input.verifier });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    if (this.settings.tokenAuth === 'client_secret_post') {
      form.set('client_id', this.settings.clientId);
      form.set('client_secret', this.settings.clientSecret);
    } else {
      // RFC 6749 2.3.1: both parts form-encoded before base64.
      const pair = `${encodeURIComponent(this.settings.clientId)}:${encodeURIComponent(this.settings.clientSecret)}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    }
    const answer = await this.fetchJson(endpoint, { method: 'POST', headers, body: form.toString() });
    if (typeof answer.error === 'string') throw new SvcError('UNAUTHORIZED', `${this.settings.name} refused the code`);
    return answer;
  }

  private async fromIdToken(tokens: Record<string, unknown>, nonce: string): Promise<ProviderProfile> {
    const idToken = tokens.id_token;
    if (typeof idToken !== 'string') throw new SvcError('BAD_GATEWAY', `${this.settings.name} answered no ID token`);
    const { jwks, issuer } = await this.discovery();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(idToken, jwks, {
        issuer: expectedIssuer(issuer, idToken),
        audience: this.settings.clientId,
        algorithms: ALGORITHMS,
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat'],
        clockTolerance: CLOCK_TOLERANCE_S,
      }));
    } catch (err) {
      throw new SvcError('UNAUTHORIZED', `the ID token of ${this.settings.name} is not valid`, { cause: err });
    }
    // With several audiences the token must be for this client (OIDC Core 3.1.3.7).
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== this.settings.clientId) throw new SvcError('UNAUTHORIZED', `the ID token of ${this.settings.name} is not valid`);
    if (typeof payload.nonce !== 'string' || payload.nonce !== nonce) throw new SvcError('UNAUTHORIZED', `the ID token of ${this.settings.name} is not valid`);
    if (typeof payload.sub !== 'string' || payload.sub === '') throw new SvcError('UNAUTHORIZED', `the ID token of ${this.settings.name} is not valid`);
    const claims = await this.withUserinfo(payload as Record<string, unknown> & { sub: string }, tokens.access_token);
    const email = typeof claims.email === 'string' && claims.email.includes('@') ? claims.email : undefined;
    // Apple sends "true" as a string; anything else (absent, "false", 1) is not verified.
    const verified = claims.email_verified === true || claims.email_verified === 'true';
    return { subject: payload.sub, email, emailVerified: email !== undefined && verified, claims };
  }

  /**
   * Providers may keep the profile out of the ID token (OIDC Core 5.4): then the userinfo endpoint
   * gives it, and its `sub` must be the ID token's (5.3.2), else its claims are not this person's.
   */
  private async withUserinfo(idClaims: Record<string, unknown> & { sub: string }, accessToken: unknown): Promise<Record<string, unknown>> {
    const { userinfoEndpoint } = await this.discovery();
    if (typeof idClaims.email === 'string' || userinfoEndpoint === undefined || typeof accessToken !== 'string') return idClaims;
    const info = await this.fetchJson(userinfoEndpoint, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } });
    if (info.sub !== idClaims.sub) throw new SvcError('UNAUTHORIZED', `the userinfo of ${this.settings.name} is for someone else`);
    // The ID token's verified claims win over the userinfo's.
    return { ...info, ...idClaims };
  }

  /** GitHub has no ID token: the user API says who it is, and /user/emails which emails are verified. */
  private async fromGitHub(tokens: Record<string, unknown>): Promise<ProviderProfile> {
    const token = tokens.access_token;
    if (typeof token !== 'string') throw new SvcError('BAD_GATEWAY', `${this.settings.name} answered no access token`);
    const api = (this.settings.apiBase as string).replace(/\/+$/, '');
    const headers = { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json', 'user-agent': 'svc' };
    const user = await this.fetchJson(`${api}/user`, { headers });
    if (typeof user.id !== 'number' && typeof user.id !== 'string') throw new SvcError('BAD_GATEWAY', `${this.settings.name} answered no user id`);
    const emails = await this.fetchJson(`${api}/user/emails`, { headers }, true);
    const list = Array.isArray(emails.list) ? (emails.list as Record<string, unknown>[]) : [];
    const primary = list.find((e) => e.primary === true && e.verified === true && typeof e.email === 'string');
    return { subject: String(user.id), email: primary?.email as string | undefined, emailVerified: primary !== undefined, claims: user };
  }

  private discovery(): Promise<Discovered> {
    const current = this.discovered;
    if (current !== undefined) {
      return current.then((d) => (Date.now() - d.fetchedAt < DISCOVERY_TTL_MS ? d : this.rediscover()));
    }
    return this.rediscover();
  }

  private rediscover(): Promise<Discovered> {
    const made = this.discover();
    this.discovered = made;
    // A failed discovery is tried again by the next login, not remembered.
    made.catch(() => {
      if (this.discovered === made) this.discovered = undefined;
    });
    return made;
  }

  private async discover(): Promise<Discovered> {
    const issuer = this.settings.issuer as string;
    const doc = await this.fetchJson(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, {});
    // OIDC Discovery 4.3: the document must name the issuer it was fetched for (Microsoft's
    // multi-tenant endpoints name a template that each token's tenant fills in).
    const named = doc.issuer;
    const template = typeof named === 'string' && named.includes('{tenantid}') && issuer.startsWith('https://login.microsoftonline.com/');
    if (named !== issuer && !template) throw new SvcError('BAD_GATEWAY', `${this.settings.name}: discovery names another issuer`);
    const authorizationEndpoint = this.settings.authorizationEndpoint ?? doc.authorization_endpoint;
    const tokenEndpoint = this.settings.tokenEndpoint ?? doc.token_endpoint;
    const jwksUri = this.settings.jwksUri ?? doc.jwks_uri;
    if (typeof authorizationEndpoint !== 'string' || typeof tokenEndpoint !== 'string' || typeof jwksUri !== 'string') {
      throw new SvcError('BAD_GATEWAY', `${this.settings.name}: discovery lacks an endpoint`);
    }
    const userinfoEndpoint = typeof doc.userinfo_endpoint === 'string' ? doc.userinfo_endpoint : undefined;
    return { issuer: template ? (named as string) : issuer, authorizationEndpoint, tokenEndpoint, userinfoEndpoint, jwks: createRemoteJWKSet(new URL(jwksUri)), fetchedAt: Date.now() };
  }

  private async fetchJson(url: string, init: RequestInit, list = false): Promise<Record<string, unknown>> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    } catch (err) {
      throw new SvcError('BAD_GATEWAY', `${this.settings.name} did not answer`, { cause: err });
    }
    let body: unknown;
    try {
      body = await res.json();
    } catch (err) {
      throw new SvcError('BAD_GATEWAY', `${this.settings.name} answered something other than JSON`, { cause: err });
    }
    if (list && Array.isArray(body)) return { list: body };
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new SvcError('BAD_GATEWAY', `${this.settings.name} answered something other than a JSON object`);
    if (!res.ok && typeof (body as Record<string, unknown>).error !== 'string') throw new SvcError('BAD_GATEWAY', `${this.settings.name} answered ${res.status}`);
    return body as Record<string, unknown>;
  }
}

/** Microsoft's multi-tenant issuer is a template: the token's tenant fills it in. */
function expectedIssuer(issuer: string, idToken: string): string {
  if (!issuer.includes('{tenantid}')) return issuer;
  let tid: unknown;
  try {
    tid = decodeJwt(idToken).tid;
  } catch {
    tid = undefined;
  }
  return typeof tid === 'string' && /^[0-9a-f-]{36}$/.test(tid) ? issuer.replace('{tenantid}', tid) : issuer;
}
