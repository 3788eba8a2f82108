/** What a provider preset fills in (config.json may override any endpoint). */
export interface ProviderPreset {
  kind: 'oidc' | 'github';
  /** `{tenant}` is replaced by the provider's `tenant` setting (Microsoft; default 'common'). */
  issuer?: string;
  authorizationEndpoint?: string;
  tokenEndpoint?: string;
  apiBase?: string;
  scopes: string[];
  tokenAuth?: 'client_secret_basic' | 'client_secret_post';
  responseMode?: 'query' | 'form_post';
}

/**
 * The providers svc knows by name. The OIDC ones are found through discovery from their issuer;
 * GitHub has no OpenID Connect for apps, so its OAuth2 endpoints and user API are named here.
 */
export const PROVIDER_PRESETS: Readonly<Record<string, ProviderPreset>> = {
  google: { kind: 'oidc', issuer: 'https://accounts.google.com', scopes: ['openid', 'email', 'profile'], tokenAuth: 'client_secret_post' },
  microsoft: { kind: 'oidc', issuer: 'https://login.microsoftonline.com/{tenant}/v2.0', scopes: ['openid', 'email', 'profile'], tokenAuth: 'client_secret_post' },
  // Apple posts the answer to the callback when names or emails are asked for; its client secret
  // is a JWT the app signs with its Apple key (given as clientSecret, renewed at most every 6 months).
  apple: { kind: 'oidc', issuer: 'https://appleid.apple.com', scopes: ['openid', 'email', 'name'], tokenAuth: 'client_secret_post', responseMode: 'form_post' },
  gitlab: { kind: 'oidc', issuer: 'https://gitlab.com', scopes: ['openid', 'email', 'profile'], tokenAuth: 'client_secret_post' },
  github: {
    kind: 'github',
    authorizationEndpoint: 'https://github.com/login/oauth/authorize',
    tokenEndpoint: 'https://github.com/login/oauth/access_token',
    apiBase: 'https://api.github.com',
    scopes: ['read:user', 'user:email'],
    tokenAuth: 'client_secret_post',
  },
};
