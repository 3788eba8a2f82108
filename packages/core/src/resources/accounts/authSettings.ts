import { parseAppleKey } from './appleClientSecret.js';
import type { AppleKey } from './appleClientSecret.js';
import { PROVIDER_PRESETS } from './oauthProviders.js';
import type { ProfileSource, ProviderPreset } from './oauthProviders.js';
import { parseAccountFlows } from './accountSettings.js';
import type { AccountPolicy } from './accountSettings.js';

/** `auth.mfa` of a UserCollection's config.json. */
export interface MfaSettings {
  /** Every user of the collection must pass a second step (those without TOTP enrol at login). */
  required: boolean;
  /** The issuer shown by authenticator apps (otpauth URI); default the collection's name. */
  issuer: string | undefined;
}

/** One provider of `auth.oauth.providers`, with its preset's endpoints filled in. */
export interface OAuthProviderSettings {
  name: string;
  /** The preset's name (undefined: any OpenID Connect issuer). */
  preset: string | undefined;
  /** 'oidc': ID token verified through discovery and JWKS; 'oauth2': the provider's API (`profile`) says who it is. */
  kind: 'oidc' | 'oauth2';
  /** OIDC issuer (discovery at `<issuer>/.well-known/openid-configuration`). */
  issuer: string | undefined;
  /** Endpoints given in config win over discovery (and are the only ones for OAuth2 presets). */
  authorizationEndpoint: string | undefined;
  tokenEndpoint: string | undefined;
  jwksUri: string | undefined;
  /** OAuth2: the base of the provider's API (`https://api.github.com`). */
  apiBase: string | undefined;
  /** OAuth2: which provider's API answers (providerProfiles.ts). */
  profile: ProfileSource | undefined;
  clientId: string;
  /** The client secret; undefined when svc signs Apple's from `appleKey`. */
  clientSecret: string | undefined;
  /** Apple: the key svc signs the client secret JWT with. */
  appleKey: AppleKey | undefined;
  scopes: string[];
  /** How the client authenticates at the token endpoint. */
  tokenAuth: 'client_secret_basic' | 'client_secret_post';
  /** 'form_post' (Apple with scopes): the provider POSTs the callback. */
  responseMode: 'query' | 'form_post';
  /** property -> claim: the profile copied to a user created (or linked) through this provider. */
  map: Record<string, string>;
  /** Extra authorization parameters (`prompt`, `hd`, ...). */
  params: Record<string, string>;
  /** The preset's quirks (oauthProviders.ts). */
  issuerWithoutScheme: boolean;
  tenantIssuer: boolean;
  emailVerifiedClaim: 'email_verified' | 'xms_edov';
  apple: boolean;
}

/** `auth.oauth` of a UserCollection's config.json. */
export interface OAuthSettings {
  providers: Map<string, OAuthProviderSettings>;
  /** Where a login may send the browser back to: exact URLs. */
  redirects: ReadonlySet<string>;
  /** The public base URL of the server (callback URLs); default from the request's Host. */
  baseUrl: string | undefined;
  /** The property holding a user's email ('email' when declared, else 'username'). */
  emailProperty: string;
  /** The property telling that a user's email was verified (true); default 'verified'. */
  verifiedProperty: string;
  /** Whether a provider login may create a new user; default true. */
  signup: boolean;
  /**
   * Whether a first sign-in whose provider vouches for no address (X, Facebook, Spotify, or an
   * address marked unverified) may create a user, without an address; default true.
   */
  signupWithoutEmail: boolean;
}

/** A UserCollection's `auth` settings, read once by {@link parseAuthSettings} for every part of svc. */
export interface AuthSettings {
  mfa: MfaSettings | undefined;
  oauth: OAuthSettings | undefined;
  /** `auth.verification`, `auth.reset`, `auth.codes` with their defaults (a flow left out is off). */
  flows: AccountPolicy;
  /** `auth.mail` as written (references resolved): the server checks it when a flow sends mail. */
  mail: unknown;
}

type Raw = Record<string, unknown>;

/** The sections of a UserCollection's `auth` (docs/accounts.md). */
const AUTH_SECTIONS = ['verification', 'reset', 'codes', 'mail', 'mfa', 'oauth'] as const;

const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/**
 * Reads a UserCollection's `auth` from its config.json: the one reader of it. `resolveReferences`
 * replaces its `${env:NAME}` references; the sections are checked before, as written, so that a
 * misspelt section is named first. A mistake stops the start, naming the resource and the
 * setting, never a secret.
 */
export function parseAuthSettings(resource: string, raw: unknown, declared: ReadonlySet<string>, resolveReferences: (auth: unknown) => unknown = (auth) => auth): AuthSettings {
  const where = `resource ${resource}: auth`;
  if (typeof raw === 'object' && raw !== null) {
    const unknown = Object.keys(raw).filter((key) => !(AUTH_SECTIONS as readonly string[]).includes(key));
    if (unknown.length > 0) throw new Error(`${where}: unknown setting ${unknown.join(', ')} (known: ${AUTH_SECTIONS.join(', ')})`);
  }
  const resolved = resolveReferences(raw);
  if (resolved === undefined) return { mfa: undefined, oauth: undefined, flows: parseAccountFlows(resource, {}), mail: undefined };
  const auth = object(resolved, where);
  return {
    mfa: auth.mfa === undefined ? undefined : parseMfa(auth.mfa, `${where}.mfa`),
    oauth: auth.oauth === undefined ? undefined : parseOAuth(auth.oauth, `${where}.oauth`, declared),
    flows: parseAccountFlows(resource, auth),
    mail: auth.mail,
  };
}

