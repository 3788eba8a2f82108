import { createHash, createHmac } from 'node:crypto';

// What each provider's stand-in answers, in that provider's own shapes and with its quirks (the
// server around them is standIns.ts). Sources: each provider's API reference for the endpoints
// svc's presets call (oauthProviders.ts, providerProfiles.ts).

/** The presets svc has, and `oidc` (any issuer). */
export const PRESET_NAMES = ['google', 'apple', 'microsoft', 'github', 'gitlab', 'bitbucket', 'discord', 'facebook', 'x', 'linkedin', 'slack', 'spotify', 'twitch', 'zoom', 'oidc'] as const;
export type PresetName = (typeof PRESET_NAMES)[number];

/** The tenant of personal Microsoft accounts. */
export const MS_CONSUMERS = '9188040d-6c67-4c5b-b112-36a304b66dad';

/** A person at a provider. */
export interface StandInPerson {
  sub: string;
  email?: string;
  /** The provider's own word for the address, in its own form when answered (Apple "true", Zoom 1, Microsoft xms_edov). */
  verified?: boolean;
  name?: string;
  /** Microsoft: the person's tenant; `issTenant` another one named in `iss` (a forgery). */
  tid?: string;
  issTenant?: string;
  /** Microsoft: an `email_verified: true` claim as a tenant's claims mapping might add it (not Microsoft's word). */
  claimsEmailVerified?: boolean;
  /** Google: `iss` without its scheme, as some of Google's ID tokens have it. */
  issWithoutScheme?: boolean;
  /** Apple: the address is a private relay one. */
  privateRelay?: boolean;
  /** GitHub: a verified secondary address beside the primary. */
  secondary?: string;
  /** Bitbucket: the primary address only on the second page of /user/emails; or a next page on `nextPage` (another host). */
  primaryOnPage2?: boolean;
  nextPage?: string;
}

/** What the authorization request asked (kept with its code). */
export interface Grant {
  preset: PresetName;
  person: StandInPerson;
  redirectUri: string;
  challenge: string;
  nonce: string | undefined;
  scope: string;
  /** Twitch: the `claims` parameter, parsed. */
  claims: Record<string, Record<string, unknown> | undefined>;
}

/** One provider's stand-in. */
export interface StandInDef {
  kind: 'oidc' | 'oauth2';
  /** Scopes the provider needs asked for the address and profile (the authorization is refused without them). */
  needs: string[];
  /** How the client must authenticate at the token endpoint (the other way is refused). */
  auth: 'basic' | 'post' | 'apple-jwt';
  /** OAuth2: the path of apiBase under /<preset>/api (Bitbucket's /2.0, Facebook's version). */
  apiPrefix?: string;
  /** OIDC: the ID token's claims besides iss, sub, aud, exp, iat and nonce. */
  idClaims?(person: StandInPerson, grant: Grant): Record<string, unknown>;
  /** OIDC: the userinfo endpoint's answer (none: the provider has no userinfo endpoint, as Apple). */
  userinfo?(person: StandInPerson, grant: Grant): Record<string, unknown>;
  /** OAuth2: the API's answer for `path` (under apiPrefix), or undefined for a 404. */
  api?(path: string, url: URL, person: StandInPerson, ctx: { token: string; secret: string; base: string }): { status: number; body: unknown } | undefined;
  /** How the token endpoint refuses (GitHub's and Slack's come with 200). */
  tokenError(error: string): { status: number; body: Record<string, unknown> };
  /** Fields the token answer always has (Slack's ok: true). */
  tokenExtra?: Record<string, unknown>;
}

const standardError = (error: string) => ({ status: 400, body: { error } });
const standardClaims = (p: StandInPerson) => ({ ...(p.email ? { email: p.email, email_verified: p.verified === true } : {}), ...(p.name ? { name: p.name } : {}) });
const ok = (body: unknown) => ({ status: 200, body });
/** A provider's numeric id of a person (GitHub's, Discord's snowflake, X's, Facebook's), stable per sub. */
export const numericId = (sub: string) => parseInt(createHash('sha256').update(sub).digest('hex').slice(0, 12), 16);

