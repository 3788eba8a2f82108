import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { UserCollectionDef } from '@svc/client';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { startSmtp, tokenIn } from './helpers/smtp.js';
import type { TestSmtp } from './helpers/smtp.js';

// Issue 38, item 17: login by email address was refused (username only) even with accounts on.
// POST /<users>/login takes {email, password} when a mail flow is on (the address is then a
// credential no other caller may change); Deployd's {username, password} works as before. The
// login limits apply, and neither the answer nor the work tells whether an account has the address.

const ROOT = { 'svc-ssh-key': 'any' };

for (const store of appStores()) {
  describe(`login by email address (${store} store)`, () => {
    let smtp: TestSmtp;
    let h: AppHandle;

    beforeAll(async () => {
      smtp = await startSmtp();
      const mail = { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'app@example.com', limits: { perRecipient: 1000, perClient: 10_000 } };
      h = await runApp(
        {
          'app.json': { passwordCost: 4, loginRateLimit: { max: 3, maxPerAddress: 1000 } },
          'resources/users/config.json': { type: 'UserCollection', properties: { email: { type: 'string', unique: true } }, auth: { reset: {}, mail } },
          // No unique index: an address may be several users'.
          'resources/members/config.json': { type: 'UserCollection', properties: { email: { type: 'string' } }, auth: { reset: {}, mail } },
          'resources/strict/config.json': { type: 'UserCollection', properties: { email: { type: 'string', unique: true } }, auth: { verification: { required: true }, mail } },
          // A Deployd app: no mail flow, the address is no credential.
          'resources/people/config.json': { type: 'UserCollection', properties: { email: { type: 'string' } } },
        },
        { store },
      );
      await h.request('POST', '/users', { username: 'ann', password: 'pw-ann', email: 'ann@example.com' });
      await h.request('POST', '/users', { username: 'bob', password: 'pw-bob', email: 'bob@example.com' });
      await h.request('POST', '/people', { username: 'cy', password: 'pw-cy', email: 'cy@example.com' });
    }, 60_000);
    afterAll(async () => {
      await h?.close();
      await smtp?.close();
    });

    it('{email, password} logs in as {username, password} does: the session and its cookie', async () => {
      const ann = h.client();
      const res = await ann('POST', '/users/login', { email: 'ann@example.com', password: 'pw-ann' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: expect.any(String), path: '/users', uid: expect.any(String) });
      expect(res.headers.getSetCookie().some((c) => c.startsWith('sid='))).toBe(true);
      expect((await ann('GET', '/users/me')).body).toMatchObject({ username: 'ann', email: 'ann@example.com' });
      // Deployd's form still works; the typed client takes either.
      const typed = () => createClient<{ resources: { users: UserCollectionDef<{ id: string; username: string }> } }>(h.url, { resources: [{ path: '/users', kind: 'users' }] });
      expect(await typed().users.login({ username: 'ann', password: 'pw-ann' })).toMatchObject({ path: '/users' });
      expect(await typed().users.login({ email: 'bob@example.com', password: 'pw-bob' })).toMatchObject({ path: '/users' });
    });

    it('an unknown address and a wrong password answer the same 401, with the same headers', async () => {
      const wrong = await h.client()('POST', '/users/login', { email: 'ann@example.com', password: 'nope' });
      const unknown = await h.client()('POST', '/users/login', { email: 'nobody@example.com', password: 'nope' });
      const byName = await h.client()('POST', '/users/login', { username: 'nobody', password: 'nope' });
      for (const res of [wrong, unknown, byName]) expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: wrong.body });
      expect((wrong.body as { message: string }).message).toBe('bad credentials');
      expect([...unknown.headers.keys()].sort()).toEqual([...wrong.headers.keys()].sort());
    });

    it('a username given wins (Deployd ignored other keys); an email that is not a non-empty string is refused before any lookup', async () => {
      const annId = ((await h.client()('POST', '/users/login', { username: 'ann', password: 'pw-ann' })).body as { uid: string }).uid;
      expect(((await h.client()('POST', '/users/login', { username: 'ann', password: 'pw-ann', email: 'bob@example.com' })).body as { uid: string }).uid).toBe(annId);
      for (const email of [{ $ne: null }, { $regex: '.' }, ['ann@example.com'], '', 5, null, true]) {
        const res = await h.client()('POST', '/users/login', { email, password: 'pw-ann' });
        expect(res.status, JSON.stringify(email)).toBe(400);
      }
      expect((await h.client()('POST', '/users/login', { email: 'ann@example.com' })).body).toMatchObject({ status: 400, message: 'email or password not specified' });
      expect((await h.client()('POST', '/users/login', {})).body).toMatchObject({ status: 400, message: 'username or password not specified' });
    });

    it('the login limits count attempts by the text given: the same for a known and an unknown address, and an address\'s count is not its user\'s', async () => {
      const statuses = async (email: string) => {
        const out: number[] = [];
        for (let i = 0; i < 4; i++) out.push((await h.request('POST', '/users/login', { email, password: 'wrong' })).status);
        return out;
      };
      expect(await statuses('bob@example.com')).toEqual([401, 401, 401, 429]);
      expect(await statuses('nobody-else@example.com')).toEqual([401, 401, 401, 429]);
      // Bob's username is another text: its count does not tell that bob@example.com is bob's.
      expect((await h.request('POST', '/users/login', { username: 'bob', password: 'wrong' })).status).toBe(401);
      expect((await h.request('POST', '/users/login', { username: 'bob', password: 'pw-bob' })).status).toBe(200);
    });

    it('without a mail flow the address is no credential: {email} is refused with a message, {username} works', async () => {
      const res = await h.client()('POST', '/people/login', { email: 'cy@example.com', password: 'pw-cy' });
      expect(res.status).toBe(400);
      expect((res.body as { message: string }).message).toMatch(/login by email needs auth\.verification, auth\.reset or auth\.codes/);
      expect((await h.client()('POST', '/people/login', { username: 'cy', password: 'pw-cy' })).status).toBe(200);
    });

    it('an address several users have logs in the one whose address svc proved, else nobody', async () => {
      await h.request('POST', '/members', { username: 'dee', password: 'pw-dee', email: 'shared@example.com' });
      await h.request('POST', '/members', { username: 'squatter', password: 'pw-squat', email: 'shared@example.com' });
      for (const password of ['pw-dee', 'pw-squat']) expect((await h.client()('POST', '/members/login', { email: 'shared@example.com', password })).status).toBe(401);
      expect((await h.client()('POST', '/members/login', { username: 'dee', password: 'pw-dee' })).status).toBe(200);
      // One of them resets the password by the link mailed to the address: svc proved it is theirs.
      await h.request('POST', '/members/requestPasswordReset', { email: 'shared@example.com' });
      expect((await h.request('POST', '/members/confirmPasswordReset', { token: tokenIn(await smtp.next('shared@example.com')), password: 'new-pw' })).status).toBe(204);
      const owner = h.client();
      expect((await owner('POST', '/members/login', { email: 'shared@example.com', password: 'new-pw' })).status).toBe(200);
      const username = ((await owner('GET', '/members/me')).body as { username: string }).username;
      const other = username === 'dee' ? 'pw-squat' : 'pw-dee';
      expect((await h.client()('POST', '/members/login', { email: 'shared@example.com', password: other })).status).toBe(401);
      expect(((await h.request('GET', '/members?email=shared@example.com', undefined, ROOT)).body as unknown[]).length).toBe(2);
    });

    it('verification.required applies: a right password for an address not confirmed is a 403, a wrong one a 401', async () => {
      await h.request('POST', '/strict', { username: 'eve', password: 'pw-eve', email: 'eve@example.com' });
      const link = tokenIn(await smtp.next('eve@example.com'));
      expect((await h.client()('POST', '/strict/login', { email: 'eve@example.com', password: 'nope' })).status).toBe(401);
      expect((await h.client()('POST', '/strict/login', { email: 'eve@example.com', password: 'pw-eve' })).body).toMatchObject({ status: 403, message: 'the email address is not verified yet' });
      await h.request('POST', '/strict/confirmVerification', { token: link });
      expect((await h.client()('POST', '/strict/login', { email: 'eve@example.com', password: 'pw-eve' })).status).toBe(200);
    });
  });
}
