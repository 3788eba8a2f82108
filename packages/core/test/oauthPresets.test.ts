import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet } from 'jose';
import { describe, expect, it } from 'vitest';
import { parseAuthSettings } from '../src/resources/accounts/authSettings.js';
import type { OAuthProviderSettings } from '../src/resources/accounts/authSettings.js';
import { PROVIDER_PRESETS } from '../src/resources/accounts/oauthProviders.js';
import { MICROSOFT_CONSUMERS_TENANT, OidcDiscovery } from '../src/resources/accounts/oidcDiscovery.js';
import type { Discovered } from '../src/resources/accounts/oidcDiscovery.js';
import { address, subjectOf } from '../src/resources/accounts/providerProfiles.js';

// Issue 43: the presets' settings as parsed, and the pure checks of the provider flows (the
// end-to-end tests against each provider's stand-in are apps/server/test/accounts-presets.test.ts).

const client = { clientId: 'id', clientSecret: 'secret' };

function provider(name: string, raw: Record<string, unknown> = {}): OAuthProviderSettings {
  const auth = parseAuthSettings('users', { oauth: { providers: { [name]: { ...client, ...raw } } } }, new Set(['email']));
  return auth.oauth?.providers.get(name) as OAuthProviderSettings;
}

/** A JWT whose claims only are read (decodeJwt checks no signature). */
function tokenWith(claims: Record<string, unknown>): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'RS256' })}.${part(claims)}.sig`;
}

describe('sign-in presets', () => {
  it('every preset parses with only a client, as its kind needs', () => {
    expect(Object.keys(PROVIDER_PRESETS)).toHaveLength(14);
    for (const [name, preset] of Object.entries(PROVIDER_PRESETS)) {
      const p = provider(name);
      expect(p, name).toMatchObject({ preset: name, kind: preset.kind, tokenAuth: preset.tokenAuth });
      if (preset.kind === 'oidc') expect(p.issuer, name).toMatch(/^https:\/\//);
      else expect([p.authorizationEndpoint, p.tokenEndpoint, p.apiBase, p.profile], name).toEqual([preset.authorizationEndpoint, preset.tokenEndpoint, preset.apiBase, preset.profile]);
      if (preset.kind === 'oidc') expect(p.scopes, name).toContain('openid');
    }
  });

  it.each([
    [{}, 'https://login.microsoftonline.com/common/v2.0'],
    [{ tenant: 'organizations' }, 'https://login.microsoftonline.com/organizations/v2.0'],
    [{ tenant: 'contoso.onmicrosoft.com' }, 'https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0'],
    [{ issuer: 'https://login.microsoftonline.us/{tenant}/v2.0', tenant: 'consumers' }, 'https://login.microsoftonline.us/consumers/v2.0'],
  ])('Microsoft %j: issuer %s', (raw, issuer) => {
    expect(provider('microsoft', raw)).toMatchObject({ issuer, tenantIssuer: true, emailVerifiedClaim: 'xms_edov' });
  });

  it('config endpoints win over a preset; preset params merge under config params', () => {
    expect(provider('github', { apiBase: 'https://ghe.example/api/v3', authorizationEndpoint: 'https://ghe.example/login/oauth/authorize' })).toMatchObject({
      apiBase: 'https://ghe.example/api/v3',
      authorizationEndpoint: 'https://ghe.example/login/oauth/authorize',
      tokenEndpoint: 'https://github.com/login/oauth/access_token',
    });
    expect(Object.keys(provider('twitch').params)).toEqual(['claims']);
    expect(provider('twitch', { params: { claims: '{}' } }).params).toEqual({ claims: '{}' });
    expect(provider('zoom').scopes).toEqual([]);
  });

  it.each([
    ['a@example.com', 'a@example.com'],
    ['a b@example.com', undefined],
    ['@example.com', undefined],
    ['a@', undefined],
    ['a@b@c', undefined],
    [`${'a'.repeat(250)}@x.io`, undefined],
    [['a@example.com'], undefined],
    [{ toString: (): string => 'a@example.com' }, undefined],
  ])('address(%j) is %j', (value, expected) => {
    expect(address(value)).toBe(expected);
  });

  it.each([
    [123, '123'],
    ['{9c6b-uuid}', '{9c6b-uuid}'],
    ['', undefined],
    ['a\nb', undefined],
    ['x'.repeat(256), undefined],
    [1.5, undefined],
    [Number.MAX_SAFE_INTEGER + 2, undefined],
    [null, undefined],
    [{ id: 1 }, undefined],
  ])('subjectOf(%j) is %j', (value, expected) => {
    expect(subjectOf(value)).toBe(expected);
  });
});

describe('Microsoft and Google issuers', () => {
  const discovered = (issuer: string): Discovered => ({
    issuer,
    authorizationEndpoint: 'x',
    tokenEndpoint: 'x',
    userinfoEndpoint: undefined,
    jwks: createRemoteJWKSet(new URL('https://keys.example/')),
    fetchedAt: 0,
  });
  const tenant = '72f988bf-86f1-41af-91ab-2d7cd011db47';

  it.each([
    ['common', { tid: tenant }, [`https://login.microsoftonline.com/${tenant}/v2.0`]],
    ['common', { tid: MICROSOFT_CONSUMERS_TENANT }, [`https://login.microsoftonline.com/${MICROSOFT_CONSUMERS_TENANT}/v2.0`]],
    ['organizations', { tid: MICROSOFT_CONSUMERS_TENANT }, []],
    ['common', { tid: 'not-a-guid' }, []],
    ['common', { tid: `${tenant}/../evil` }, []],
    ['common', {}, []],
  ])('tenant %s, token %j: expects %j', (t, claims, expected) => {
    const settings = provider('microsoft', { tenant: t });
    expect(new OidcDiscovery(settings).expectedIssuers(discovered('https://login.microsoftonline.com/{tenantid}/v2.0'), tokenWith(claims))).toEqual(expected);
  });

  it('a tenant-fixed issuer is expected as it is; Google also without its scheme', () => {
    const fixed = `https://login.microsoftonline.com/${tenant}/v2.0`;
    expect(new OidcDiscovery(provider('microsoft', { tenant })).expectedIssuers(discovered(fixed), tokenWith({ tid: 'other' }))).toEqual([fixed]);
    expect(new OidcDiscovery(provider('google')).expectedIssuers(discovered('https://accounts.google.com'), tokenWith({}))).toEqual(['https://accounts.google.com', 'accounts.google.com']);
    expect(new OidcDiscovery(provider('gitlab')).expectedIssuers(discovered('https://gitlab.com'), tokenWith({}))).toEqual(['https://gitlab.com']);
  });
});

