import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { LoginAnswer, UserCollectionDef } from '@svc/client';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { totpNow } from './helpers/totp.js';

// Issue 27: TOTP two-factor (RFC 6238). Codes are single-use under concurrency on both stores (a
// used time step and a used recovery code are claimed by an insert under a unique id, which is
// atomic on FerretDB v1 too), and the second step goes through the login limiter.

const ROOT = { 'svc-ssh-key': 'mfa-root-key' };
type Request = AppHandle['request'];

const APP = {
  'app.json': { passwordCost: 4, loginRateLimit: { max: 6, windowSeconds: 60 } },
  '.svc/keys.json': { 'mfa-root-key': true },
  'resources/users/config.json': { type: 'UserCollection', properties: { email: { type: 'string' } }, auth: { mfa: { issuer: 'Svc Test' } } },
  'resources/staff/config.json': { type: 'UserCollection', properties: {}, auth: { mfa: { required: true } } },
};

for (const store of appStores()) {
  describe(`TOTP MFA (${store} store)`, () => {
    let h: AppHandle;
    let n = 0;

    beforeAll(async () => {
      h = await runApp(APP, { store });
    });
    afterAll(async () => {
      await h?.close();
    });

    /** A new user, logged in on a fresh client, with MFA enrolled (one TOTP step used by confirm). */
    async function enrolledUser(): Promise<{ username: string; secret: string; recoveryCodes: string[]; client: Request; id: string }> {
      const username = `u${++n}-${store}`;
      const created = await h.request('POST', '/users', { username, password: 'pw' });
      expect(created.status).toBe(200);
      const client = h.client();
      expect((await client('POST', '/users/login', { username, password: 'pw' })).status).toBe(200);
      const enrolled = await client('POST', '/users/mfa/enroll', {});
      expect(enrolled.status).toBe(200);
      const { secret, uri } = enrolled.body as { secret: string; uri: string };
      expect(secret).toMatch(/^[A-Z2-7]{32}$/);
      expect(uri).toBe(`otpauth://totp/Svc%20Test:${username}?secret=${secret}&issuer=Svc%20Test&algorithm=SHA1&digits=6&period=30`);
      const confirmed = await client('POST', '/users/mfa/confirm', { code: totpNow(secret) });
      expect(confirmed.status).toBe(200);
      const { recoveryCodes } = confirmed.body as { recoveryCodes: string[] };
      expect(recoveryCodes).toHaveLength(10);
      expect(new Set(recoveryCodes).size).toBe(10);
      return { username, secret, recoveryCodes, client, id: (created.body as { id: string }).id };
    }

    async function firstStep(username: string, client: Request = h.client()): Promise<string> {
      const login = await client('POST', '/users/login', { username, password: 'pw' });
      expect(login.status).toBe(200);
      expect(login.body).toEqual({ mfaRequired: true, mfaToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
      return (login.body as { mfaToken: string }).mfaToken;
    }

    if (store === 'embedded') it('the records of _auth are indexed by expiresAt (the sweep reads only the expired ones)', async () => {
      // The embedded engine lists its indexes in svc_indexes, by the table of each collection.
      const db = new DatabaseSync(join(h.dir, 'data', 'store.sqlite'), { readOnly: true });
      try {
        const row = db.prepare("SELECT i.field FROM svc_indexes i JOIN svc_collections c ON c.tbl = i.tbl WHERE c.name = '_auth' AND i.field = 'expiresAt'").get();
        expect(row).toEqual({ field: 'expiresAt' });
      } finally {
        db.close();
      }
    });

    it('enrolment needs a login and a first valid code', async () => {
      expect((await h.client()('POST', '/users/mfa/enroll', {})).status).toBe(401);
      await h.request('POST', '/users', { username: `wrong-${store}`, password: 'pw' });
      const client = h.client();
      await client('POST', '/users/login', { username: `wrong-${store}`, password: 'pw' });
      expect((await client('POST', '/users/mfa/confirm', { code: '123456' })).body).toMatchObject({ status: 400, message: expect.stringMatching(/enroll first/) });
      const { secret } = (await client('POST', '/users/mfa/enroll', {})).body as { secret: string };
      const wrong = totpNow(secret) === '000000' ? '111111' : '000000';
      expect((await client('POST', '/users/mfa/confirm', { code: wrong })).status).toBe(401);
      expect((await client('GET', '/users/mfa')).body).toEqual({ enabled: false, required: false, recoveryCodesLeft: 0 });
      // Not yet confirmed: the login needs no second step.
      expect((await h.client()('POST', '/users/login', { username: `wrong-${store}`, password: 'pw' })).body).toMatchObject({ path: '/users' });
    });

    it('a login of a user with MFA answers a second step and no session; the code completes it', async () => {
      const { username, secret, id } = await enrolledUser();
      const browser = h.client();
      const token = await firstStep(username, browser);
      expect((await browser('GET', '/users/me')).status).toBe(204);
      const done = await browser('POST', '/users/mfa/verify', { mfaToken: token, code: totpNow(secret, 1) });
      expect(done.status).toBe(200);
      expect(done.body).toEqual({ id: expect.any(String), path: '/users', uid: id });
      expect((await browser('GET', '/users/me')).body).toMatchObject({ id, username });
      // The bearer token works as after /login.
      const bearer = await fetch(`${h.url}/users/me`, { headers: { authorization: `Bearer ${(done.body as { id: string }).id}` } });
      expect(((await bearer.json()) as { id: string }).id).toBe(id);
      // The token was used once.
      expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: token, code: totpNow(secret, 1) })).status).toBe(401);
    });

    it('a code cannot be used twice: its time step is spent, also for another login', async () => {
      const { username, secret } = await enrolledUser();
      const code = totpNow(secret, 1);
      expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: await firstStep(username), code })).status).toBe(200);
      const again = await h.client()('POST', '/users/mfa/verify', { mfaToken: await firstStep(username), code });
      expect(again).toMatchObject({ status: 401, body: { message: 'invalid code' } });
      // The confirm's code (step now) is spent too.
      expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: await firstStep(username), code: totpNow(secret) })).status).toBe(401);
    });

    it('the same code sent in parallel with five login tokens logs in exactly once', async () => {
      const { username, secret } = await enrolledUser();
      const tokens = await Promise.all(Array.from({ length: 5 }, () => firstStep(username)));
      const code = totpNow(secret, 1);
      const answers = await Promise.all(tokens.map((mfaToken) => h.client()('POST', '/users/mfa/verify', { mfaToken, code })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401, 401]);
    });

    it('a recovery code works once, also in parallel, and is then gone', async () => {
      const { username, recoveryCodes, client } = await enrolledUser();
      const tokens = await Promise.all(Array.from({ length: 4 }, () => firstStep(username)));
      const code = recoveryCodes[0] as string;
      const answers = await Promise.all(tokens.map((mfaToken) => h.client()('POST', '/users/mfa/verify', { mfaToken, code: code.toUpperCase() })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401]);
      expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: await firstStep(username), code })).status).toBe(401);
      expect((await client('GET', '/users/mfa')).body).toEqual({ enabled: true, required: false, recoveryCodesLeft: 9 });
      expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: await firstStep(username), code: recoveryCodes[1] })).status).toBe(200);
    });

    it('secrets and recovery hashes are never answered, to root neither, nor filterable', async () => {
      const { id, secret, client } = await enrolledUser();
      const shown = [
        (await client('GET', '/users/me')).body,
        (await client('GET', `/users/${id}`)).body,
        (await h.request('GET', `/users/${id}`, undefined, ROOT)).body,
        (await h.request('GET', '/users', undefined, ROOT)).body,
      ];
      for (const body of shown) {
        expect(JSON.stringify(body)).not.toContain(secret);
        expect(JSON.stringify(body)).not.toMatch(/_mfa/);
      }
      // Asking for them in $fields answers as without them (issue 38); filtering or sorting on
      // them is refused (400), as for the password (issue 24).
      for (const [who, headers] of [['root', ROOT], ['user', undefined]] as const) {
        const probe = `/users/${id}?$fields=${encodeURIComponent(JSON.stringify({ _mfa: 1, _mfaRecovery: 1 }))}`;
        const res = who === 'root' ? await h.request('GET', probe, undefined, headers) : await client('GET', probe);
        expect(res.status, `${who} ${probe}`).toBe(200);
        expect(JSON.stringify(res.body)).not.toMatch(/_mfa/);
        expect(JSON.stringify(res.body)).not.toContain(secret);
      }
      const probes = [
        `/users?${encodeURIComponent('_mfa.enabled')}=true`,
        `/users?${encodeURIComponent(JSON.stringify({ _mfaRecovery: { $size: 10 } }))}`,
        `/users?${encodeURIComponent(JSON.stringify({ $sort: { _mfa: 1 } }))}`,
      ];
      for (const probe of probes) {
        for (const [who, headers] of [['root', ROOT], ['user', undefined]] as const) {
          const res = who === 'root' ? await h.request('GET', probe, undefined, headers) : await client('GET', probe);
          expect(res.status, `${who} ${probe}`).toBe(400);
          expect(JSON.stringify(res.body)).not.toContain(secret);
        }
      }
    });

    it('a client cannot write the MFA fields: POST and PUT drop them', async () => {
      const username = `forged-${store}`;
      const forged = { enabled: true, secret: 'JBSWY3DPEHPK3PXP' };
      const created = await h.request('POST', '/users', { username, password: 'pw', _mfa: forged, _mfaRecovery: ['x'], _identities: ['op'] });
      expect(created.status).toBe(200);
      const client = h.client();
      expect((await client('POST', '/users/login', { username, password: 'pw' })).body).toMatchObject({ path: '/users' });
      await client('PUT', `/users/${(created.body as { id: string }).id}`, { _mfa: forged });
      expect((await client('GET', '/users/mfa')).body).toMatchObject({ enabled: false });
      expect((await h.client()('POST', '/users/login', { username, password: 'pw' })).body).toMatchObject({ path: '/users' });
    });

    it('turning MFA off needs a current code', async () => {
      const { username, secret, client } = await enrolledUser();
      expect((await h.client()('POST', '/users/mfa/disable', { code: totpNow(secret, 1) })).status).toBe(401);
      expect((await client('POST', '/users/mfa/disable', { code: '12345' })).status).toBe(401);
      expect((await client('POST', '/users/mfa/disable', { code: totpNow(secret, 1) })).body).toEqual({ enabled: false });
      expect((await h.client()('POST', '/users/login', { username, password: 'pw' })).body).toMatchObject({ path: '/users' });
    });

    it('type confusion in every field is a 400, never a match', async () => {
      const { username, client } = await enrolledUser();
      const token = await firstStep(username);
      const bad: unknown[] = [{ $ne: '' }, ['123456'], 123456, null, true, { toString: 'x' }, ''];
      for (const value of bad) {
        expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: token, code: value })).status).toBe(400);
        expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: value, code: '123456' })).status).toBe(400);
        expect((await client('POST', '/users/mfa/disable', { code: value })).status).toBe(400);
        expect((await client('POST', '/users/mfa/confirm', { code: value })).status).toBe(400);
      }
      expect((await h.client()('POST', '/users/mfa/verify', ['x'])).status).toBe(400);
      expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: 'A'.repeat(43), code: '123456' })).status).toBe(401);
    });

    it('a login token takes 5 wrong codes, then the password must be given again', async () => {
      const { username, secret } = await enrolledUser();
      const token = await firstStep(username);
      const right = totpNow(secret, 1);
      const wrong = right === '000000' ? '111111' : '000000';
      const answers: unknown[] = [];
      for (let i = 0; i < 5; i++) answers.push((await h.client()('POST', '/users/mfa/verify', { mfaToken: token, code: wrong })).body);
      expect(answers.map((a) => (a as { message: string }).message)).toEqual(Array(5).fill('invalid code'));
      expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: token, code: right })).body).toMatchObject({ status: 401, message: 'invalid or expired mfaToken' });
      expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: await firstStep(username), code: right })).status).toBe(200);
    });

    it('wrong codes go through the login limiter (429 past loginRateLimit.max)', async () => {
      const { username, secret } = await enrolledUser();
      const right = totpNow(secret, 1);
      const wrong = right === '000000' ? '111111' : '000000';
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await h.client()('POST', '/users/mfa/verify', { mfaToken: await firstStep(username), code: wrong })).status);
      expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429]);
      expect((await h.client()('POST', '/users/mfa/verify', { mfaToken: await firstStep(username), code: right })).status).toBe(429);
    });

    it('@svc/client: login answers the step, mfa.verify completes it, me follows', async () => {
      const username = `client-${store}`;
      await h.request('POST', '/users', { username, password: 'pw' });
      const svc = createClient<{ resources: { users: UserCollectionDef<{ id: string; username: string }, LoginAnswer> } }>(h.url, { resources: [{ path: '/users', kind: 'users' }] });
      try {
        expect(await svc.users.login({ username, password: 'pw' })).toMatchObject({ uid: expect.any(String) });
        const { secret, uri } = await svc.users.mfa.enroll();
        expect(uri).toContain(secret);
        expect((await svc.users.mfa.confirm({ code: totpNow(secret) })).recoveryCodes).toHaveLength(10);
        expect(await svc.users.mfa.status()).toEqual({ enabled: true, required: false, recoveryCodesLeft: 10 });
        await svc.users.logout();
        const step = await svc.users.login({ username, password: 'pw' });
        expect(step).toEqual({ mfaRequired: true, mfaToken: expect.any(String) });
        expect(await svc.users.me()).toBeNull();
        if (!('mfaRequired' in step)) throw new Error('expected the second step');
        await expect(svc.users.mfa.verify({ mfaToken: step.mfaToken, code: totpNow(secret, 1) === '000000' ? '111111' : '000000' })).rejects.toMatchObject({ status: 401 });
        expect(await svc.users.mfa.verify({ mfaToken: step.mfaToken, code: totpNow(secret, 1) })).toMatchObject({ path: '/users' });
        expect(await svc.users.me()).toMatchObject({ username });
      } finally {
        svc.close();
      }
    });

    it('auth.mfa.required: a user without MFA enrols as the second step of the login', async () => {
      await h.request('POST', '/staff', { username: 'sam', password: 'pw' });
      const browser = h.client();
      const login = await browser('POST', '/staff/login', { username: 'sam', password: 'pw' });
      expect(login.body).toEqual({ mfaRequired: true, enroll: true, mfaToken: expect.any(String) });
      const mfaToken = (login.body as { mfaToken: string }).mfaToken;
      // An enrolment token is no verify token, and no session exists yet.
      expect((await browser('POST', '/staff/mfa/verify', { mfaToken, code: '123456' })).status).toBe(401);
      expect((await browser('GET', '/staff/me')).status).toBe(204);
      const { secret } = (await browser('POST', '/staff/mfa/enroll', { mfaToken })).body as { secret: string };
      const done = await browser('POST', '/staff/mfa/confirm', { mfaToken, code: totpNow(secret) });
      expect(done.body).toMatchObject({ path: '/staff', uid: expect.any(String), recoveryCodes: expect.any(Array) });
      expect((await browser('GET', '/staff/me')).body).toMatchObject({ username: 'sam' });
      // The next login asks for a code.
      const next = await h.client()('POST', '/staff/login', { username: 'sam', password: 'pw' });
      expect(next.body).toEqual({ mfaRequired: true, mfaToken: expect.any(String) });
    });
  });
}
