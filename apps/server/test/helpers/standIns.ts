import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, exportPKCS8, generateKeyPair, jwtVerify } from 'jose';
import type { CryptoKey, JWK } from 'jose';
import { MS_CONSUMERS, PRESET_NAMES, STAND_INS } from './standInProviders.js';
import type { Grant, PresetName, StandInPerson } from './standInProviders.js';

export { MS_CONSUMERS, PRESET_NAMES, numericId } from './standInProviders.js';
export type { PresetName, StandInPerson } from './standInProviders.js';

// Local stand-ins of the sign-in providers svc has presets for (issue 43): one HTTP server on
// 127.0.0.1 that answers each provider's authorization, token, JWKS, discovery, userinfo and API
// endpoints under /<preset>/..., with each provider's quirks (standInProviders.ts). It is strict
// where a provider is (client authentication method, redirect_uri, single-use codes, PKCE, the
// scopes asked) and it signs whatever a person says (a foreign tenant, an unverified address), so
// that svc's own checks are what is tested.

export const STAND_IN_CLIENT_ID = 'svc-client';
export const STAND_IN_SECRET = 'stand-in-client-secret-0123456789';

/** What the stand-ins saw svc ask (for assertions). */
export interface Seen {
  preset: PresetName;
  step: 'authorize' | 'token' | 'api' | 'userinfo';
  params: Record<string, string>;
}

export interface StandIns {
  /** Where svc reaches them (127.0.0.1). */
  url: string;
  /** Where a browser is sent to authorize (another site name for the same server, when asked). */
  browserUrl: string;
  /** Apple's "Sign in with Apple" key of the app (svc signs its client secret with it). */
  apple: { teamId: string; keyId: string; privateKeyPem: string };
  /** People of each provider, by sub. */
  people: Record<PresetName, Map<string, StandInPerson>>;
  /** Who logs in at `preset`'s next authorization (no login form). */
  next: Partial<Record<PresetName, string>>;
  seen: Seen[];
  add(preset: PresetName, ...people: StandInPerson[]): void;
  /**
   * svc's config for a provider of `preset` pointing here: the issuer (OIDC) or the endpoints and
   * apiBase (OAuth2); the secret as `${env:secretEnv}`, Apple's key as `${env:appleKeyEnv}`.
   */
  config(preset: PresetName, extra?: Record<string, unknown>): Record<string, unknown>;
  close(): Promise<void>;
}

