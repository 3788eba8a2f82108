import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { TestBrowser, startOp } from './helpers/oidc.js';
import type { TestOp } from './helpers/oidc.js';
import { codeIn, startSmtp, tokenIn } from './helpers/smtp.js';
import type { TestSmtp } from './helpers/smtp.js';

// Issue 38, item 3: account pre-hijacking through a client-set `verified`. With the first example
// config of docs/accounts.md (a `verified` property, OAuth and MFA on, mail verification off) an
// anonymous caller signed up with the victim's address and "verified": true, and the victim's first
// sign-in through the provider was linked to the attacker's account. A provider sign-in now joins
// an existing account only through an address svc itself proved (its mail flows) or the same
// provider vouched for; no property a client, root or a script writes decides it.

const ROOT = { 'svc-ssh-key': 'prehijack-root-key' };
const SECRET = 'op-client-secret-prehijack-0123456789';

for (const store of appStores()) {
  describe(`pre-hijacking a provider sign-in (${store} store)`, () => {
    let h: AppHandle;
    let op: TestOp;
    let op2: TestOp;
    let smtp: TestSmtp;

    beforeAll(async () => {
      op = await startOp();
      op2 = await startOp();
      smtp = await startSmtp();
      process.env.SVC_TEST_PREHIJACK_SECRET = SECRET;
      const client = { clientId: 'svc-app', clientSecret: '${env:SVC_TEST_PREHIJACK_SECRET}' };
      const providers = { op: { issuer: op.issuer, ...client }, other: { issuer: op2.issuer, ...client } };
      h = await runApp(
        {
          'app.json': { passwordCost: 4, scripts: { timeoutMs: 10_000 }, loginRateLimit: { max: 1000, maxPerAddress: 100_000 } },
          '.svc/keys.json': { 'prehijack-root-key': true },
          // docs/accounts.md's first example, as written: no script guards `verified`.
          'resources/users/config.json': {
            type: 'UserCollection',
            properties: { email: { type: 'string', unique: true }, verified: { type: 'boolean' }, displayName: { type: 'string' } },
            auth: { mfa: { issuer: 'My App' }, oauth: { providers } },
          },
          // An app that marks every new user verified in a script (server-side code).
          'resources/members/config.json': {
            type: 'UserCollection',
            properties: { email: { type: 'string', unique: true }, verified: { type: 'boolean' } },
            auth: { oauth: { providers: { op: providers.op } } },
          },
          'resources/members/post.js': 'this.verified = true;',
          // svc's own mail flows prove addresses.
          'resources/readers/config.json': {
            type: 'UserCollection',
            properties: { email: { type: 'string', unique: true } },
            auth: {
              verification: {},
              reset: {},
              codes: {},
              mail: { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'app@example.com', limits: { perRecipient: 1000, perClient: 10_000 } },
              oauth: { providers },
            },
          },
          'resources/notes/config.json': {
            type: 'Collection',
            properties: { text: { type: 'string' }, owner: { type: 'string' } },
            rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' }, create: { owner: '@me.id' } },
          },
        },
        { store },
      );
      const callbacks = (path: string) => ['op', 'other'].map((p) => `${h.url}/${path}/oauth/${p}/callback`);
      op.setClient({ clientId: 'svc-app', clientSecret: SECRET, redirectUris: [...callbacks('users'), ...callbacks('members'), ...callbacks('readers')] });
      op2.setClient({ clientId: 'svc-app', clientSecret: SECRET, redirectUris: [...callbacks('users'), ...callbacks('readers')] });
    }, 60_000);
    afterAll(async () => {
      await h?.close();
      await op?.close();
      await op2?.close();
      await smtp?.close();
    });

    let n = 0;
    /** A person at the provider with a verified address of their own. */
    function person(at: TestOp = op): { sub: string; email: string } {
      n++;
      const p = { sub: `victim-${n}-${store}`, email: `victim-${n}-${store}@example.com` };
      at.accounts.set(p.sub, { ...p, email_verified: true, name: `Victim ${n}` });
      return p;
    }

    /** The person `sub` signs in with the provider in a fresh browser: status, answer, browser. */
    async function providerLogin(path: string, provider: string, sub: string): Promise<{ status: number; body: Record<string, unknown>; browser: TestBrowser }> {
      const at = provider === 'other' ? op2 : op;
      at.next = sub;
      const b = new TestBrowser();
      const start = await b.get(`${h.url}/${path}/oauth/${provider}`);
      expect(start.status).toBe(302);
      const callback = await b.followUntil(start.headers.get('location') as string, `${h.url}/${path}/oauth/${provider}/callback`);
      const res = await b.get(callback);
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, browser: b };
    }

    /** The victim's provider sign-in must not reach the attacker's account, nor leak into it later. */
    async function expectNotJoined(path: string, victim: { sub: string }, attackerId: string, attackerPassword: { username: string; password: string }): Promise<void> {
      const res = await providerLogin(path, 'op', victim.sub);
      expect(res.status).toBe(409);
      expect(res.body.message).toMatch(/svc has not verified/);
      expect(res.body.uid).toBeUndefined();
      expect((await res.browser.get(`${h.url}/${path}/me`)).status).toBe(204);
      // Nothing was linked to the attacker's account: its sign-in methods are its password alone.
      const attacker = h.client();
      expect((await attacker('POST', `/${path}/login`, attackerPassword)).status).toBe(200);
      expect((await attacker('GET', `/${path}/methods`)).body).toEqual({ password: true, providers: [], mfa: false });
      expect((await attacker('GET', `/${path}/me`)).body).toMatchObject({ id: attackerId });
    }

    it('sign-up with "verified": true: the value is dropped and the victim\'s first provider sign-in is not joined to it', async () => {
      const victim = person();
      const credentials = { username: `mallory-${n}`, password: 'attacker password' };
      const squat = await h.request('POST', '/users', { ...credentials, email: victim.email, verified: true });
      expect(squat.status).toBe(200);
      const attackerId = (squat.body as { id: string }).id;
      expect((await h.request('GET', `/users/${attackerId}`, undefined, ROOT)).body).toMatchObject({ email: victim.email, verified: false });
      await expectNotJoined('users', victim, attackerId, credentials);
      // Had it been joined, the attacker would read what the victim keeps: the victim's notes stay theirs.
      const attacker = h.client();
      await attacker('POST', '/users/login', credentials);
      expect((await attacker('GET', '/notes')).body).toEqual([]);
    });

    it('PUT variant: a user\'s own "verified": true (value or modifier) is dropped and decides nothing', async () => {
      const victim = person();
      const credentials = { username: `mallory-${n}`, password: 'attacker password' };
      const attacker = h.client();
      const attackerId = ((await attacker('POST', '/users', { ...credentials, email: victim.email })).body as { id: string }).id;
      await attacker('POST', '/users/login', credentials);
      const put = await attacker('PUT', `/users/${attackerId}`, { verified: true, displayName: 'M' });
      expect(put.status).toBe(200);
      expect((await attacker('PUT', `/users/${attackerId}`, { verified: { $set: true } })).status).toBeLessThan(500);
      expect((await h.request('GET', `/users/${attackerId}`, undefined, ROOT)).body).toMatchObject({ verified: false, displayName: 'M' });
      await expectNotJoined('users', victim, attackerId, credentials);
    });

    it('root variant (as the dashboard\'s data grid sends it): root may set "verified", but it is not svc\'s proof of the address', async () => {
      const victim = person();
      const credentials = { username: `mallory-${n}`, password: 'attacker password' };
      const attackerId = ((await h.request('POST', '/users', { ...credentials, email: victim.email })).body as { id: string }).id;
      // The grid's edit of one cell: PUT /<users>/<id> {verified: true} with the dashboard's root key.
      const grid = await h.request('PUT', `/users/${attackerId}`, { verified: true }, { ...ROOT, origin: h.url, 'sec-fetch-site': 'same-origin' });
      expect(grid.status).toBe(200);
      expect(grid.body).toMatchObject({ verified: true });
      await expectNotJoined('users', victim, attackerId, credentials);
      // Root's own sign-up with "verified" (an import) is stored as root asked, and decides nothing either.
      const imported = person();
      const importedId = ((await h.request('POST', '/users', { username: `import-${n}`, password: 'pw', email: imported.email, verified: true }, ROOT)).body as { id: string }).id;
      expect((await h.request('GET', `/users/${importedId}`, undefined, ROOT)).body).toMatchObject({ verified: true });
      expect((await providerLogin('users', 'op', imported.sub)).status).toBe(409);
    });

    it('script variant: a script may set "verified" (server-side), but that is not svc\'s proof of the address either', async () => {
      const victim = person();
      const credentials = { username: `mallory-${n}`, password: 'attacker password' };
      const made = await h.request('POST', '/members', { ...credentials, email: victim.email });
      const attackerId = (made.body as { id: string }).id;
      expect((await h.request('GET', `/members/${attackerId}`, undefined, ROOT)).body).toMatchObject({ verified: true });
      await expectNotJoined('members', victim, attackerId, credentials);
    });

    it('the fields accounts keep (proof, identities, two-factor) are written by no client and no root request, by value or modifier', async () => {
      const victim = person();
      const credentials = { username: `mallory-${n}`, password: 'attacker password' };
      const forged = {
        _emailProof: { email: victim.email },
        _identities: ['op'],
        _mfa: { enabled: true, secret: 'JBSWY3DPEHPK3PXP' },
        _mfaRecovery: ['x'],
      };
      const attacker = h.client();
      const attackerId = ((await attacker('POST', '/users', { ...credentials, email: victim.email, ...forged })).body as { id: string }).id;
      await attacker('POST', '/users/login', credentials);
      for (const [who, headers] of [['self', {}], ['root', ROOT]] as const) {
        const as = who === 'self' ? attacker : h.request;
        expect((await as('PUT', `/users/${attackerId}`, forged, headers)).status, who).toBe(200);
        await as('PUT', `/users/${attackerId}`, { _identities: { $push: 'op' }, _emailProof: { $set: { email: victim.email } } }, headers);
      }
      for (const query of ['_emailProof.email', '_emailProof']) {
        expect((await h.request('GET', `/users?${encodeURIComponent(JSON.stringify({ [query]: victim.email }))}`, undefined, ROOT)).status, query).toBe(400);
      }
      expect(JSON.stringify((await h.request('GET', `/users/${attackerId}`, undefined, ROOT)).body)).not.toMatch(/_emailProof|_identities|_mfa/);
      await expectNotJoined('users', victim, attackerId, credentials);
    });

    it('an address svc verified by mail joins the provider sign-in; after root changes the address it no longer does', async () => {
      const owner = person();
      const credentials = { username: `owner-${n}`, password: 'owner password' };
      const id = ((await h.request('POST', '/readers', { ...credentials, email: owner.email })).body as { id: string }).id;
      // Unverified: not joined.
      expect((await providerLogin('readers', 'op', owner.sub)).status).toBe(409);
      expect((await h.request('POST', '/readers/confirmVerification', { token: tokenIn(await smtp.next(owner.email)) })).status).toBe(200);
      const joined = await providerLogin('readers', 'op', owner.sub);
      expect(joined.status).toBe(200);
      expect(joined.body.uid).toBe(id);
      // An address svc proved joins any provider that vouches for it (the same person at another provider).
      op2.accounts.set(owner.sub, { sub: owner.sub, email: owner.email, email_verified: true });
      expect((await providerLogin('readers', 'other', owner.sub)).body.uid).toBe(id);
      // Root moves the account to another address: the proof was for the old one.
      const moved = person();
      expect((await h.request('PUT', `/readers/${id}`, { email: moved.email, verified: true }, ROOT)).status).toBe(200);
      expect((await providerLogin('readers', 'op', moved.sub)).status).toBe(409);
    });

    it('a code sign-in and a password reset prove the address too', async () => {
      const byCode = person();
      const codeId = ((await h.request('POST', '/readers', { username: `code-${n}`, password: 'pw', email: byCode.email })).body as { id: string }).id;
      await smtp.next(byCode.email);
      expect((await h.request('POST', '/readers/requestCode', { email: byCode.email })).status).toBe(202);
      expect((await h.client()('POST', '/readers/loginWithCode', { email: byCode.email, code: codeIn(await smtp.next(byCode.email)) })).status).toBe(200);
      expect((await providerLogin('readers', 'op', byCode.sub)).body.uid).toBe(codeId);

      const byReset = person();
      const resetId = ((await h.request('POST', '/readers', { username: `reset-${n}`, password: 'pw', email: byReset.email })).body as { id: string }).id;
      await smtp.next(byReset.email);
      await h.request('POST', '/readers/requestPasswordReset', { email: byReset.email });
      expect((await h.request('POST', '/readers/confirmPasswordReset', { token: tokenIn(await smtp.next(byReset.email)), password: 'new password' })).status).toBe(204);
      expect((await providerLogin('readers', 'op', byReset.sub)).body.uid).toBe(resetId);
    });

    it('an address a provider vouched for joins that provider\'s sign-ins only', async () => {
      const first = person();
      const created = await providerLogin('users', 'op', first.sub);
      expect(created.status).toBe(200);
      // Another identity at the same provider with the same verified address (a new account there).
      op.accounts.set(`${first.sub}-again`, { sub: `${first.sub}-again`, email: first.email, email_verified: true });
      expect((await providerLogin('users', 'op', `${first.sub}-again`)).body.uid).toBe(created.body.uid);
      // Another provider's word for the address is not the first provider's.
      op2.accounts.set(first.sub, { sub: first.sub, email: first.email, email_verified: true });
      expect((await providerLogin('users', 'other', first.sub)).status).toBe(409);
      // The user links the other provider from their own account.
      const linked = await created.browser.get(`${h.url}/users/oauth/other?link=true`);
      expect(linked.status).toBe(302);
      op2.next = first.sub;
      const res = await created.browser.get(await created.browser.followUntil(linked.headers.get('location') as string, `${h.url}/users/oauth/other/callback`));
      expect(((await res.json()) as { uid: string }).uid).toBe(created.body.uid);
      expect(await (await created.browser.get(`${h.url}/users/methods`)).json()).toEqual({ password: false, providers: ['op', 'other'], mfa: false });
    });
  });
}
