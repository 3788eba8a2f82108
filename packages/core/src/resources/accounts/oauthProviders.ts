/** How an OAuth2 provider without OpenID Connect says who logged in (providerProfiles.ts reads each). */
export type ProfileSource = 'github' | 'bitbucket' | 'discord' | 'facebook' | 'x' | 'spotify' | 'zoom';

/** What a provider preset fills in (config.json may override any endpoint: self-hosted servers, other clouds, tests). */
export interface ProviderPreset {
  /** 'oidc': discovery from `issuer` and a verified ID token; 'oauth2': the provider's API says who it is. */
  kind: 'oidc' | 'oauth2';
  /** OpenID Connect issuer; `{tenant}` is replaced by the provider's `tenant` setting (Microsoft; default 'common'). */
  issuer?: string;
  authorizationEndpoint?: string;
  tokenEndpoint?: string;
  /** OAuth2: the base of the API paths the profile is read from. */
  apiBase?: string;
  /** OAuth2: which API answers and how its answer names the person and their address. */
  profile?: ProfileSource;
  /** Default scopes (none: the app's scopes are set in the provider's console, as Zoom's). */
  scopes: readonly string[];
  tokenAuth: 'client_secret_basic' | 'client_secret_post';
  /** Apple: the answer is POSTed to the callback (with the `user` JSON on the first sign-in). */
  responseMode?: 'form_post';
  /** Extra authorization parameters the provider needs (Twitch's `claims`). */
  params?: Readonly<Record<string, string>>;
  /** Google: ID tokens may name the issuer without its scheme (`accounts.google.com`). */
  issuerWithoutScheme?: boolean;
  /** Microsoft: the issuer holds the tenant; discovery names `{tenantid}` (multi-tenant) or the tenant's id. */
  tenantIssuer?: boolean;
  /** Microsoft: its `email` is the tenant's word; only `xms_edov` (email domain owner verified) vouches for it. */
  emailVerifiedClaim?: 'xms_edov';
  /** Apple: a client secret svc signs from teamId/keyId/privateKey; names come once, in the posted `user`. */
  apple?: boolean;
  /** Where an app is registered with the provider (docs and the dashboard). */
  console: string;
}

/** Twitch gives the address only when the `claims` parameter asks for it (OIDC Core 5.5). */
const TWITCH_CLAIMS = JSON.stringify({
  id_token: { email: null, email_verified: null, preferred_username: null, picture: null },
  userinfo: { email: null, email_verified: null, preferred_username: null, picture: null },
});

/**
 * The providers svc knows by name. The OpenID Connect ones are found through discovery from their
 * issuer and identify the person by a signed ID token; the OAuth2 ones (GitHub, Bitbucket,
 * Discord, Facebook, X, Spotify, Zoom) have their endpoints named here and their API read by
 * providerProfiles.ts. PKCE (S256) and `state` are sent to every one of them.
 */
