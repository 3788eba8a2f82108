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
});
