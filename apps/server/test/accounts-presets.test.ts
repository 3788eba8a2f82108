import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { TestBrowser } from './helpers/oidc.js';
import { startSmtp, tokenIn } from './helpers/smtp.js';
import type { TestSmtp } from './helpers/smtp.js';
import { MS_CONSUMERS, STAND_IN_SECRET, formFields, numericId, startStandIns } from './helpers/standIns.js';
import type { PresetName, StandIns } from './helpers/standIns.js';

// Issue 43: sign-in presets for 15 providers, each against a local stand-in of its endpoints
// (helpers/standIns.ts) with the provider's quirks: Apple's form_post, `user` and private relay
// addresses and its signed client secret, Microsoft's tenant issuers and its unverified `email`,
// GitHub's and Bitbucket's address lists, Facebook's appsecret_proof and unflagged address, X
// without an address, Slack's error shape, Twitch's `claims`, Zoom's verified 1/0. A provider
// sign-in joins an existing account only through an address the provider vouches for and svc
// proved for that account (issue 38).

const ROOT = { 'svc-ssh-key': 'presets-root-key' };
const PROVED = 'proved@example.com';
const TENANT_A = '11111111-1111-4111-8111-111111111111';
const TENANT_B = '22222222-2222-4222-8222-222222222222';
const CONTOSO = '33333333-3333-4333-8333-333333333333';

/** Each preset: its provider's name in config.json, whether it vouches for addresses, whether it gives one. */
const PRESETS: { preset: PresetName; provider: string; vouches: boolean; address: boolean }[] = [
  { preset: 'google', provider: 'google', vouches: true, address: true },
  { preset: 'apple', provider: 'apple', vouches: true, address: true },
  { preset: 'microsoft', provider: 'microsoft', vouches: true, address: true },
  { preset: 'github', provider: 'github', vouches: true, address: true },
  { preset: 'gitlab', provider: 'gitlab', vouches: true, address: true },
  { preset: 'bitbucket', provider: 'bitbucket', vouches: true, address: true },
  { preset: 'discord', provider: 'discord', vouches: true, address: true },
  { preset: 'facebook', provider: 'facebook', vouches: false, address: true },
  { preset: 'x', provider: 'x', vouches: false, address: false },
  { preset: 'linkedin', provider: 'linkedin', vouches: true, address: true },
  { preset: 'slack', provider: 'slack', vouches: true, address: true },
  { preset: 'spotify', provider: 'spotify', vouches: false, address: true },
  { preset: 'twitch', provider: 'twitch', vouches: true, address: true },
  { preset: 'zoom', provider: 'zoom', vouches: true, address: true },
  { preset: 'oidc', provider: 'corp', vouches: true, address: true },
];

const title = (preset: string) => `${preset[0]?.toUpperCase() ?? ''}${preset.slice(1)}`;

