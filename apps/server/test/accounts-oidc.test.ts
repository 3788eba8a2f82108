import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { TestBrowser, startGitHubApi, startOp, startTokenProxy } from './helpers/oidc.js';
import type { IdTokenTamper, TestOp } from './helpers/oidc.js';
import { totpNow } from './helpers/totp.js';

// Issue 27: login with OpenID Connect against a real provider (the oidc-provider package), and
// the attacks on it: state/nonce/PKCE tampering, redirect variations, forged ID tokens (through a
// proxy that rewrites the provider's token answer), unverified-email linking and pre-hijack
// (PocketBase CVE-2024-38351), identity spoofing across providers (Parse GHSA-fr88-w35c-r596).

const ROOT = { 'svc-ssh-key': 'oidc-root-key' };
const SECRET = 'op-client-secret-0123456789abcdef';
const AFTER = 'https://app.example/after-login';

for (const store of appStores()) {
  describe(`OpenID Connect login (${store} store)`, () => {
    let h: AppHandle;
    let op: TestOp;
    let op2: TestOp;
    let proxy: Awaited<ReturnType<typeof startTokenProxy>>;
    let github: Awaited<ReturnType<typeof startGitHubApi>>;

    beforeAll(async () => {
      op = await startOp();
      op2 = await startOp();
      proxy = await startTokenProxy(op, SECRET);
      github = await startGitHubApi(op);
      process.env.SVC_TEST_OIDC_SECRET = SECRET;
      const client = { clientId: 'svc-app', clientSecret: '${env:SVC_TEST_OIDC_SECRET}' };
      h = await runApp(
        {
          // A loaded machine starts script processes slowly: the first script run must not be cut.
          'app.json': { passwordCost: 4, scripts: { timeoutMs: 10_000 } },
          '.svc/keys.json': { 'oidc-root-key': true },
          'resources/users/config.json': {
            type: 'UserCollection',
            properties: { email: { type: 'string' }, verified: { type: 'boolean' }, displayName: { type: 'string' }, logins: { type: 'number' } },
            auth: {
              mfa: {},
              oauth: {
                redirects: [AFTER],
                providers: {
                  op: { issuer: op.issuer, ...client, map: { displayName: 'name' } },
                  evil: { issuer: op.issuer, tokenEndpoint: proxy.url, ...client },
                  other: { issuer: op2.issuer, ...client },
                  // Apple's preset (the answer POSTed to the callback) against the test provider.
                  apple: { preset: 'apple', issuer: op.issuer, ...client, tokenAuth: 'client_secret_basic' },
                  // The GitHub preset's flow (OAuth2, then the user API) against the test provider.
                  github: {
                    ...client,
                    authorizationEndpoint: `${op.issuer}/auth`,
                    tokenEndpoint: `${op.issuer}/token`,
                    apiBase: github.url,
                    scopes: ['openid', 'email', 'profile'],
                    tokenAuth: 'client_secret_basic',
                    map: { displayName: 'name' },
                  },
                },
              },
            },
          },
          'resources/users/post.js': 'if (!isRoot) protect("verified");',
          'resources/users/put.js': 'if (!isRoot) protect("verified");',
          'resources/users/login.js': 'if (success) { this.logins = (this.logins || 0) + 1; } if (this.username === "blocked@example.com") cancel("blocked by On Login", 403);',
        },
        { store },
      );
      op.setClient({ clientId: 'svc-app', clientSecret: SECRET, redirectUris: [`${h.url}/users/oauth/op/callback`, `${h.url}/users/oauth/evil/callback`, `${h.url}/users/oauth/github/callback`, `${h.url}/users/oauth/apple/callback`] });
      op2.setClient({ clientId: 'svc-app', clientSecret: SECRET, redirectUris: [`${h.url}/users/oauth/other/callback`] });
      const people = [
        { sub: 'alice-sub', email: 'Alice@Example.com', email_verified: true, name: 'Alice' },
        { sub: 'bob-sub', email: 'bob@example.com', email_verified: true, name: 'Bob' },
        { sub: 'mallory-sub', email: 'victim@example.com', email_verified: false },
        { sub: 'string-false', email: 'victim@example.com', email_verified: 'false' },
        { sub: 'no-email' },
        { sub: 'owner-sub', email: 'owner@example.com', email_verified: true },
        { sub: 'verified-owner-sub', email: 'checked@example.com', email_verified: true },
        { sub: 'carol-sub', email: 'carol-unverified@example.com', email_verified: false },
        { sub: 'blocked-sub', email: 'blocked@example.com', email_verified: true },
        { sub: 'mfa-sub', email: 'mfa@example.com', email_verified: true },
        { sub: 'apple-sub', email: 'apple@example.com', email_verified: 'true' },
        { sub: 'apple-post-sub', email: 'apple-post@example.com', email_verified: 'true' },
        { sub: 'proxied-sub', email: 'proxied@example.com', email_verified: true },
      ];
      for (const p of people) op.accounts.set(p.sub, p);
      // The same sub at another provider is another person.
      op2.accounts.set('alice-sub', { sub: 'alice-sub', email: 'mallory@evil.example', email_verified: true });
      op2.accounts.set('bob-sub', { sub: 'bob-sub', email: 'Alice@Example.com', email_verified: false });
    });
    afterAll(async () => {
      await h?.close();
      await proxy?.close();
      await github?.close();
      await op?.close();
      await op2?.close();
    });

    /** Starts a login and follows the provider until it sends the browser back to svc. */
    async function toCallback(b: TestBrowser, provider: string, sub: string, query = ''): Promise<string> {
      const at = provider === 'other' ? op2 : op;
      at.next = sub;
      // Each login is a fresh one at the provider (no provider session from an earlier one).
      b.forget(new URL(at.issuer).host);
      const start = await b.get(`${h.url}/users/oauth/${provider}${query}`);
      expect({ status: start.status, body: start.status === 302 ? '' : await start.text() }).toEqual({ status: 302, body: '' });
      const location = start.headers.get('location') as string;
      const authorize = new URL(location);
      expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
      // GitHub has no OpenID Connect, hence no nonce.
      if (provider !== 'github') expect(authorize.searchParams.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      return b.followUntil(location, `${h.url}/users/oauth/${provider}/callback`);
    }

    async function login(provider: string, sub: string, b = new TestBrowser(), query = ''): Promise<{ status: number; body: Record<string, unknown>; browser: TestBrowser; location: string | null }> {
      const res = await b.get(await toCallback(b, provider, sub, query));
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, browser: b, location: res.headers.get('location') };
    }

    async function me(b: TestBrowser): Promise<Record<string, unknown> | undefined> {
      const res = await b.get(`${h.url}/users/me`);
      return res.status === 200 ? ((await res.json()) as Record<string, unknown>) : undefined;
    }

    it('a first login creates the user from the verified email, maps the profile and logs in as /login does', async () => {
      const b = new TestBrowser();
      const res = await b.get(await toCallback(b, 'op', 'alice-sub', `?redirect=${encodeURIComponent(AFTER)}`));
      expect({ status: res.status, body: res.status === 302 ? '' : await res.text() }).toEqual({ status: 302, body: '' });
      const location = new URL(res.headers.get('location') as string);
      expect(`${location.origin}${location.pathname}`).toBe(AFTER);
      const fragment = new URLSearchParams(location.hash.slice(1));
      expect(fragment.get('svc_path')).toBe('/users');
      const user = await me(b);
      expect(user).toEqual({ id: fragment.get('svc_uid'), username: 'alice@example.com', email: 'alice@example.com', verified: true, displayName: 'Alice', logins: 1 });
      // The fragment's session is a bearer token, as /login's id is.
      const bearer = await fetch(`${h.url}/users/me`, { headers: { authorization: `Bearer ${fragment.get('svc_session')}` } });
      expect(((await bearer.json()) as { id: string }).id).toBe(user?.id);
      expect(b.cookie(new URL(h.url).host, 'svc_oauth')).toBeUndefined();
      // How the user signs in: no password, this provider, no two-factor.
      expect(await (await b.get(`${h.url}/users/methods`)).json()).toEqual({ password: false, providers: ['op'], mfa: false });
      expect((await h.request('GET', '/users/methods')).status).toBe(401);
      expect((await h.request('GET', `/users/methods?ids=${user?.id as string},nobody`, undefined, ROOT)).body).toEqual({ [user?.id as string]: { password: false, providers: ['op'], mfa: false } });
      // A passwordless user cannot log in with an empty or any password.
      expect((await h.request('POST', '/users/login', { username: 'alice@example.com', password: 'x' })).status).toBe(401);
      // Identities are store-only: root does not see them either.
      expect(JSON.stringify((await h.request('GET', `/users/${user?.id as string}`, undefined, ROOT)).body)).not.toMatch(/_identities|alice-sub/);
    });

    it('the same identity logs the same user in again; without a redirect the callback answers JSON', async () => {
      const first = await login('op', 'bob-sub');
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ id: expect.any(String), path: '/users', uid: expect.any(String) });
      const again = await login('op', 'bob-sub');
      expect(again.body.uid).toBe(first.body.uid);
      expect(await me(again.browser)).toMatchObject({ id: first.body.uid, logins: 2 });
    });

    it('a provider that keeps the email out of the ID token gives it by userinfo (same sub checked)', async () => {
      // oidc-provider's default (conformIdTokenClaims) puts scope claims in userinfo only: every
      // login above went through it; the email came from there and matched the token's sub.
      const { body } = await login('op', 'apple-sub');
      expect(body.uid).toEqual(expect.any(String));
      expect(await h.request('GET', `/users/${body.uid as string}`, undefined, ROOT)).toMatchObject({ body: { email: 'apple@example.com', verified: true } });
    });

    it.each([
      ['another host', 'https://evil.example/after-login'],
      ['userinfo @', 'https://app.example@evil.example/after-login'],
      ['prefix match', 'https://app.example/after-login/../../evil'],
      ['longer path', 'https://app.example/after-login-evil'],
      ['query added', 'https://app.example/after-login?x=1'],
      ['percent-encoded', 'https://app.example/after%2Dlogin'],
      ['scheme change', 'http://app.example/after-login'],
      ['upper-case host', 'https://APP.example/after-login'],
      ['trailing slash', 'https://app.example/after-login/'],
      ['protocol-relative', '//evil.example/after-login'],
    ])('a redirect that is not exactly on the allow-list is refused: %s', async (_name, redirect) => {
      const b = new TestBrowser();
      const res = await b.get(`${h.url}/users/oauth/op?redirect=${encodeURIComponent(redirect)}`);
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.json()).toMatchObject({ status: 400, errors: { redirect: 'not allowed' } });
    });

    it('state: forged, from another browser, at another provider or replayed is refused', async () => {
      const b = new TestBrowser();
      const callback = await toCallback(b, 'op', 'bob-sub');
      const forged = new URL(callback);
      forged.searchParams.set('state', 'x'.repeat(43));
      expect((await b.get(forged.toString())).status).toBe(400);
      const elsewhere = new TestBrowser();
      expect((await elsewhere.get(callback)).status).toBe(400);
      expect(await me(elsewhere)).toBeUndefined();
      expect((await b.get(callback.replace('/oauth/op/', '/oauth/evil/'))).status).toBe(400);
      // The state lives in the browser's cookie, signed: a changed cookie is no login state.
      const host = new URL(h.url).host;
      const sealed = b.cookie(host, 'svc_oauth') as string;
      const [body, mac] = decodeURIComponent(sealed).split('.') as [string, string];
      const changed = { ...(JSON.parse(Buffer.from(body, 'base64url').toString()) as object), linkUid: 'someone-else' };
      b.setCookie(host, 'svc_oauth', `${Buffer.from(JSON.stringify(changed)).toString('base64url')}.${mac}`);
      expect((await b.get(callback)).status).toBe(400);
      b.setCookie(host, 'svc_oauth', sealed);
      // The real browser still completes it, once.
      expect((await b.get(callback)).status).toBe(200);
      expect((await b.get(callback)).status).toBe(400);
    });

    it('state and code as objects or arrays are refused', async () => {
      const b = new TestBrowser();
      const callback = new URL(await toCallback(b, 'op', 'bob-sub'));
      const state = callback.searchParams.get('state') as string;
      const code = callback.searchParams.get('code') as string;
      const base = `${h.url}/users/oauth/op/callback`;
      const json = (q: object) => encodeURIComponent(JSON.stringify(q));
      // Repeated keys make arrays and the JSON query form makes objects: neither is a state or a code.
      for (const query of [
        `state=${state}&state=${state}&code=${code}`,
        `state=${state}&code=${code}&code=${code}`,
        json({ state: { $ne: '' }, code }),
        json({ state, code: { $gt: '' } }),
        json({ state: [state], code }),
      ]) {
        expect((await b.get(`${base}?${query}`)).status).toBe(400);
      }
      for (const query of [`redirect=${encodeURIComponent(AFTER)}&redirect=${encodeURIComponent(AFTER)}`, json({ redirect: { $ne: '' } }), json({ redirect: [AFTER] })]) {
        expect((await b.get(`${h.url}/users/oauth/op?${query}`)).status).toBe(400);
      }
      // None of it used the state: the real callback still completes.
      expect((await b.get(callback.toString())).status).toBe(200);
    });

    it('PKCE: a code from another login (code injection) is refused by the provider', async () => {
      const victim = new TestBrowser();
      const victimCallback = new URL(await toCallback(victim, 'op', 'bob-sub'));
      const attacker = new TestBrowser();
      const attackerCallback = new URL(await toCallback(attacker, 'op', 'mallory-sub'));
      attackerCallback.searchParams.set('code', victimCallback.searchParams.get('code') as string);
      const res = await attacker.get(attackerCallback.toString());
      expect(res.status).toBe(401);
      expect(await me(attacker)).toBeUndefined();
    });

    it('the ID token path works through the proxy when the token is untouched (control)', async () => {
      proxy.mode = 'resign';
      const { status, browser } = await login('evil', 'proxied-sub');
      expect(status).toBe(200);
      expect(await me(browser)).toMatchObject({ username: 'proxied@example.com' });
    });

    it.each<[IdTokenTamper, number]>([
      ['audience', 401],
      ['issuer', 401],
      ['expired', 401],
      ['nonce', 401],
      ['no-nonce', 401],
      ['alg-none', 401],
      ['wrong-key', 401],
      ['hs256', 401],
      ['drop', 502],
    ])('a forged ID token is refused: %s', async (mode, status) => {
      proxy.mode = mode;
      try {
        const res = await login('evil', 'bob-sub');
        expect(res.status).toBe(status);
        expect(await me(res.browser)).toBeUndefined();
      } finally {
        proxy.mode = 'resign';
      }
    });

    it('an unverified email (false, "false", missing) joins no account: an account holding it is refused (409), else a new one without the address is made', async () => {
      const victim = await h.request('POST', '/users', { username: 'victim', email: 'victim@example.com', password: 'pw' });
      expect(victim.status).toBe(200);
      for (const sub of ['mallory-sub', 'string-false']) {
        const res = await login('op', sub);
        expect(res.status).toBe(409);
        expect(res.body.message).toMatch(/op does not vouch for the address/);
        expect(await me(res.browser)).toBeUndefined();
      }
      // No address at all: a new account of its own, with no address (nothing a reset link could reach).
      const none = await login('op', 'no-email');
      expect(none.status).toBe(200);
      const made = await me(none.browser);
      expect(made).toMatchObject({ id: none.body.uid, username: 'op:no-email' });
      expect(made).not.toHaveProperty('email');
      expect(made).not.toHaveProperty('verified');
      expect((await login('op', 'no-email')).body.uid).toBe(none.body.uid);
      expect(((await h.request('GET', '/users?email=victim@example.com', undefined, ROOT)).body as { id: string }[]).map((u) => u.id)).toEqual([(victim.body as { id: string }).id]);
    });

    it('pre-hijack: a password account with the email is not linked, whatever its verified says; its owner links from it', async () => {
      // The attacker registers the victim's email first, with a password of theirs.
      const squatted = await h.request('POST', '/users', { username: 'owner@example.com', email: 'owner@example.com', password: 'attacker', verified: true });
      expect(squatted.status).toBe(200);
      const refused = await login('op', 'owner-sub');
      expect(refused.status).toBe(409);
      expect(await me(refused.browser)).toBeUndefined();
      expect((await login('op', 'owner-sub')).status).toBe(409);
      // Marked verified by root (svc did not prove the address): not linked either
      // (accounts-prehijack.test.ts: addresses svc proved by mail are).
      const checked = await h.request('POST', '/users', { username: 'checked', email: 'checked@example.com', password: 'pw' });
      const checkedId = (checked.body as { id: string }).id;
      await h.request('PUT', `/users/${checkedId}`, { verified: true }, ROOT);
      expect((await login('op', 'verified-owner-sub')).status).toBe(409);
      // The owner logs in and links the provider; it stays linked.
      const owner = new TestBrowser();
      await owner.get(`${h.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'checked', password: 'pw' }) });
      expect((await login('op', 'verified-owner-sub', owner, '?link=true')).body.uid).toBe(checkedId);
      expect((await login('op', 'verified-owner-sub')).body.uid).toBe(checkedId);
    });

    it('a logged-in user links a provider explicitly (any email); a linked identity is not taken over', async () => {
      await h.request('POST', '/users', { username: 'carol', password: 'pw' });
      const carol = new TestBrowser();
      const loggedIn = await carol.get(`${h.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'carol', password: 'pw' }) });
      const carolId = ((await loggedIn.json()) as { uid: string }).uid;
      expect((await new TestBrowser().get(`${h.url}/users/oauth/op?link=true`)).status).toBe(401);
      const linked = await login('op', 'carol-sub', carol, '?link=true');
      expect(linked.body.uid).toBe(carolId);
      expect(await (await carol.get(`${h.url}/users/methods`)).json()).toEqual({ password: true, providers: ['op'], mfa: false });
      expect((await login('op', 'carol-sub')).body.uid).toBe(carolId);
      // Bob's identity cannot be linked to carol.
      const taken = await login('op', 'bob-sub', carol, '?link=true');
      expect(taken.status).toBe(409);
    });

    it('identity spoofing: the same sub at another provider is another person', async () => {
      const alice = await login('op', 'alice-sub');
      const other = await login('other', 'alice-sub');
      expect(other.status).toBe(200);
      expect(other.body.uid).not.toBe(alice.body.uid);
      expect(await me(other.browser)).toMatchObject({ username: 'mallory@evil.example' });
      // An unverified claim of alice's email at the other provider gets nothing.
      const claim = await login('other', 'bob-sub');
      expect(claim.status).toBe(409);
      expect(await me(claim.browser)).toBeUndefined();
    });

    it('provider logins count in the login limiter: the 11th refused login of one identity is a 429', async () => {
      // An unverified address an account holds: refused (409) each time.
      await h.request('POST', '/users', { username: 'limited', email: 'limited@example.com', password: 'pw' });
      op.accounts.set('limited-sub', { sub: 'limited-sub', email: 'limited@example.com', email_verified: false });
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await login('op', 'limited-sub')).status);
      expect(statuses).toEqual([...Array(10).fill(409), 429]);
    });

    it('On Login runs for provider logins and may refuse them', async () => {
      const res = await login('op', 'blocked-sub');
      expect(res.status).toBe(403);
      expect(res.body.message).toBe('blocked by On Login');
      expect(await me(res.browser)).toBeUndefined();
    });

    it('two-factor applies to provider logins: the callback answers the second step', async () => {
      const first = await login('op', 'mfa-sub');
      const enroll = await first.browser.get(`${h.url}/users/mfa/enroll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      const { secret } = (await enroll.json()) as { secret: string };
      await first.browser.get(`${h.url}/users/mfa/confirm`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: totpNow(secret) }) });
      const b = new TestBrowser();
      const res = await b.get(await toCallback(b, 'op', 'mfa-sub', `?redirect=${encodeURIComponent(AFTER)}`));
      const fragment = new URLSearchParams(new URL(res.headers.get('location') as string).hash.slice(1));
      expect(fragment.get('svc_session')).toBeNull();
      expect(await me(b)).toBeUndefined();
      const verify = await b.get(`${h.url}/users/mfa/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ mfaToken: fragment.get('svc_mfa'), code: totpNow(secret, 1) }),
      });
      expect(verify.status).toBe(200);
      expect(await me(b)).toMatchObject({ username: 'mfa@example.com' });
    });

    it('a refused login with a redirect goes back to the app with the error in the fragment', async () => {
      const b = new TestBrowser();
      const res = await b.get(await toCallback(b, 'op', 'blocked-sub', `?redirect=${encodeURIComponent(AFTER)}`));
      expect(res.status).toBe(302);
      const location = new URL(res.headers.get('location') as string);
      expect(`${location.origin}${location.pathname}`).toBe(AFTER);
      expect(new URLSearchParams(location.hash.slice(1)).get('svc_oauth_error')).toBe('blocked by On Login');
    });

    it('a login the person refused at the provider comes back as an error, and its state is spent', async () => {
      const b = new TestBrowser();
      const callback = new URL(await toCallback(b, 'op', 'bob-sub', `?redirect=${encodeURIComponent(AFTER)}`));
      const denied = `${callback.origin}${callback.pathname}?error=access_denied&state=${callback.searchParams.get('state') as string}`;
      const res = await b.get(denied);
      expect(new URLSearchParams(new URL(res.headers.get('location') as string).hash.slice(1)).get('svc_oauth_error')).toBe('the provider refused the login (access_denied)');
      expect(await me(b)).toBeUndefined();
      expect((await b.get(callback.toString())).status).toBe(400);
    });

    it('a deleted user takes its identities along', async () => {
      const first = await login('op', 'bob-sub');
      expect((await h.request('DELETE', `/users/${first.body.uid as string}`, undefined, ROOT)).status).toBe(204);
      const next = await login('op', 'bob-sub');
      expect(next.status).toBe(200);
      expect(next.body.uid).not.toBe(first.body.uid);
    });

    it('GitHub: the user API names the person, and only a verified primary email counts', async () => {
      op.accounts.set('gh-ok', { sub: 'gh-ok', email: 'octo@example.com', email_verified: true, name: 'Octo' });
      op.accounts.set('gh-unverified', { sub: 'gh-unverified', email: 'octo-unverified@example.com', email_verified: false });
      const ok = await login('github', 'gh-ok');
      expect(ok.status).toBe(200);
      expect(await me(ok.browser)).toMatchObject({ username: 'octo@example.com', displayName: 'Octo', verified: true });
      expect((await login('github', 'gh-ok')).body.uid).toBe(ok.body.uid);
      // An unverified primary: an account without an address (a verified secondary email is not the
      // person's address of record either).
      const unvouched = await login('github', 'gh-unverified');
      expect(unvouched.status).toBe(200);
      const made = await me(unvouched.browser);
      expect(made).toMatchObject({ id: unvouched.body.uid, username: 'github:gh-unverified' });
      expect(made).not.toHaveProperty('email');
      expect(made).not.toHaveProperty('verified');
      // GitHub's id 'alice-sub' is not op's 'alice-sub'.
      op.accounts.set('alice-sub', { sub: 'alice-sub', email: 'alice-gh@example.com', email_verified: true });
      const gh = await login('github', 'alice-sub');
      op.accounts.set('alice-sub', { sub: 'alice-sub', email: 'Alice@Example.com', email_verified: true, name: 'Alice' });
      const viaOp = await login('op', 'alice-sub');
      expect(gh.body.uid).not.toBe(viaOp.body.uid);
    });

    it('Apple: the provider POSTs the answer (form_post) and the login completes; a GET callback is refused', async () => {
      const b = new TestBrowser();
      op.next = 'apple-post-sub';
      const start = await b.get(`${h.url}/users/oauth/apple`);
      expect(start.headers.getSetCookie().join()).toMatch(/svc_oauth=.*SameSite=None/);
      const authorize = new URL(start.headers.get('location') as string);
      expect(authorize.searchParams.get('response_mode')).toBe('form_post');
      // The provider's last answer is a page whose form posts code and state to the callback.
      let url = authorize.toString();
      let page = '';
      for (let hops = 0; hops < 10 && page === ''; hops++) {
        const res = await b.get(url);
        const location = res.headers.get('location');
        if (location !== null) url = new URL(location, url).toString();
        else page = await res.text();
      }
      const fields = Object.fromEntries([...page.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      expect(page).toContain(`${h.url}/users/oauth/apple/callback`);
      expect((await b.get(`${h.url}/users/oauth/apple/callback?${new URLSearchParams(fields as Record<string, string>).toString()}`)).status).toBe(404);
      const posted = await b.get(`${h.url}/users/oauth/apple/callback`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields as Record<string, string>).toString(),
      });
      expect(posted.status).toBe(200);
      expect(await me(b)).toMatchObject({ username: 'apple-post@example.com' });
    });

    it('lists the providers; an unknown provider is a 404', async () => {
      expect((await h.request('GET', '/users/oauth')).body).toEqual({ providers: ['op', 'evil', 'other', 'apple', 'github'] });
      expect((await h.request('GET', '/users/oauth/nope')).status).toBe(404);
      expect((await h.request('GET', '/users/oauth/__proto__')).status).toBe(404);
    });
  });
}
