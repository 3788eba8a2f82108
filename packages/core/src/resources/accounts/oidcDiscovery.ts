import { createRemoteJWKSet, decodeJwt } from 'jose';
import { SvcError } from '../../errors.js';
import type { OAuthProviderSettings } from './authSettings.js';
import { fetchJson } from './providerHttp.js';

/** What an OpenID Connect provider's discovery document says (endpoints in config win). */
export interface Discovered {
  /** The issuer its ID tokens name; Microsoft's multi-tenant one holds `{tenantid}`. */
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  userinfoEndpoint: string | undefined;
  jwks: ReturnType<typeof createRemoteJWKSet>;
  fetchedAt: number;
}

const DISCOVERY_TTL_MS = 60 * 60_000;
const TENANT_TEMPLATE = '{tenantid}';
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The tenant of personal Microsoft accounts: `organizations` is for work and school accounts only. */
export const MICROSOFT_CONSUMERS_TENANT = '9188040d-6c67-4c5b-b112-36a304b66dad';

/** One provider's discovery, fetched when first needed and again after an hour; a failure is not kept. */
export class OidcDiscovery {
  private discovered: Promise<Discovered> | undefined;

  constructor(private readonly settings: OAuthProviderSettings) {}

  get(): Promise<Discovered> {
    const current = this.discovered;
    if (current !== undefined) return current.then((d) => (Date.now() - d.fetchedAt < DISCOVERY_TTL_MS ? d : this.rediscover()));
    return this.rediscover();
  }

  /**
   * The issuers an ID token may name: the discovered one; Google's also without its scheme
   * (`accounts.google.com`); Microsoft's multi-tenant template filled with the token's `tid`
   * (a GUID, and with `organizations` not the personal accounts' tenant). The token's signature is
   * checked against this list, so a `tid` the token does not carry signed matches nothing.
   */
  expectedIssuers(discovered: Discovered, idToken: string): string[] {
    let issuer = discovered.issuer;
    if (issuer.includes(TENANT_TEMPLATE)) {
      const tid = claimOf(idToken, 'tid');
      if (typeof tid !== 'string' || !GUID.test(tid)) return [];
      if (tid === MICROSOFT_CONSUMERS_TENANT && tenantOf(this.settings.issuer as string) === 'organizations') return [];
      issuer = issuer.replace(TENANT_TEMPLATE, tid);
    }
    return this.settings.issuerWithoutScheme ? [issuer, issuer.replace(/^https?:\/\//, '')] : [issuer];
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
    const { settings } = this;
    const issuer = settings.issuer as string;
    const doc = await fetchJson(settings.name, `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, {});
    // OIDC Discovery 4.3: the document must name the issuer it was fetched for.
    const named = doc.issuer;
    if (typeof named !== 'string' || (named !== issuer && !(settings.tenantIssuer && isTenantIssuerOf(named, issuer)))) {
      throw new SvcError('BAD_GATEWAY', `${settings.name}: discovery names another issuer`);
    }
    const authorizationEndpoint = settings.authorizationEndpoint ?? doc.authorization_endpoint;
    const tokenEndpoint = settings.tokenEndpoint ?? doc.token_endpoint;
    const jwksUri = settings.jwksUri ?? doc.jwks_uri;
    if (typeof authorizationEndpoint !== 'string' || typeof tokenEndpoint !== 'string' || typeof jwksUri !== 'string') {
      throw new SvcError('BAD_GATEWAY', `${settings.name}: discovery lacks an endpoint`);
    }
    const userinfoEndpoint = typeof doc.userinfo_endpoint === 'string' ? doc.userinfo_endpoint : undefined;
    return { issuer: named, authorizationEndpoint, tokenEndpoint, userinfoEndpoint, jwks: createRemoteJWKSet(new URL(jwksUri)), fetchedAt: Date.now() };
  }
}

/** The tenant segment of a Microsoft issuer (`.../<tenant>/v2.0`). */
function tenantOf(issuer: string): string | undefined {
  return /\/([^/]+)\/v2\.0$/.exec(new URL(issuer).pathname)?.[1];
}

/**
 * Microsoft's discovery for `common` and `organizations` names the template
 * `.../{tenantid}/v2.0`, for `consumers` or a domain the tenant's id: the same URL as configured
 * but for the tenant segment, which is the template or a GUID.
 */
function isTenantIssuerOf(named: string, configured: string): boolean {
  const tenant = tenantOf(configured);
  if (tenant === undefined) return false;
  const prefix = configured.slice(0, configured.length - `${tenant}/v2.0`.length);
  if (!named.startsWith(prefix) || !named.endsWith('/v2.0')) return false;
  const segment = named.slice(prefix.length, named.length - '/v2.0'.length);
  return segment === TENANT_TEMPLATE || GUID.test(segment);
}

function claimOf(jwt: string, name: string): unknown {
  try {
    return decodeJwt(jwt)[name];
  } catch {
    return undefined;
  }
}