/** Each provider's stand-in, by preset. */
export const STAND_INS: Record<PresetName, StandInDef> = {
  google: { kind: 'oidc', needs: ['openid', 'email'], auth: 'post', idClaims: (p) => ({ ...standardClaims(p), hd: p.email?.split('@')[1] }), userinfo: standardClaims, tokenError: standardError },
  // Apple: no userinfo endpoint, no name in the ID token, its booleans as strings.
  apple: {
    kind: 'oidc',
    needs: ['email', 'name'],
    auth: 'apple-jwt',
    idClaims: (p) => ({
      ...(p.email ? { email: p.email, email_verified: p.verified === true ? 'true' : 'false', is_private_email: p.privateRelay === true ? 'true' : 'false' } : {}),
      auth_time: Math.floor(Date.now() / 1000),
      nonce_supported: true,
    }),
    tokenError: standardError,
  },
  // Microsoft: `email` is the tenant's word; only the optional claim xms_edov vouches for it.
  microsoft: {
    kind: 'oidc',
    needs: ['openid', 'email'],
    auth: 'post',
    idClaims: (p) => ({
      tid: p.tid,
      oid: `oid-${p.sub}`,
      ...(p.email ? { email: p.email, preferred_username: p.email } : {}),
      ...(p.verified === true ? { xms_edov: true } : {}),
      ...(p.claimsEmailVerified ? { email_verified: true } : {}),
      ...(p.name ? { name: p.name } : {}),
    }),
    userinfo: (p) => ({ sub: p.sub, ...(p.email ? { email: p.email } : {}), ...(p.name ? { name: p.name } : {}) }),
    tokenError: standardError,
  },
  github: {
    kind: 'oauth2',
    needs: ['user:email'],
    auth: 'post',
    api: (path, _url, p) => {
      if (path === '/user') return ok({ id: numericId(p.sub), login: p.sub, name: p.name ?? null, avatar_url: `https://avatars.example/${p.sub}`, email: null });
      if (path === '/user/emails') {
        return ok([
          ...(p.secondary ? [{ email: p.secondary, primary: false, verified: true, visibility: null }] : []),
          ...(p.email ? [{ email: p.email, primary: true, verified: p.verified === true, visibility: 'private' }] : []),
        ]);
      }
      return undefined;
    },
    // GitHub answers a bad code with 200.
    tokenError: (error) => ({ status: 200, body: { error, error_description: 'The code passed is incorrect or expired.' } }),
  },
  gitlab: { kind: 'oidc', needs: ['openid', 'email'], auth: 'post', idClaims: (p) => ({ ...standardClaims(p), nickname: p.sub }), userinfo: standardClaims, tokenError: standardError },
  bitbucket: {
    kind: 'oauth2',
    needs: ['email'],
    auth: 'basic',
    apiPrefix: '/2.0',
    api: (path, url, p, { base }) => {
      if (path === '/user') return ok({ uuid: `{${p.sub}}`, account_id: `acc-${p.sub}`, username: p.sub, display_name: p.name ?? p.sub, type: 'user', links: { avatar: { href: `https://avatars.example/${p.sub}` } } });
      if (path !== '/user/emails') return undefined;
      const other = { email: `other-${p.sub}@bitbucket.example`, is_primary: false, is_confirmed: true, type: 'email' };
      const primary = p.email ? [{ email: p.email, is_primary: true, is_confirmed: p.verified === true, type: 'email' }] : [];
      if (p.nextPage !== undefined) return ok({ pagelen: 1, page: 1, size: 2, values: [other], next: p.nextPage });
      if (!p.primaryOnPage2) return ok({ pagelen: 10, page: 1, size: 1 + primary.length, values: [other, ...primary] });
      if (url.searchParams.get('page') === '2') return ok({ pagelen: 1, page: 2, size: 2, values: primary });
      return ok({ pagelen: 1, page: 1, size: 2, values: [other], next: `${base}/user/emails?page=2` });
    },
    tokenError: standardError,
  },
  discord: {
    kind: 'oauth2',
    needs: ['identify', 'email'],
    auth: 'basic',
    api: (path, _url, p) => (path === '/users/@me' ? ok({ id: String(numericId(p.sub)), username: p.sub, global_name: p.name ?? null, avatar: 'a1b2', ...(p.email ? { email: p.email, verified: p.verified === true } : { verified: false }) }) : undefined),
    tokenError: standardError,
  },
  // Facebook: no flag on the address; Graph calls of "Require App Secret" apps carry appsecret_proof.
  facebook: {
    kind: 'oauth2',
    needs: ['email'],
    auth: 'post',
    apiPrefix: '/v22.0',
    api: (path, url, p, { token, secret }) => {
      if (path !== '/me') return undefined;
      const proof = createHmac('sha256', secret).update(token).digest('hex');
      if (url.searchParams.get('appsecret_proof') !== proof) return { status: 400, body: { error: { message: 'Invalid appsecret_proof provided in the API argument', type: 'GraphMethodException', code: 100 } } };
      const fields = (url.searchParams.get('fields') ?? 'id,name').split(',');
      const all: Record<string, unknown> = { id: String(numericId(p.sub)), name: p.name, first_name: p.name?.split(' ')[0], last_name: p.name?.split(' ')[1], email: p.email, picture: { data: { url: `https://graph.example/${p.sub}.jpg` } } };
      return ok(Object.fromEntries(fields.filter((f) => all[f] !== undefined).map((f) => [f, all[f]])));
    },
    tokenError: (error) => ({ status: 400, body: { error: { message: error, type: 'OAuthException', code: 100 } } }),
  },
  // X: no address at all.
  x: {
    kind: 'oauth2',
    needs: ['users.read', 'tweet.read'],
    auth: 'basic',
    api: (path, _url, p) => (path === '/2/users/me' ? ok({ data: { id: String(numericId(p.sub)), name: p.name ?? p.sub, username: p.sub, profile_image_url: `https://pbs.example/${p.sub}.jpg` } }) : undefined),
    tokenError: standardError,
  },
  linkedin: { kind: 'oidc', needs: ['openid', 'email'], auth: 'post', idClaims: (p) => ({ ...standardClaims(p), locale: 'en_US' }), userinfo: standardClaims, tokenError: standardError },
  // Slack: answers {ok, ...}, its errors with 200.
  slack: {
    kind: 'oidc',
    needs: ['openid', 'email'],
    auth: 'post',
    idClaims: (p) => ({ ...standardClaims(p), 'https://slack.com/team_id': 'T0001', 'https://slack.com/user_id': p.sub }),
    userinfo: (p) => ({ ok: true, ...standardClaims(p) }),
    tokenError: (error) => ({ status: 200, body: { ok: false, error } }),
    tokenExtra: { ok: true },
  },
  // Spotify: its address is documented as unverified.
  spotify: {
    kind: 'oauth2',
    needs: ['user-read-email'],
    auth: 'basic',
    api: (path, _url, p) => (path === '/v1/me' ? ok({ id: p.sub, display_name: p.name ?? null, email: p.email, images: [{ url: `https://i.scdn.example/${p.sub}`, height: 300, width: 300 }], product: 'free' }) : undefined),
    tokenError: standardError,
  },
  // Twitch: the address is in the ID token only when the `claims` parameter asks for it.
  twitch: {
    kind: 'oidc',
    needs: ['openid', 'user:read:email'],
    auth: 'post',
    idClaims: (p, grant) => {
      const asked = grant.claims.id_token ?? {};
      return {
        preferred_username: p.sub,
        ...('email' in asked && p.email ? { email: p.email } : {}),
        ...('email_verified' in asked && p.email ? { email_verified: p.verified === true } : {}),
      };
    },
    userinfo: (p, grant) => {
      const asked = grant.claims.userinfo ?? {};
      return { preferred_username: p.sub, ...('email' in asked && p.email ? { email: p.email, email_verified: p.verified === true } : {}) };
    },
    tokenError: standardError,
  },
  // Zoom: `verified` is 1 or 0.
  zoom: {
    kind: 'oauth2',
    needs: [],
    auth: 'basic',
    api: (path, _url, p) => {
      if (path !== '/v2/users/me') return undefined;
      const [first, last] = (p.name ?? '').split(' ');
      return ok({ id: `z-${p.sub}`, first_name: first ?? '', last_name: last ?? '', display_name: p.name, email: p.email, verified: p.verified === true ? 1 : 0, type: 1, status: 'active', account_id: 'acct1', pic_url: `https://zoom.example/${p.sub}.png` });
    },
    tokenError: standardError,
  },
  // Any OpenID Connect issuer: the profile from userinfo only (the ID token names the person).
  oidc: { kind: 'oidc', needs: ['openid'], auth: 'basic', idClaims: () => ({}), userinfo: standardClaims, tokenError: standardError },
};