const MFA_KEYS = ['required', 'issuer'];
const OAUTH_KEYS = ['providers', 'redirects', 'baseUrl', 'emailProperty', 'verifiedProperty', 'signup', 'signupWithoutEmail'];
const PROVIDER_KEYS = ['preset', 'issuer', 'tenant', 'clientId', 'clientSecret', 'teamId', 'keyId', 'privateKey', 'scopes', 'map', 'params', 'tokenAuth', 'authorizationEndpoint', 'tokenEndpoint', 'jwksUri', 'apiBase'];
/** Microsoft's tenant: common, organizations, consumers, a tenant id or a domain (a path segment of the issuer). */
const TENANT = /^[A-Za-z0-9][A-Za-z0-9.-]{0,99}$/;

function parseMfa(raw: unknown, where: string): MfaSettings {
  const mfa = object(raw, where, MFA_KEYS);
  return { required: optionalBoolean(mfa.required, `${where}.required`) ?? false, issuer: optionalString(mfa.issuer, `${where}.issuer`) };
}

function parseOAuth(raw: unknown, where: string, declared: ReadonlySet<string>): OAuthSettings {
  const oauth = object(raw, where, OAUTH_KEYS);
  const redirects = stringList(oauth.redirects ?? [], `${where}.redirects`);
  for (const url of redirects) absoluteUrl(url, `${where}.redirects`);
  const baseUrl = optionalString(oauth.baseUrl, `${where}.baseUrl`);
  if (baseUrl !== undefined) absoluteUrl(baseUrl, `${where}.baseUrl`);
  const providers = new Map<string, OAuthProviderSettings>();
  for (const [name, value] of Object.entries(object(oauth.providers ?? {}, `${where}.providers`))) {
    if (!PROVIDER_NAME.test(name)) throw new Error(`${where}.providers: provider name "${name.slice(0, 40)}" must be lower-case letters, digits, - and _`);
    providers.set(name, parseProvider(name, value, `${where}.providers.${name}`));
  }
  return {
    providers,
    redirects: new Set(redirects),
    baseUrl: baseUrl?.replace(/\/+$/, ''),
    emailProperty: optionalString(oauth.emailProperty, `${where}.emailProperty`) ?? (declared.has('email') ? 'email' : 'username'),
    verifiedProperty: optionalString(oauth.verifiedProperty, `${where}.verifiedProperty`) ?? 'verified',
    signup: optionalBoolean(oauth.signup, `${where}.signup`) ?? true,
    signupWithoutEmail: optionalBoolean(oauth.signupWithoutEmail, `${where}.signupWithoutEmail`) ?? true,
  };
}

function parseProvider(name: string, raw: unknown, where: string): OAuthProviderSettings {
  const p = object(raw, where, PROVIDER_KEYS);
  const presetName = optionalString(p.preset, `${where}.preset`) ?? (Object.hasOwn(PROVIDER_PRESETS, name) ? name : undefined);
  let preset: ProviderPreset | undefined;
  if (presetName !== undefined) {
    if (!Object.hasOwn(PROVIDER_PRESETS, presetName)) throw new Error(`${where}.preset: unknown preset "${presetName.slice(0, 40)}" (${Object.keys(PROVIDER_PRESETS).join(', ')})`);
    preset = PROVIDER_PRESETS[presetName];
  }
  const kind = preset?.kind ?? 'oidc';
  const issuer = issuerOf(p, preset, where);
  const endpoints = {
    authorizationEndpoint: optionalString(p.authorizationEndpoint, `${where}.authorizationEndpoint`) ?? preset?.authorizationEndpoint,
    tokenEndpoint: optionalString(p.tokenEndpoint, `${where}.tokenEndpoint`) ?? preset?.tokenEndpoint,
    jwksUri: optionalString(p.jwksUri, `${where}.jwksUri`),
    apiBase: optionalString(p.apiBase, `${where}.apiBase`) ?? preset?.apiBase,
  };
  for (const [key, url] of Object.entries(endpoints)) if (url !== undefined) absoluteUrl(url, `${where}.${key}`);
  if (kind === 'oidc' && issuer === undefined) throw new Error(`${where}: an OpenID Connect provider needs "issuer" (its discovery URL without /.well-known/openid-configuration)`);
  if (kind === 'oauth2' && (endpoints.authorizationEndpoint === undefined || endpoints.tokenEndpoint === undefined)) throw new Error(`${where}: needs authorizationEndpoint and tokenEndpoint`);
  const clientId = requiredString(p.clientId, `${where}.clientId`);
  const { clientSecret, appleKey } = secretOf(p, preset, where);
  const tokenAuth = optionalString(p.tokenAuth, `${where}.tokenAuth`) ?? preset?.tokenAuth ?? 'client_secret_basic';
  if (tokenAuth !== 'client_secret_basic' && tokenAuth !== 'client_secret_post') throw new Error(`${where}.tokenAuth must be client_secret_basic or client_secret_post`);
  const scopes = p.scopes === undefined ? [...(preset?.scopes ?? ['openid', 'email', 'profile'])] : stringList(p.scopes, `${where}.scopes`, true);
  if (kind === 'oidc' && !scopes.includes('openid')) scopes.unshift('openid');
  const map: Record<string, string> = {};
  for (const [property, claim] of Object.entries(object(p.map ?? {}, `${where}.map`))) map[property] = requiredString(claim, `${where}.map.${property}`);
  const params: Record<string, string> = { ...preset?.params };
  for (const [key, value] of Object.entries(object(p.params ?? {}, `${where}.params`))) params[key] = requiredString(value, `${where}.params.${key}`);
  return {
    name,
    preset: presetName,
    kind,
    issuer,
    ...endpoints,
    profile: preset?.profile,
    clientId,
    clientSecret,
    appleKey,
    scopes,
    tokenAuth,
    responseMode: preset?.responseMode ?? 'query',
    map,
    params,
    issuerWithoutScheme: preset?.issuerWithoutScheme === true,
    tenantIssuer: preset?.tenantIssuer === true,
    emailVerifiedClaim: preset?.emailVerifiedClaim ?? 'email_verified',
    apple: preset?.apple === true,
  };
}

