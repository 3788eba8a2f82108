import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';

// Issue 27: a UserCollection's `auth` settings are checked at start, naming the resource and the
// setting and never a secret; presets fill in their providers' endpoints.

async function startError(auth: unknown): Promise<string> {
  try {
    const h = await runApp({ 'resources/users/config.json': { type: 'UserCollection', auth } });
    await h.close();
    return 'started';
  } catch (err) {
    return (err as Error).message;
  }
}

const client = { clientId: 'id', clientSecret: 'shh-secret-value' };
const RSA_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

describe('auth settings of a UserCollection', () => {
  it.each([
    [{ oauth: { providers: { corp: client } } }, /auth\.oauth\.providers\.corp: an OpenID Connect provider needs "issuer"/],
    [{ oauth: { providers: { google: { clientId: 'id' } } } }, /auth\.oauth\.providers\.google\.clientSecret is required/],
    [{ oauth: { providers: { x: { preset: 'myspace', ...client } } } }, /unknown preset "myspace"/],
    [{ oauth: { redirects: ['/relative'] } }, /auth\.oauth\.redirects: "\/relative" is not an absolute URL/],
    [{ oauth: { redirects: ['javascript:alert(1)'] } }, /must be an http\(s\) URL/],
    [{ oauth: { providers: { 'Bad Name': client } } }, /provider name "Bad Name"/],
    [{ mfa: { required: 'yes' } }, /auth\.mfa\.required must be true or false/],
    [{ mfa: { requried: true } }, /auth\.mfa: unknown setting "requried"/],
    [{ oauth: { redirect: ['https://a.example/'] } }, /auth\.oauth: unknown setting "redirect"/],
    [{ oauth: { providers: { google: { ...client, clientSecrett: 'x' } } } }, /auth\.oauth\.providers\.google: unknown setting "clientSecrett"/],
    [{ oauth: { providers: { google: { ...client, clientSecret: '${env:SVC_TEST_MISSING_OIDC_SECRET}' } } } }, /refers to \$\{env:SVC_TEST_MISSING_OIDC_SECRET\}, which is not set/],
    ['on', /resource users: auth must be an object/],
    [{ verfication: { enabled: true } }, /resource users: auth: unknown setting verfication \(known: verification, reset, codes, mail, mfa, oauth\)/],
    // Issue 43: the presets' own settings.
    [{ oauth: { providers: { google: { ...client, tenant: 'organizations' } } } }, /auth\.oauth\.providers\.google\.tenant is a setting of the microsoft preset/],
    [{ oauth: { providers: { microsoft: { ...client, tenant: 'evil.example/x?' } } } }, /auth\.oauth\.providers\.microsoft\.tenant must be common, organizations, consumers, a tenant id or a domain/],
    [{ oauth: { providers: { microsoft: { ...client, issuer: 'https://login.example/common' } } } }, /a Microsoft issuer ends with \/<tenant>\/v2\.0/],
    [{ oauth: { providers: { github: { clientId: 'id', teamId: 'TEAM123456', keyId: 'KEY1234567', privateKey: 'x' } } } }, /teamId, keyId and privateKey are settings of the apple preset/],
    [{ oauth: { providers: { apple: { ...client, teamId: 'TEAM123456', keyId: 'KEY1234567', privateKey: 'x' } } } }, /either clientSecret or teamId, keyId and privateKey, not both/],
    [{ oauth: { providers: { apple: { clientId: 'id', teamId: 'team', keyId: 'KEY1234567', privateKey: 'x' } } } }, /teamId must be Apple's 10-character team id/],
    [{ oauth: { providers: { apple: { clientId: 'id', teamId: 'TEAM123456', keyId: 'KEY1234567' } } } }, /auth\.oauth\.providers\.apple\.privateKey is required/],
    [{ oauth: { providers: { apple: { clientId: 'id', teamId: 'TEAM123456', keyId: 'KEY1234567', privateKey: '-----BEGIN PRIVATE KEY-----\nshh-secret-value\n-----END PRIVATE KEY-----' } } } }, /privateKey is not a PEM private key/],
    [{ oauth: { providers: { apple: { clientId: 'id', teamId: 'TEAM123456', keyId: 'KEY1234567', privateKey: RSA_KEY } } } }, /privateKey must be Apple's P-256 \(ES256\) key/],
    [{ oauth: { providers: { x: { ...client, scopes: ['users.read tweet.read'] } } } }, /scopes must be a list of non-empty strings without spaces/],
    [{ oauth: { signupWithoutEmail: 'no', providers: {} } }, /auth\.oauth\.signupWithoutEmail must be true or false/],
  ])('%j is refused at start', async (auth, message) => {
    const error = await startError(auth);
    expect(error).toMatch(message);
    expect(error).not.toContain('shh-secret-value');
  });

  it('presets need only the client; the secret may come from the environment', async () => {
    const h = await runApp({
      'resources/users/config.json': {
        type: 'UserCollection',
        auth: {
          oauth: {
            providers: {
              google: { clientId: 'g', clientSecret: '${env:SVC_TEST_PRESET_SECRET}' },
              github: client,
              microsoft: { ...client, tenant: 'organizations' },
              apple: client,
              gitlab: client,
            },
          },
        },
      },
    }).catch((err: unknown) => err as Error);
    // The variable is not set: the start names it.
    expect((h as Error).message).toMatch(/SVC_TEST_PRESET_SECRET/);
    process.env.SVC_TEST_PRESET_SECRET = 'from-env';
    const started = await runApp({ 'resources/users/config.json': { type: 'UserCollection', auth: { oauth: { providers: { google: { clientId: 'g', clientSecret: '${env:SVC_TEST_PRESET_SECRET}' }, github: client, apple: client, gitlab: client } } } } });
    try {
      expect((await started.request('GET', '/users/oauth')).body).toEqual({ providers: ['google', 'github', 'apple', 'gitlab'] });
      // GitHub's start needs no discovery: it goes to GitHub's authorize endpoint with PKCE.
      const res = await fetch(`${started.url}/users/oauth/github`, { redirect: 'manual' });
      const location = new URL(res.headers.get('location') as string);
      expect(`${location.origin}${location.pathname}`).toBe('https://github.com/login/oauth/authorize');
      expect(Object.fromEntries(location.searchParams)).toMatchObject({ client_id: 'id', scope: 'read:user user:email', code_challenge_method: 'S256', response_type: 'code' });
      expect(location.searchParams.get('redirect_uri')).toBe(`${started.url}/users/oauth/github/callback`);
      // Two-factor is off without auth.mfa: no routes.
      expect((await started.request('POST', '/users/mfa/enroll', {})).status).toBe(404);
    } finally {
      await started.close();
    }
  });

  it('OAuth2 presets go to their provider\'s own authorization endpoint with PKCE, state and their scopes', async () => {
    const names = ['github', 'bitbucket', 'discord', 'facebook', 'x', 'spotify', 'zoom'];
    const h = await runApp({ 'resources/users/config.json': { type: 'UserCollection', auth: { oauth: { providers: Object.fromEntries(names.map((n) => [n, client])) } } } });
    try {
      const where: Record<string, unknown> = {};
      for (const name of names) {
        const location = new URL((await fetch(`${h.url}/users/oauth/${name}`, { redirect: 'manual' })).headers.get('location') as string);
        expect(location.searchParams.get('code_challenge_method'), name).toBe('S256');
        expect(location.searchParams.get('state'), name).toMatch(/^[\w-]{43}$/);
        expect(location.searchParams.get('nonce'), name).toBeNull();
        where[name] = [`${location.origin}${location.pathname}`, location.searchParams.get('scope')];
      }
      expect(where).toEqual({
        github: ['https://github.com/login/oauth/authorize', 'read:user user:email'],
        bitbucket: ['https://bitbucket.org/site/oauth2/authorize', 'account email'],
        discord: ['https://discord.com/oauth2/authorize', 'identify email'],
        facebook: ['https://www.facebook.com/v22.0/dialog/oauth', 'email public_profile'],
        x: ['https://x.com/i/oauth2/authorize', 'users.read tweet.read'],
        spotify: ['https://accounts.spotify.com/authorize', 'user-read-email user-read-private'],
        // Zoom's scopes are the app's, set in its marketplace page: none is asked.
        zoom: ['https://zoom.us/oauth/authorize', null],
      });
    } finally {
      await h.close();
    }
  });
});