describe('Microsoft discovery names the tenant\'s issuer', () => {
  it.each([
    ['common', '{tenantid}', true],
    ['consumers', MICROSOFT_CONSUMERS_TENANT, true],
    ['contoso.example', '72f988bf-86f1-41af-91ab-2d7cd011db47', true],
    ['common', 'common', true],
    ['common', 'evil', false],
    ['common', '{tenantid}/x', false],
    ['common', 'OTHER-ORIGIN', false],
    ['common', 'OTHER-PATH', false],
  ])('configured %s, discovery names %s: accepted %s', async (tenant, named, accepted) => {
    let base = '';
    const server = createServer((req, res) => {
      const issuer = named === 'OTHER-ORIGIN' ? 'https://login.example/{tenantid}/v2.0' : named === 'OTHER-PATH' ? `${base}/other/{tenantid}/v2.0` : `${base}/ms/${named}/v2.0`;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer, authorization_endpoint: `${base}/a`, token_endpoint: `${base}/t`, jwks_uri: `${base}/k` }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const discovery = new OidcDiscovery(provider('microsoft', { issuer: `${base}/ms/{tenant}/v2.0`, tenant }));
      const outcome = await discovery.get().then(
        (d) => d.issuer,
        (err: Error) => err.message,
      );
      expect(outcome).toBe(accepted ? `${base}/ms/${named}/v2.0` : 'microsoft: discovery names another issuer');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('another preset does not take a tenant template', async () => {
    let base = '';
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: `${base}/{tenantid}/v2.0`, authorization_endpoint: 'a', token_endpoint: 't', jwks_uri: `${base}/k` }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      await expect(new OidcDiscovery(provider('corp', { issuer: `${base}/common/v2.0` })).get()).rejects.toThrow('corp: discovery names another issuer');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