export const PROVIDER_PRESETS: Readonly<Record<string, ProviderPreset>> = {
  google: { kind: 'oidc', issuer: 'https://accounts.google.com', scopes: ['openid', 'email', 'profile'], tokenAuth: 'client_secret_post', issuerWithoutScheme: true, console: 'https://console.cloud.google.com/apis/credentials' },
  // Apple posts the answer to the callback when names or emails are asked for; its client secret
  // is a JWT signed with the app's Apple key (svc signs it from teamId, keyId and privateKey).
  apple: { kind: 'oidc', issuer: 'https://appleid.apple.com', scopes: ['openid', 'email', 'name'], tokenAuth: 'client_secret_post', responseMode: 'form_post', apple: true, console: 'https://developer.apple.com/account/resources/identifiers/list/serviceId' },
  microsoft: {
    kind: 'oidc',
    issuer: 'https://login.microsoftonline.com/{tenant}/v2.0',
    scopes: ['openid', 'email', 'profile'],
    tokenAuth: 'client_secret_post',
    tenantIssuer: true,
    emailVerifiedClaim: 'xms_edov',
    console: 'https://entra.microsoft.com (App registrations)',
  },
  github: {
    kind: 'oauth2',
    authorizationEndpoint: 'https://github.com/login/oauth/authorize',
    tokenEndpoint: 'https://github.com/login/oauth/access_token',
    apiBase: 'https://api.github.com',
    profile: 'github',
    scopes: ['read:user', 'user:email'],
    tokenAuth: 'client_secret_post',
    console: 'https://github.com/settings/developers',
  },
  gitlab: { kind: 'oidc', issuer: 'https://gitlab.com', scopes: ['openid', 'email', 'profile'], tokenAuth: 'client_secret_post', console: 'https://gitlab.com/-/user_settings/applications' },
  bitbucket: {
    kind: 'oauth2',
    authorizationEndpoint: 'https://bitbucket.org/site/oauth2/authorize',
    tokenEndpoint: 'https://bitbucket.org/site/oauth2/access_token',
    apiBase: 'https://api.bitbucket.org/2.0',
    profile: 'bitbucket',
    scopes: ['account', 'email'],
    tokenAuth: 'client_secret_basic',
    console: 'https://bitbucket.org/<workspace>/workspace/settings/api (OAuth consumers)',
  },
  discord: {
    kind: 'oauth2',
    authorizationEndpoint: 'https://discord.com/oauth2/authorize',
    tokenEndpoint: 'https://discord.com/api/oauth2/token',
    apiBase: 'https://discord.com/api',
    profile: 'discord',
    scopes: ['identify', 'email'],
    tokenAuth: 'client_secret_basic',
    console: 'https://discord.com/developers/applications',
  },
  facebook: {
    kind: 'oauth2',
    authorizationEndpoint: 'https://www.facebook.com/v22.0/dialog/oauth',
    tokenEndpoint: 'https://graph.facebook.com/v22.0/oauth/access_token',
    apiBase: 'https://graph.facebook.com/v22.0',
    profile: 'facebook',
    scopes: ['email', 'public_profile'],
    tokenAuth: 'client_secret_post',
    console: 'https://developers.facebook.com/apps',
  },
  x: {
    kind: 'oauth2',
    authorizationEndpoint: 'https://x.com/i/oauth2/authorize',
    tokenEndpoint: 'https://api.x.com/2/oauth2/token',
    apiBase: 'https://api.x.com',
    profile: 'x',
    scopes: ['users.read', 'tweet.read'],
    tokenAuth: 'client_secret_basic',
    console: 'https://developer.x.com/en/portal/dashboard',
  },
  linkedin: { kind: 'oidc', issuer: 'https://www.linkedin.com/oauth', scopes: ['openid', 'profile', 'email'], tokenAuth: 'client_secret_post', console: 'https://www.linkedin.com/developers/apps' },
  slack: { kind: 'oidc', issuer: 'https://slack.com', scopes: ['openid', 'email', 'profile'], tokenAuth: 'client_secret_post', console: 'https://api.slack.com/apps' },
  spotify: {
    kind: 'oauth2',
    authorizationEndpoint: 'https://accounts.spotify.com/authorize',
    tokenEndpoint: 'https://accounts.spotify.com/api/token',
    apiBase: 'https://api.spotify.com',
    profile: 'spotify',
    scopes: ['user-read-email', 'user-read-private'],
    tokenAuth: 'client_secret_basic',
    console: 'https://developer.spotify.com/dashboard',
  },
  twitch: {
    kind: 'oidc',
    issuer: 'https://id.twitch.tv/oauth2',
    scopes: ['openid', 'user:read:email'],
    tokenAuth: 'client_secret_post',
    params: { claims: TWITCH_CLAIMS },
    console: 'https://dev.twitch.tv/console/apps',
  },
  zoom: {
    kind: 'oauth2',
    authorizationEndpoint: 'https://zoom.us/oauth/authorize',
    tokenEndpoint: 'https://zoom.us/oauth/token',
    apiBase: 'https://api.zoom.us',
    profile: 'zoom',
    scopes: [],
    tokenAuth: 'client_secret_basic',
    console: 'https://marketplace.zoom.us/develop/create (General app, user-managed)',
  },
};