/** Starts the stand-ins; `browserHost` names them for the browser (e.g. 'localhost': another site than 127.0.0.1). */
export async function startStandIns(options: { secretEnv: string; appleKeyEnv: string; browserHost?: string }): Promise<StandIns> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: `stand-in-${randomBytes(4).toString('hex')}`, alg: 'RS256', use: 'sig' };
  const apple = await generateKeyPair('ES256', { extractable: true });
  const state: State = {
    url: '',
    browserUrl: '',
    signingKey: privateKey,
    jwk,
    applePublicKey: apple.publicKey,
    appleIds: { teamId: 'TEAM123456', keyId: 'KEY7654321' },
    codes: new Map(),
    tokens: new Map(),
    appleUserSent: new Set(),
    standIns: undefined as unknown as StandIns,
  };
  const server = createServer((req, res) => {
    void handle(state, req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  state.url = `http://127.0.0.1:${port}`;
  state.browserUrl = `http://${options.browserHost ?? '127.0.0.1'}:${port}`;
  const people = Object.fromEntries(PRESET_NAMES.map((p) => [p, new Map<string, StandInPerson>()])) as Record<PresetName, Map<string, StandInPerson>>;
  state.standIns = {
    url: state.url,
    browserUrl: state.browserUrl,
    apple: { ...state.appleIds, privateKeyPem: await exportPKCS8(apple.privateKey) },
    people,
    next: {},
    seen: [],
    add(preset, ...list) {
      for (const person of list) people[preset].set(person.sub, person);
    },
    config: (preset, extra = {}) => configOf(state, preset, options, extra),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return state.standIns;
}

interface State {
  url: string;
  browserUrl: string;
  signingKey: CryptoKey;
  jwk: JWK;
  applePublicKey: CryptoKey;
  appleIds: { teamId: string; keyId: string };
  codes: Map<string, Grant>;
  tokens: Map<string, Grant>;
  /** Apple posts `user` on a person's first authorization of the app only. */
  appleUserSent: Set<string>;
  standIns: StandIns;
}

/** The issuer svc is configured with (Microsoft's with `{tenant}`, as the preset's). */
function issuerOf(state: State, preset: PresetName): string {
  return preset === 'microsoft' ? `${state.url}/microsoft/{tenant}/v2.0` : `${state.url}/${preset}`;
}

function configOf(state: State, preset: PresetName, options: { secretEnv: string; appleKeyEnv: string }, extra: Record<string, unknown>): Record<string, unknown> {
  const def = STAND_INS[preset];
  const secret = preset === 'apple' ? { teamId: state.appleIds.teamId, keyId: state.appleIds.keyId, privateKey: `\${env:${options.appleKeyEnv}}` } : { clientSecret: `\${env:${options.secretEnv}}` };
  const endpoints =
    def.kind === 'oidc'
      ? { issuer: issuerOf(state, preset) }
      : { authorizationEndpoint: `${state.browserUrl}/${preset}/authorize`, tokenEndpoint: `${state.url}/${preset}/token`, apiBase: `${state.url}/${preset}/api${def.apiPrefix ?? ''}` };
  return { ...(preset === 'oidc' ? {} : { preset }), ...endpoints, clientId: STAND_IN_CLIENT_ID, ...secret, ...extra };
}

/** The part of a path after the provider's prefix: `/<preset>` (Microsoft: `/microsoft/<tenant>`). */
function routeOf(pathname: string): { preset: PresetName; tenant: string | undefined; rest: string } | undefined {
  const [, first = '', ...parts] = pathname.split('/');
  if (!(PRESET_NAMES as readonly string[]).includes(first)) return undefined;
  const preset = first as PresetName;
  if (preset !== 'microsoft') return { preset, tenant: undefined, rest: `/${parts.join('/')}` };
  const [tenant, ...more] = parts;
  return { preset, tenant, rest: `/${more.join('/')}` };
}

async function handle(state: State, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', state.url);
  const route = routeOf(url.pathname);
  if (route === undefined) return json(res, 404, { error: 'not_found' });
  const { preset, tenant, rest } = route;
  const ms = preset === 'microsoft';
  const def = STAND_INS[preset];
  if (def.kind === 'oidc' && rest === (ms ? '/v2.0/.well-known/openid-configuration' : '/.well-known/openid-configuration')) return json(res, 200, discovery(state, preset, tenant));
  if (def.kind === 'oidc' && rest === (ms ? '/discovery/v2.0/keys' : '/jwks')) return json(res, 200, { keys: [state.jwk] });
  if (req.method === 'GET' && rest === (ms ? '/oauth2/v2.0/authorize' : '/authorize')) return authorize(state, preset, url, res);
  if (req.method === 'POST' && rest === (ms ? '/oauth2/v2.0/token' : '/token')) return token(state, preset, req, res);
  const grant = state.tokens.get(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
  if (def.kind === 'oidc' && rest === '/userinfo' && def.userinfo !== undefined) {
    if (grant === undefined || grant.preset !== preset) return json(res, 401, { error: 'invalid_token' });
    state.standIns.seen.push({ preset, step: 'userinfo', params: {} });
    return json(res, 200, { sub: grant.person.sub, ...def.userinfo(grant.person, grant) });
  }
  const apiPath = `/api${def.apiPrefix ?? ''}`;
  if (def.kind === 'oauth2' && rest.startsWith(`${apiPath}/`) && req.method === 'GET') {
    if (grant === undefined || grant.preset !== preset) return json(res, 401, { message: 'Bad credentials' });
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    state.standIns.seen.push({ preset, step: 'api', params: { path: rest.slice(apiPath.length), token, ...Object.fromEntries(url.searchParams) } });
    const answer = def.api?.(rest.slice(apiPath.length), url, grant.person, { token, secret: STAND_IN_SECRET, base: `${state.url}/${preset}${apiPath}` });
    return answer === undefined ? json(res, 404, { message: 'Not Found' }) : json(res, answer.status, answer.body);
  }
  return json(res, 404, { error: 'not_found' });
}

function discovery(state: State, preset: PresetName, tenant: string | undefined): Record<string, unknown> {
  const ms = preset === 'microsoft';
  // Microsoft: the multi-tenant endpoints name a template; consumers and a tenant name its id.
  const issuer = ms ? `${state.url}/microsoft/${tenant === 'common' || tenant === 'organizations' ? '{tenantid}' : tenant === 'consumers' ? MS_CONSUMERS : tenant}/v2.0` : `${state.url}/${preset}`;
  const base = ms ? `/microsoft/${tenant}/oauth2/v2.0` : `/${preset}`;
  return {
    issuer,
    authorization_endpoint: `${state.browserUrl}${base}/authorize`,
    token_endpoint: `${state.url}${base}/token`,
    jwks_uri: ms ? `${state.url}/microsoft/common/discovery/v2.0/keys` : `${state.url}/${preset}/jwks`,
    ...(STAND_INS[preset].userinfo ? { userinfo_endpoint: ms ? `${state.url}/microsoft/oidc/userinfo` : `${state.url}/${preset}/userinfo` } : {}),
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'form_post'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    code_challenge_methods_supported: ['S256'],
  };
}

/** The person `next` names consents at once: the code goes back by redirect (Apple: by a form POSTed by the page). */
function authorize(state: State, preset: PresetName, url: URL, res: ServerResponse): void {
  const q = Object.fromEntries(url.searchParams);
  state.standIns.seen.push({ preset, step: 'authorize', params: q });
  const def = STAND_INS[preset];
  const scopes = (q.scope ?? '').split(' ');
  const refuse = (why: string) => json(res, 400, { error: 'invalid_request', error_description: why });
  if (q.client_id !== STAND_IN_CLIENT_ID) return refuse('unknown client_id');
  if (q.response_type !== 'code' || !q.redirect_uri || !q.state) return refuse('response_type=code, redirect_uri and state are required');
  // Every stand-in requires PKCE (X's does, the others accept it): svc sends it to all.
  if (q.code_challenge_method !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(q.code_challenge ?? '')) return refuse('PKCE (S256) is required');
  if (def.kind === 'oidc' && !q.nonce) return refuse('nonce is required');
  const missing = def.needs.filter((s) => !scopes.includes(s));
  if (missing.length > 0) return refuse(`scope lacks ${missing.join(' ')}`);
  if (preset === 'apple' && q.response_mode !== 'form_post') return refuse('response_mode must be form_post when name or email is asked');
  const person = state.standIns.people[preset].get(state.standIns.next[preset] ?? '');
  if (person === undefined) return refuse(`nobody to log in at ${preset} (set next)`);
  let claims: Grant['claims'];
  try {
    claims = q.claims ? (JSON.parse(q.claims) as Grant['claims']) : {};
  } catch {
    return refuse('claims is not JSON');
  }
  const code = randomBytes(24).toString('base64url');
  state.codes.set(code, { preset, person, redirectUri: q.redirect_uri, challenge: q.code_challenge as string, nonce: q.nonce, scope: q.scope ?? '', claims });
  if (preset !== 'apple') {
    const back = new URL(q.redirect_uri);
    back.searchParams.set('code', code);
    back.searchParams.set('state', q.state);
    res.writeHead(302, { location: back.toString() }).end();
    return;
  }
  const fields: Record<string, string> = { code, state: q.state };
  if (!state.appleUserSent.has(person.sub)) {
    state.appleUserSent.add(person.sub);
    const [firstName = '', lastName = ''] = (person.name ?? '').split(' ');
    fields.user = JSON.stringify({ name: { firstName, lastName }, ...(person.email ? { email: person.email } : {}) });
  }
  const inputs = Object.entries(fields).map(([k, v]) => `<input type="hidden" name="${k}" value="${escapeHtml(v)}">`).join('');
  res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>Apple</title><body onload="document.forms[0].submit()"><form method="post" action="${escapeHtml(q.redirect_uri)}">${inputs}</form></body>`);
}

async function token(state: State, preset: PresetName, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const def = STAND_INS[preset];
  const form = Object.fromEntries(new URLSearchParams(await bodyOf(req)));
  const refuse = (error: string) => {
    const answer = def.tokenError(error);
    json(res, answer.status, answer.body);
  };
  const how = await clientAuth(state, req, form);
  state.standIns.seen.push({ preset, step: 'token', params: { ...form, auth: how ?? 'none' } });
  if (how !== def.auth) return refuse('invalid_client');
  const grant = state.codes.get(form.code ?? '');
  state.codes.delete(form.code ?? '');
  if (grant === undefined || grant.preset !== preset || form.grant_type !== 'authorization_code') return refuse('invalid_grant');
  if (form.redirect_uri !== grant.redirectUri) return refuse('invalid_grant');
  if (createHash('sha256').update(form.code_verifier ?? '').digest('base64url') !== grant.challenge) return refuse('invalid_grant');
  const accessToken = randomBytes(24).toString('base64url');
  state.tokens.set(accessToken, grant);
  const answer: Record<string, unknown> = { ...def.tokenExtra, access_token: accessToken, token_type: 'Bearer', expires_in: 3600, scope: grant.scope };
  if (def.kind === 'oidc') answer.id_token = await idToken(state, grant);
  json(res, 200, answer);
}

/** How the client authenticated: 'basic', 'post', Apple's signed 'apple-jwt', or undefined (wrong or both). */
async function clientAuth(state: State, req: IncomingMessage, form: Record<string, string>): Promise<'basic' | 'post' | 'apple-jwt' | undefined> {
  const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (basic !== undefined) {
    const [id = '', secret = ''] = Buffer.from(basic, 'base64').toString().split(':').map(decodeURIComponent);
    return form.client_secret === undefined && id === STAND_IN_CLIENT_ID && secret === STAND_IN_SECRET ? 'basic' : undefined;
  }
  if (form.client_id !== STAND_IN_CLIENT_ID || form.client_secret === undefined) return undefined;
  if (form.client_secret === STAND_IN_SECRET) return 'post';
  try {
    const { payload, protectedHeader } = await jwtVerify(form.client_secret, state.applePublicKey, { algorithms: ['ES256'], issuer: state.appleIds.teamId, subject: STAND_IN_CLIENT_ID, audience: `${state.url}/apple` });
    const sixMonths = 15_777_000;
    return protectedHeader.kid === state.appleIds.keyId && typeof payload.exp === 'number' && typeof payload.iat === 'number' && payload.exp - payload.iat <= sixMonths ? 'apple-jwt' : undefined;
  } catch {
    return undefined;
  }
}

async function idToken(state: State, grant: Grant): Promise<string> {
  const { person, preset } = grant;
  let iss = `${state.url}/${preset}`;
  if (preset === 'microsoft') iss = `${state.url}/microsoft/${person.issTenant ?? person.tid}/v2.0`;
  if (person.issWithoutScheme) iss = iss.replace(/^https?:\/\//, '');
  const now = Math.floor(Date.now() / 1000);
  const claims = { ...STAND_INS[preset].idClaims?.(person, grant), ...(grant.nonce ? { nonce: grant.nonce } : {}) };
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: state.jwk.kid as string }).setIssuer(iss).setSubject(person.sub).setAudience(STAND_IN_CLIENT_ID).setIssuedAt(now).setExpirationTime(now + 600).sign(state.signingKey);
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The hidden fields of an HTML page's form (Apple's form_post page), unescaped. */
export function formFields(page: string): Record<string, string> {
  const unescape = (v: string) => v.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n)));
  return Object.fromEntries([...page.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)].map((m) => [m[1] as string, unescape(m[2] as string)]));
}