/**
 * The issuer: config's or the preset's. Microsoft's holds the tenant (`{tenant}` in either, so
 * that another cloud's login host keeps the tenant setting); no other provider takes a tenant.
 */
function issuerOf(p: Raw, preset: ProviderPreset | undefined, where: string): string | undefined {
  const tenant = optionalString(p.tenant, `${where}.tenant`);
  if (tenant !== undefined && preset?.tenantIssuer !== true) throw new Error(`${where}.tenant is a setting of the microsoft preset`);
  if (tenant !== undefined && !TENANT.test(tenant)) throw new Error(`${where}.tenant must be common, organizations, consumers, a tenant id or a domain`);
  const issuer = (optionalString(p.issuer, `${where}.issuer`) ?? preset?.issuer)?.replace('{tenant}', tenant ?? 'common');
  if (issuer !== undefined) absoluteUrl(issuer, `${where}.issuer`);
  if (issuer !== undefined && preset?.tenantIssuer === true && !/\/[^/]+\/v2\.0$/.test(new URL(issuer).pathname)) {
    throw new Error(`${where}.issuer: a Microsoft issuer ends with /<tenant>/v2.0 (or write {tenant} where the tenant goes)`);
  }
  return issuer;
}

/** The client secret, or (Apple) the key svc signs one with: one of the two. */
function secretOf(p: Raw, preset: ProviderPreset | undefined, where: string): { clientSecret: string | undefined; appleKey: AppleKey | undefined } {
  const keyFields = [p.teamId, p.keyId, p.privateKey];
  if (keyFields.every((v) => v === undefined)) return { clientSecret: requiredString(p.clientSecret, `${where}.clientSecret`), appleKey: undefined };
  if (preset?.apple !== true) throw new Error(`${where}: teamId, keyId and privateKey are settings of the apple preset`);
  if (p.clientSecret !== undefined) throw new Error(`${where}: give either clientSecret or teamId, keyId and privateKey, not both`);
  const teamId = requiredString(p.teamId, `${where}.teamId`);
  const keyId = requiredString(p.keyId, `${where}.keyId`);
  const privateKey = requiredString(p.privateKey, `${where}.privateKey`);
  return { clientSecret: undefined, appleKey: parseAppleKey({ teamId, keyId, privateKey }, where) };
}

/** An object; with `keys`, one whose every key is known (a misspelt security setting must not pass unnoticed). */
function object(value: unknown, where: string, keys?: readonly string[]): Raw {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${where} must be an object`);
  const unknown = keys === undefined ? [] : Object.keys(value).filter((key) => !keys.includes(key));
  if (unknown.length > 0) throw new Error(`${where}: unknown setting ${unknown.map((key) => `"${key.slice(0, 40)}"`).join(', ')} (known: ${(keys ?? []).join(', ')})`);
  return value as Raw;
}

function optionalString(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new Error(`${where} must be a non-empty string`);
  return value;
}

function requiredString(value: unknown, where: string): string {
  const out = optionalString(value, where);
  if (out === undefined) throw new Error(`${where} is required`);
  return out;
}

function optionalBoolean(value: unknown, where: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new Error(`${where} must be true or false`);
  return value;
}

function stringList(value: unknown, where: string, spaceless = false): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== '' && !(spaceless && /\s/.test(v)))) throw new Error(`${where} must be a list of non-empty strings${spaceless ? ' without spaces' : ''}`);
  return value as string[];
}

function absoluteUrl(value: string, where: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${where}: "${value.slice(0, 80)}" is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`${where}: "${value.slice(0, 80)}" must be an http(s) URL`);
}