for (const store of appStores()) {
  describe(`sign-in presets against their stand-ins (${store} store)`, () => {
    let h: AppHandle;
    let stand: StandIns;
    let smtp: TestSmtp;
    let provedId: string;

    beforeAll(async () => {
      stand = await startStandIns({ secretEnv: 'SVC_TEST_STANDIN_SECRET', appleKeyEnv: 'SVC_TEST_STANDIN_APPLE_KEY' });
      smtp = await startSmtp();
      process.env.SVC_TEST_STANDIN_SECRET = STAND_IN_SECRET;
      // As an environment variable often holds a PEM: on one line, its line breaks written as \n.
      process.env.SVC_TEST_STANDIN_APPLE_KEY = stand.apple.privateKeyPem.replaceAll('\n', '\\n');
      const map = { displayName: 'name' };
      const providers: Record<string, unknown> = {};
      for (const { preset, provider } of PRESETS) providers[provider] = stand.config(preset, { map: preset === 'twitch' ? { displayName: 'preferred_username' } : map });
      providers.apple = stand.config('apple', { map: { ...map, privateEmail: 'is_private_email' } });
      providers['ms-orgs'] = stand.config('microsoft', { tenant: 'organizations' });
      providers['ms-consumers'] = stand.config('microsoft', { tenant: 'consumers' });
      providers['ms-contoso'] = stand.config('microsoft', { tenant: CONTOSO });
      const mail = { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'app@example.com', limits: { perRecipient: 1000, perClient: 10_000 } };
      h = await runApp(
        {
          'app.json': { passwordCost: 4, loginRateLimit: { max: 1000, maxPerAddress: 100_000 } },
          '.svc/keys.json': { 'presets-root-key': true },
          'resources/users/config.json': {
            type: 'UserCollection',
            properties: { email: { type: 'string', unique: true }, displayName: { type: 'string' }, privateEmail: { type: 'boolean' } },
            auth: { verification: {}, mail, oauth: { providers } },
          },
          // No account without an address: by the setting, or because verification is required.
          'resources/members/config.json': {
            type: 'UserCollection',
            properties: { email: { type: 'string', unique: true } },
            auth: { oauth: { signupWithoutEmail: false, providers: { x: stand.config('x'), facebook: stand.config('facebook') } } },
          },
          'resources/staff/config.json': {
            type: 'UserCollection',
            properties: { email: { type: 'string', unique: true } },
            auth: { verification: { required: true }, mail, oauth: { providers: { x: stand.config('x') } } },
          },
        },
        { store },
      );
      for (const { preset } of PRESETS) {
        const name = `Ann ${title(preset)}`;
        const tid = preset === 'microsoft' ? TENANT_A : undefined;
        stand.add(
          preset,
          { sub: `${preset}-new`, email: `new-${preset}@example.com`, verified: true, name, tid },
          { sub: `${preset}-owner`, email: PROVED, verified: true, name, tid },
          { sub: `${preset}-unverified`, email: PROVED, verified: false, name, tid },
        );
      }
      // An address svc proved by mail: the account a vouched-for sign-in joins.
      const proved = await h.request('POST', '/users', { username: 'proved', email: PROVED, password: 'pw' });
      provedId = (proved.body as { id: string }).id;
      expect((await h.request('POST', '/users/confirmVerification', { token: tokenIn(await smtp.next(PROVED)) })).status).toBe(200);
    }, 60_000);
    afterAll(async () => {
      await h?.close();
      await stand?.close();
      await smtp?.close();
    });

    /** Starts a sign-in and follows it to the callback: a redirect, or Apple's page that POSTs the answer. */
    async function toCallback(b: TestBrowser, collection: string, provider: string, preset: PresetName, sub: string, query = ''): Promise<{ url: string; fields?: Record<string, string> }> {
      stand.next[preset] = sub;
      const start = await b.get(`${h.url}/${collection}/oauth/${provider}${query}`);
      if (start.status !== 302) throw new Error(`start: ${start.status} ${await start.text()}`);
      const at = await b.get(start.headers.get('location') as string);
      if (at.status === 302) return { url: at.headers.get('location') as string };
      const page = await at.text();
      const action = /action="([^"]+)"/.exec(page)?.[1];
      if (at.status !== 200 || action === undefined) throw new Error(`${preset} authorize: ${at.status} ${page}`);
      return { url: action.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n))), fields: formFields(page) };
    }

    async function complete(b: TestBrowser, to: { url: string; fields?: Record<string, string> }): Promise<{ status: number; body: Record<string, unknown>; browser: TestBrowser }> {
      const res =
        to.fields === undefined
          ? await b.get(to.url)
          : await b.get(to.url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(to.fields).toString() });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, browser: b };
    }

    async function signIn(provider: string, preset: PresetName, sub: string, collection = 'users'): Promise<{ status: number; body: Record<string, unknown>; browser: TestBrowser }> {
      const b = new TestBrowser();
      return complete(b, await toCallback(b, collection, provider, preset, sub));
    }

    async function me(b: TestBrowser, collection = 'users'): Promise<Record<string, unknown> | undefined> {
      const res = await b.get(`${h.url}/${collection}/me`);
      return res.status === 200 ? ((await res.json()) as Record<string, unknown>) : undefined;
    }

    it.each(PRESETS)('$preset: a first sign-in makes an account, with the address only when the provider vouches for it; the next finds it', async ({ preset, provider, vouches, address }) => {
      const first = await signIn(provider, preset, `${preset}-new`);
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      const user = await me(first.browser);
      const displayName = preset === 'twitch' ? `${preset}-new` : `Ann ${title(preset)}`;
      if (vouches) {
        expect(user).toMatchObject({ id: first.body.uid, username: `new-${preset}@example.com`, email: `new-${preset}@example.com`, verified: true, displayName });
      } else {
        // No address the provider vouches for: none is stored (a reset link could reach whoever holds it).
        expect(user).toMatchObject({ id: first.body.uid, username: expect.stringMatching(new RegExp(`^${provider}:.+`)), displayName });
        expect(user).not.toHaveProperty('email');
        expect(user?.verified).not.toBe(true);
      }
      if (!address) expect(stand.seen.some((s) => s.preset === preset && s.step === 'api')).toBe(true);
      const again = await signIn(provider, preset, `${preset}-new`);
      expect(again.body.uid).toBe(first.body.uid);
      expect(await (await again.browser.get(`${h.url}/users/methods`)).json()).toEqual({ password: false, providers: [provider], mfa: false });
      // PKCE and state went to every provider, a nonce to the OpenID Connect ones (the stand-ins refuse without).
      const asked = stand.seen.filter((s) => s.preset === preset && s.step === 'authorize').at(-1)?.params;
      expect(asked).toMatchObject({ code_challenge_method: 'S256', state: expect.stringMatching(/^[\w-]{43}$/) });
      expect(stand.seen.filter((s) => s.preset === preset && s.step === 'token').at(-1)?.params.code_verifier).toMatch(/^[\w-]{43}$/);
    });

    it.each(PRESETS)('$preset: joins the account svc proved the address for only when the provider vouches for it', async ({ preset, provider, vouches, address }) => {
      const owner = await signIn(provider, preset, `${preset}-owner`);
      if (vouches) {
        expect(owner.status, JSON.stringify(owner.body)).toBe(200);
        expect(owner.body.uid).toBe(provedId);
        // The same address, unverified at the provider: refused, not joined.
        const unverified = await signIn(provider, preset, `${preset}-unverified`);
        expect(unverified.status).toBe(409);
        expect(unverified.body.message).toMatch(/does not vouch for the address/);
        expect(await me(unverified.browser)).toBeUndefined();
      } else if (address) {
        // Facebook and Spotify never vouch: their address joins nobody, whatever the account.
        expect(owner.status).toBe(409);
        expect(await me(owner.browser)).toBeUndefined();
      } else {
        expect(owner.status).toBe(200);
        expect(owner.body.uid).not.toBe(provedId);
      }
    });

    it('the account svc proved the address for has every vouching provider linked, and no other', async () => {
      const methods = (await h.request('GET', `/users/methods?ids=${provedId}`, undefined, ROOT)).body as Record<string, { providers: string[] }>;
      expect(methods[provedId]?.providers.sort()).toEqual(PRESETS.filter((p) => p.vouches).map((p) => p.provider).sort());
    });

    it('Apple: the answer is POSTed; the name comes once in `user` (never the address); a private relay address; a client secret svc signed', async () => {
      stand.add('apple', { sub: 'apple-relay', email: 'x7k2q9@privaterelay.appleid.com', verified: true, privateRelay: true, name: 'Rel Ay' });
      const b = new TestBrowser();
      const start = await b.get(`${h.url}/users/oauth/apple`);
      expect(start.headers.getSetCookie().join()).toMatch(/svc_oauth=.*; Secure; SameSite=None/);
      stand.next.apple = 'apple-relay';
      const page = await (await b.get(start.headers.get('location') as string)).text();
      const fields = formFields(page);
      expect(JSON.parse(fields.user as string)).toEqual({ name: { firstName: 'Rel', lastName: 'Ay' }, email: 'x7k2q9@privaterelay.appleid.com' });
      const callback = `${h.url}/users/oauth/apple/callback`;
      // A forgery from another site: the browser holds no binding cookie for it.
      expect((await new TestBrowser().get(callback, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() })).status).toBe(400);
      expect((await b.get(`${callback}?${new URLSearchParams(fields).toString()}`)).status).toBe(404);
      // The browser posts `user`: names are taken from it, the address only from the signed ID token.
      const forged = { ...fields, user: JSON.stringify({ name: { firstName: 'Rel', lastName: 'Ay' }, email: PROVED }) };
      const done = await complete(b, { url: callback, fields: forged });
      expect(done.status).toBe(200);
      expect(await me(b)).toMatchObject({ username: 'x7k2q9@privaterelay.appleid.com', email: 'x7k2q9@privaterelay.appleid.com', verified: true, privateEmail: true, displayName: 'Rel Ay' });
      expect(stand.seen.filter((s) => s.preset === 'apple' && s.step === 'token').at(-1)?.params).toMatchObject({ auth: 'apple-jwt', client_secret: expect.stringMatching(/^ey/) });
      // Later sign-ins come without `user`: the same account, its name kept.
      const b2 = new TestBrowser();
      const again = await toCallback(b2, 'users', 'apple', 'apple', 'apple-relay');
      expect(again.fields).not.toHaveProperty('user');
      expect((await complete(b2, again)).body.uid).toBe(done.body.uid);
      expect(await me(b2)).toMatchObject({ displayName: 'Rel Ay' });
    });

    it('Microsoft: multi-tenant issuers take the token\'s tenant; a forged or foreign tenant is refused; organizations, consumers and one tenant', async () => {
      // One person per tenant and provider (each provider vouches for its own accounts only).
      const person = (sub: string, tid: string, more: object = {}) => ({ sub, email: `${sub}@example.com`, verified: true, tid, ...more });
      stand.add(
        'microsoft',
        person('ms-b', TENANT_B),
        person('ms-personal', MS_CONSUMERS),
        person('ms-forged', TENANT_A, { issTenant: TENANT_B }),
        person('ms-notguid', 'not-a-guid'),
        person('orgs-b', TENANT_B),
        person('orgs-personal', MS_CONSUMERS),
        person('cons-personal', MS_CONSUMERS),
        person('cons-b', TENANT_B),
        person('contoso-c', CONTOSO),
        person('contoso-b', TENANT_B),
      );
      const status = async (provider: string, sub: string) => (await signIn(provider, 'microsoft', sub)).status;
      // common: any tenant, each token checked against its own tenant's issuer.
      expect(await status('microsoft', 'ms-b')).toBe(200);
      expect(await status('microsoft', 'ms-personal')).toBe(200);
      expect(await status('microsoft', 'ms-forged')).toBe(401);
      expect(await status('microsoft', 'ms-notguid')).toBe(401);
      // organizations: work and school accounts only.
      expect(await status('ms-orgs', 'orgs-b')).toBe(200);
      expect(await status('ms-orgs', 'orgs-personal')).toBe(401);
      // consumers and a tenant id: discovery names that tenant's issuer, nothing else passes.
      expect(await status('ms-consumers', 'cons-personal')).toBe(200);
      expect(await status('ms-consumers', 'cons-b')).toBe(401);
      expect(await status('ms-contoso', 'contoso-c')).toBe(200);
      expect(await status('ms-contoso', 'contoso-b')).toBe(401);
    });

    it('Microsoft: without xms_edov its email is the tenant\'s word (nOAuth), whatever email_verified says: joins nothing', async () => {
      stand.add(
        'microsoft',
        { sub: 'ms-noauth', email: PROVED, tid: TENANT_B, claimsEmailVerified: true },
        { sub: 'ms-unvouched', email: 'someone@tenant-b.example', tid: TENANT_B, claimsEmailVerified: true },
      );
      const attack = await signIn('microsoft', 'microsoft', 'ms-noauth');
      expect(attack.status).toBe(409);
      expect(await me(attack.browser)).toBeUndefined();
      const unvouched = await signIn('microsoft', 'microsoft', 'ms-unvouched');
      expect(unvouched.status).toBe(200);
      expect(await me(unvouched.browser)).not.toHaveProperty('email');
    });

    it('GitHub: only the primary address of /user/emails, when verified, counts (a verified secondary does not)', async () => {
      stand.add('github', { sub: 'gh-secondary', email: 'primary-unverified@example.com', verified: false, secondary: 'secondary-verified@example.com' });
      const res = await signIn('github', 'github', 'gh-secondary');
      expect(res.status).toBe(200);
      expect(await me(res.browser)).not.toHaveProperty('email');
      expect(stand.seen.filter((s) => s.preset === 'github' && s.step === 'api').map((s) => s.params.path)).toEqual(expect.arrayContaining(['/user', '/user/emails']));
    });

    it('Bitbucket: the primary address on a later page of /user/emails is found', async () => {
      stand.add('bitbucket', { sub: 'bb-paged', email: 'paged@example.com', verified: true, primaryOnPage2: true, name: 'Bee Bee' });
      const res = await signIn('bitbucket', 'bitbucket', 'bb-paged');
      expect(res.status).toBe(200);
      expect(await me(res.browser)).toMatchObject({ email: 'paged@example.com', verified: true, displayName: 'Bee Bee' });
    });

    it('Bitbucket: a next page on another host is not asked (the access token goes to the API only)', async () => {
      stand.add('bitbucket', { sub: 'bb-elsewhere', email: 'elsewhere@example.com', verified: true, nextPage: `${stand.url.replace('127.0.0.1', 'localhost')}/bitbucket/api/2.0/user/emails?page=2` });
      const before = stand.seen.length;
      const res = await signIn('bitbucket', 'bitbucket', 'bb-elsewhere');
      expect(res.status).toBe(502);
      expect(res.body.message).toBe('bitbucket named a page of another host');
      expect(stand.seen.slice(before).filter((s) => s.step === 'api').map((s) => s.params.path)).toEqual(['/user', '/user/emails']);
    });

    it('X: a name such as x:<id> taken first by a password sign-up keeps nobody out; parallel first sign-ins make one account', async () => {
      stand.add('x', { sub: 'x-squatted', name: 'Sq Uatted' }, { sub: 'x-parallel', name: 'Pa Rallel' });
      const name = `x:${numericId('x-squatted')}`;
      expect((await h.request('POST', '/users', { username: name, password: 'squatter' })).status).toBe(200);
      const res = await signIn('x', 'x', 'x-squatted');
      expect(res.status).toBe(200);
      expect(await me(res.browser)).toMatchObject({ username: expect.stringMatching(new RegExp(`^${name}:[\\w-]{8}$`)), displayName: 'Sq Uatted' });
      // The same person's two first sign-ins at once: one account (the other may be refused, never a second account).
      const browsers = [new TestBrowser(), new TestBrowser()];
      const callbacks: { url: string; fields?: Record<string, string> }[] = [];
      for (const b of browsers) callbacks.push(await toCallback(b, 'users', 'x', 'x', 'x-parallel'));
      const results = await Promise.all(browsers.map((b, i) => complete(b, callbacks[i] as { url: string; fields?: Record<string, string> })));
      expect(results.some((r) => r.status === 200)).toBe(true);
      const all = (await h.request('GET', '/users', undefined, ROOT)).body as { id: string; username: string }[];
      const made = all.filter((u) => u.username.startsWith(`x:${numericId('x-parallel')}`));
      expect(made).toHaveLength(1);
      expect((await signIn('x', 'x', 'x-parallel')).body.uid).toBe(made[0]?.id);
    });

    it('Google: an ID token naming the issuer without its scheme is accepted', async () => {
      stand.add('google', { sub: 'g-noscheme', email: 'noscheme@example.com', verified: true, issWithoutScheme: true });
      expect((await signIn('google', 'google', 'g-noscheme')).status).toBe(200);
    });

    it('Facebook: Graph calls carry appsecret_proof (the access token signed with the app secret)', async () => {
      stand.add('facebook', { sub: 'fb-proof', email: 'fb-proof@example.com', name: 'Eff Bee' });
      expect((await signIn('facebook', 'facebook', 'fb-proof')).status).toBe(200);
      const call = stand.seen.filter((s) => s.preset === 'facebook' && s.step === 'api').at(-1)?.params;
      expect(call?.fields).toContain('email');
      expect(call?.appsecret_proof).toBe(createHmac('sha256', STAND_IN_SECRET).update(call?.token ?? '').digest('hex'));
    });

    it('Twitch: the address is asked for through the claims parameter', async () => {
      stand.add('twitch', { sub: 'tw-claims', email: 'tw-claims@example.com', verified: true });
      const res = await signIn('twitch', 'twitch', 'tw-claims');
      expect(await me(res.browser)).toMatchObject({ email: 'tw-claims@example.com' });
      const asked = stand.seen.filter((s) => s.preset === 'twitch' && s.step === 'authorize').at(-1)?.params.claims;
      expect(JSON.parse(asked as string)).toMatchObject({ id_token: { email: null, email_verified: null } });
    });

    it('Slack: a code it refuses (its 200 {ok: false}) is a refused sign-in', async () => {
      const b = new TestBrowser();
      const to = new URL((await toCallback(b, 'users', 'slack', 'slack', 'slack-new')).url);
      to.searchParams.set('code', 'a-code-slack-never-gave');
      const res = await complete(b, { url: to.toString() });
      expect(res.status).toBe(401);
      expect(res.body.message).toBe('slack refused the code');
    });

    it('Zoom: verified 0 is no vouching', async () => {
      stand.add('zoom', { sub: 'zoom-unverified', email: 'zoom-unverified@example.com', verified: false, name: 'Zed Oom' });
      const res = await signIn('zoom', 'zoom', 'zoom-unverified');
      expect(res.status).toBe(200);
      expect(await me(res.browser)).not.toHaveProperty('email');
    });

    it('no account without an address when auth.oauth.signupWithoutEmail is false or verification is required', async () => {
      for (const [collection, provider] of [['members', 'x'], ['members', 'facebook'], ['staff', 'x']] as const) {
        const res = await signIn(provider, provider, `${provider}-new`, collection);
        expect(res.status, `${collection} ${provider}`).toBe(403);
        expect(res.body.message).toBe(`${provider} did not give a verified email; log in another way and link ${provider} from your account`);
      }
    });
  });
}
