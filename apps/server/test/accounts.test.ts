import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { createClient } from '@svc/client';
import type { SessionInfo, UserCollectionDef } from '@svc/client';
import { appStores, memoryLogger, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { codeIn, startSmtp, tokenIn } from './helpers/smtp.js';
import type { TestSmtp } from './helpers/smtp.js';

// Issue 27: password reset, email verification and one-time codes / magic links by mail, read from
// a real SMTP server; every flow on both stores, and the attacks of the advisories.

type Request = AppHandle['request'];

const FORGED = 'A'.repeat(43);
/** Root in development (any key from this machine): the account fields are private to others (issue 38). */
const ROOT = { 'svc-ssh-key': 'any' };

function usersConfig(port: number, auth: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    type: 'UserCollection',
    properties: { email: { type: 'string', unique: true }, name: { type: 'string' } },
    auth: {
      verification: {},
      reset: { url: 'https://app.example.com/reset?token={token}' },
      codes: { url: 'https://app.example.com/magic?token={token}' },
      mail: { smtp: { host: '127.0.0.1', port }, from: 'Books <books@example.com>', limits: { perRecipient: 1000, perClient: 10_000 } },
      ...auth,
    },
    ...extra,
  };
}

describe.each(appStores())('accounts by mail (%s store)', { concurrent: true }, (store) => {
  // The stores side by side (their apps are apart); each store's tests one at a time, in order.
  describe('one test at a time', { concurrent: false }, () => {
    let smtp: TestSmtp;
    let app: AppHandle;
    let n = 0;
    const serverLog = memoryLogger();
    /** A fresh address and username per test. */
    const fresh = () => {
      n++;
      return { username: `u${n}-${store}`, email: `u${n}-${store}@example.com`, password: 'first password' };
    };

    beforeAll(async () => {
      smtp = await startSmtp();
      app = await runApp(
        {
          'app.json': { passwordCost: 4, loginRateLimit: { max: 1000, maxPerAddress: 100_000 } },
          'resources/users/config.json': usersConfig(smtp.port),
          'resources/members/config.json': usersConfig(smtp.port, { verification: { required: true }, reset: undefined, codes: {} }),
          'resources/members/login.js': "if (success && this.name === 'blocked') cancel('blocked by On Login', 403);",
          'resources/members/mail/code.subject.txt': 'Dein Code {{code}}\r\nBcc: evil@example.com',
          'resources/members/mail/de/code.txt': 'Hallo {{username}}, dein code is {{code}} ({{link}})',
          'resources/members/mail/code.html': '<p>{{username}} {{code}}</p>',
          'resources/users/beforereset.js': "if (this.name === 'no-reset' && event === 'RESET') cancel('resets are off for this user', 403);",
          'resources/pings/config.json': { type: 'Collection', properties: { to: { type: 'string' } } },
          'resources/pings/post.js': "emit('users', { id: this.to }, 'dm', this.to); emit('marker', this.to);",
          'resources/staff/config.json': usersConfig(smtp.port, { mail: { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'b@example.com', limits: { perRecipient: 2, perClient: 1000 } } }),
        },
        { store, logger: serverLog },
      );
      // The first script run starts the script process: done here, not inside a test's request.
      await app.request('POST', '/pings', { to: 'warm-up' });
    }, 60_000);
    afterAll(async () => {
      if (process.env.SVC_TEST_PRINT_LOG) process.stderr.write(serverLog.lines.join('\n'));
      await app?.close();
      await smtp?.close();
    });

    /** Signs a user up (and takes the sign-up's verification mail); answers its id. */
    async function signUp(request: Request, user: { username: string; email: string; password: string }, path = '/users'): Promise<string> {
      const res = await request('POST', path, user);
      expect(res.status).toBe(200);
      await smtp.next(user.email);
      return (res.body as { id: string }).id;
    }

    it('sign-up mails a verification token; verified is false until it is confirmed, and the token works once', async () => {
      const user = fresh();
      const res = await app.client()('POST', '/users', { ...user, verified: true });
      expect(res.status).toBe(200);
      // The address and the flag are private: not even the sign-up's answer holds them (the user reads them at /me).
      expect(res.body).not.toHaveProperty('email');
      expect(res.body).not.toHaveProperty('verified');
      expect((await app.request('GET', `/users/${(res.body as { id: string }).id}`, undefined, ROOT)).body).toMatchObject({ email: user.email, verified: false });
      const mail = await smtp.next(user.email);
      expect(mail.parsed.subject).toBe('Confirm your email address');
      expect(mail.parsed.from?.text).toBe('"Books" <books@example.com>');
      const token = tokenIn(mail);
      const confirmed = await app.request('POST', '/users/confirmVerification', { token });
      expect(confirmed).toMatchObject({ status: 200, body: { verified: true, email: user.email } });
      const id = (res.body as { id: string }).id;
      expect((await app.request('GET', `/users/${id}`, undefined, ROOT)).body).toMatchObject({ verified: true });
      expect((await app.request('POST', '/users/confirmVerification', { token })).status).toBe(400);
    });

    it('the built-in mails say in words how long they work, and a flow without a url calls no token a link (issue 38, 18)', async () => {
      const user = fresh();
      // users: verification without a url (1 day), reset and codes with one (1 hour, 10 minutes).
      expect((await app.request('POST', '/users', user)).status).toBe(200);
      const verification = await smtp.next(user.email);
      expect(verification.parsed.text).toContain('enter this key where the app asks for it:');
      expect(verification.parsed.text).toContain('The key is valid for 1 day.');
      expect(verification.parsed.text).not.toMatch(/link|minutes/);
      expect(verification.parsed.html).toContain('The key is valid for 1 day.');
      await app.request('POST', '/users/requestPasswordReset', { email: user.email });
      const reset = await smtp.next(user.email);
      expect(reset.parsed.text).toContain('https://app.example.com/reset?token=');
      expect(reset.parsed.text).toContain('The link is valid for 1 hour and works once.');
      await app.request('POST', '/users/requestCode', { email: user.email });
      const code = await smtp.next(user.email);
      expect(code.parsed.text).toMatch(/or sign in with this link:\n\nhttps:\/\/app\.example\.com\/magic\?token=/);
      expect(code.parsed.text).toContain('Both are valid for 10 minutes and work once.');
      // members: codes without a url: the code alone, no token called a link.
      const member = fresh();
      expect((await app.request('POST', '/members', member)).status).toBe(200);
      await smtp.next(member.email);
      await app.request('POST', '/members/requestCode', { email: member.email });
      const memberCode = await smtp.next(member.email);
      expect(memberCode.parsed.text).toMatch(/^Hello [^\n]+,\n\nyour sign-in code is \d{6}\n\nIt is valid for 10 minutes and works once\./);
      expect(memberCode.parsed.text).not.toMatch(/link|[A-Za-z0-9_-]{43}/);
    });

    it('verified cannot be written by a client (create or update), but root can', async () => {
      const user = fresh();
      const client = app.client();
      const id = await signUp(client, user);
      await client('POST', '/users/login', { username: user.username, password: user.password });
      expect((await client('PUT', `/users/${id}`, { verified: true, name: 'x' })).body).toMatchObject({ name: 'x' });
      expect((await client('GET', '/users/me')).body).toMatchObject({ verified: false, name: 'x' });
      expect((await app.request('PUT', `/users/${id}`, { verified: true }, ROOT)).status).toBe(200);
      expect((await app.request('GET', `/users/${id}`, undefined, ROOT)).body).toMatchObject({ verified: true });
    });

    it('requestPasswordReset answers the same for a known and an unknown address; only the known one gets a mail', async () => {
      const user = fresh();
      await signUp(app.request, user);
      const known = await app.request('POST', '/users/requestPasswordReset', { email: user.email });
      const unknown = await app.request('POST', '/users/requestPasswordReset', { email: `nobody-${n}@example.com` });
      expect(known.status).toBe(202);
      expect(unknown.status).toBe(known.status);
      expect(unknown.body).toEqual(known.body);
      expect([...unknown.headers.keys()].sort()).toEqual([...known.headers.keys()].sort());
      const mail = await smtp.next(user.email);
      expect(mail.parsed.text).toContain('https://app.example.com/reset?token=');
      // The mail to the known address came; give the other the same time: none comes.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(smtp.pending(`nobody-${n}@example.com`)).toHaveLength(0);
    });

    it('confirmPasswordReset sets the password, ends every session (cookie and Bearer) and works once', async () => {
      const user = fresh();
      const id = await signUp(app.request, user);
      const cookieClient = app.client();
      expect((await cookieClient('POST', '/users/login', { username: user.username, password: user.password })).status).toBe(200);
      const bearer = (await app.client()('POST', '/users/login', { username: user.username, password: user.password })).body as { id: string };
      const bearerHeaders = { authorization: `Bearer ${bearer.id}` };
      expect((await app.client()('GET', '/users/me', undefined, bearerHeaders)).body).toMatchObject({ id });
      expect((await cookieClient('GET', '/users/me')).body).toMatchObject({ id });

      await app.request('POST', '/users/requestPasswordReset', { email: user.email });
      const token = tokenIn(await smtp.next(user.email));
      expect((await app.request('POST', '/users/confirmPasswordReset', { token, password: 'second password' })).status).toBe(204);
      expect((await cookieClient('GET', '/users/me')).status).toBe(204);
      expect((await app.client()('GET', '/users/me', undefined, bearerHeaders)).status).toBe(204);
      expect((await app.client()('POST', '/users/login', { username: user.username, password: user.password })).status).toBe(401);
      expect((await app.client()('POST', '/users/login', { username: user.username, password: 'second password' })).status).toBe(200);
      // Used: a second reset with it fails, and the password stays.
      expect((await app.request('POST', '/users/confirmPasswordReset', { token, password: 'third password' })).status).toBe(400);
      expect((await app.client()('POST', '/users/login', { username: user.username, password: 'second password' })).status).toBe(200);
      // A reset proves the address.
      expect((await app.request('GET', `/users/${id}`, undefined, ROOT)).body).toMatchObject({ verified: true });
    });

    it('a reset token sent 12 times at once resets once (single use under concurrency)', async () => {
      const user = fresh();
      await signUp(app.request, user);
      await app.request('POST', '/users/requestPasswordReset', { email: user.email });
      const token = tokenIn(await smtp.next(user.email));
      const statuses = await Promise.all(Array.from({ length: 12 }, (_, i) => app.client()('POST', '/users/confirmPasswordReset', { token, password: `parallel ${i}` }).then((r) => r.status)));
      expect(statuses.filter((s) => s === 204)).toHaveLength(1);
      expect(statuses.filter((s) => s === 400)).toHaveLength(11);
    });

    it('a verification token sent 12 times at once confirms once', async () => {
      const user = fresh();
      await app.request('POST', '/users', user);
      const token = tokenIn(await smtp.next(user.email));
      const statuses = await Promise.all(Array.from({ length: 12 }, () => app.client()('POST', '/users/confirmVerification', { token }).then((r) => r.status)));
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    });

    it('requestCode mails a code and a magic link; one sign-in per mail, also under concurrency', async () => {
      const user = fresh();
      const id = await signUp(app.request, user);
      expect((await app.request('POST', '/users/requestCode', { email: user.email })).status).toBe(202);
      const first = await smtp.next(user.email);
      expect(first.parsed.text).toContain('https://app.example.com/magic?token=');
      const codeStatuses = await Promise.all(Array.from({ length: 10 }, () => app.client()('POST', '/users/loginWithCode', { email: user.email, code: codeIn(first) }).then((r) => r.status)));
      expect(codeStatuses.filter((s) => s === 200)).toHaveLength(1);
      expect(codeStatuses.filter((s) => s === 401)).toHaveLength(9);
      // The same mail's link is void once its code signed in.
      expect((await app.client()('POST', '/users/loginWithCode', { token: tokenIn(first) })).status).toBe(401);

      await app.request('POST', '/users/requestCode', { email: user.email });
      const second = await smtp.next(user.email);
      const link = tokenIn(second);
      const linkStatuses = await Promise.all(Array.from({ length: 10 }, () => app.client()('POST', '/users/loginWithCode', { token: link })));
      expect(linkStatuses.filter((r) => r.status === 200)).toHaveLength(1);
      expect(linkStatuses.find((r) => r.status === 200)?.body).toMatchObject({ path: '/users', uid: id });
      // And the code of that mail is void once its link signed in.
      expect((await app.client()('POST', '/users/loginWithCode', { email: user.email, code: codeIn(second) })).status).toBe(401);
    });

    it('a code login gives a session; wrong codes use the code up after maxAttempts', async () => {
      const user = fresh();
      const id = await signUp(app.request, user);
      await app.request('POST', '/users/requestCode', { email: user.email });
      const code = codeIn(await smtp.next(user.email));
      const client = app.client();
      const ok = await client('POST', '/users/loginWithCode', { email: user.email, code });
      expect(ok).toMatchObject({ status: 200, body: { path: '/users', uid: id } });
      expect((await client('GET', '/users/me')).body).toMatchObject({ id, verified: true });

      await app.request('POST', '/users/requestCode', { email: user.email });
      const second = codeIn(await smtp.next(user.email));
      const bad = second === '000000' ? '000001' : '000000';
      for (let i = 0; i < 5; i++) expect((await app.client()('POST', '/users/loginWithCode', { email: user.email, code: bad })).status).toBe(401);
      expect((await app.client()('POST', '/users/loginWithCode', { email: user.email, code: second })).status).toBe(401);
    });

    it("another user's code or a code for an unknown address never logs in", async () => {
      const a = fresh();
      const b = fresh();
      await signUp(app.request, a);
      await signUp(app.request, b);
      await app.request('POST', '/users/requestCode', { email: a.email });
      const code = codeIn(await smtp.next(a.email));
      expect((await app.client()('POST', '/users/loginWithCode', { email: b.email, code })).status).toBe(401);
      expect((await app.client()('POST', '/users/loginWithCode', { email: `ghost-${n}@example.com`, code })).status).toBe(401);
      expect((await app.request('POST', '/users/requestCode', { email: `ghost-${n}@example.com` })).status).toBe(202);
      expect((await app.client()('POST', '/users/loginWithCode', { email: a.email, code })).status).toBe(200);
    });

    describe('type confusion in every token field answers 400 and matches nothing (Strapi #4442)', () => {
      const bad: unknown[] = [{}, [], 123, true, null, { $ne: null }, { $gt: '' }, ['x'], 'short', `${FORGED}=`, `${'A'.repeat(42)}\n`];
      const cases: [string, (v: unknown) => Record<string, unknown>][] = [
        ['confirmPasswordReset token', (v) => ({ token: v, password: 'x' })],
        ['confirmVerification token', (v) => ({ token: v })],
        ['loginWithCode token', (v) => ({ token: v })],
        ['loginWithCode code', (v) => ({ email: 'a@example.com', code: v })],
        ['requestPasswordReset email', (v) => ({ email: v })],
        ['requestCode email', (v) => ({ email: v })],
        ['requestVerification email', (v) => ({ email: v })],
      ];
      for (const [name, body] of cases) {
        it(name, async () => {
          const route = name.split(' ')[0] as string;
          for (const value of bad) {
            const res = await app.client()('POST', `/users/${route}`, body(value));
            expect(res.status, `${name} = ${JSON.stringify(value)}`).toBe(400);
          }
        });
      }
      it('a body that is not an object, and a password that is not a string', async () => {
        expect((await app.client()('POST', '/users/confirmPasswordReset', [FORGED])).status).toBe(400);
        expect((await app.client()('POST', '/users/confirmPasswordReset', { token: FORGED, password: { $ne: 1 } })).status).toBe(400);
        expect((await app.client()('POST', '/users/loginWithCode', { token: null })).status).toBe(400);
      });
    });

    it('forged, expired-looking and other kinds of tokens are refused', async () => {
      const user = fresh();
      await app.request('POST', '/users', user);
      const verification = tokenIn(await smtp.next(user.email));
      expect((await app.request('POST', '/users/confirmPasswordReset', { token: FORGED, password: 'x' })).status).toBe(400);
      // A verification token is no reset token, nor a login link.
      expect((await app.request('POST', '/users/confirmPasswordReset', { token: verification, password: 'x' })).status).toBe(400);
      expect((await app.client()('POST', '/users/loginWithCode', { token: verification })).status).toBe(401);
      expect((await app.request('POST', '/users/confirmVerification', { token: verification })).status).toBe(200);
    });

    it('email change: held until the new address confirms; another user cannot change it (no takeover)', async () => {
      const owner = fresh();
      const other = fresh();
      const id = await signUp(app.request, owner);
      await signUp(app.request, other);
      const ownerClient = app.client();
      const otherClient = app.client();
      await ownerClient('POST', '/users/login', { username: owner.username, password: owner.password });
      await otherClient('POST', '/users/login', { username: other.username, password: other.password });

      // Another user's change of the address is dropped: no mail, the address stays.
      const takeover = `takeover-${n}@example.com`;
      expect((await otherClient('PUT', `/users/${id}`, { email: takeover })).status).toBe(200);
      expect((await app.request('GET', `/users/${id}`, undefined, ROOT)).body).toMatchObject({ email: owner.email });

      // A reset link mailed to the old address before the change.
      await app.request('POST', '/users/requestPasswordReset', { email: owner.email });
      const oldReset = tokenIn(await smtp.next(owner.email));

      // The owner's change is held; the mail goes to the new address.
      const next = `next-${n}@example.com`;
      const put = await ownerClient('PUT', `/users/${id}`, { email: next, name: 'renamed' });
      expect(put.body).toMatchObject({ name: 'renamed' });
      expect((await ownerClient('GET', '/users/me')).body).toMatchObject({ email: owner.email, name: 'renamed' });
      const token = tokenIn(await smtp.next(next));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(smtp.pending(takeover)).toHaveLength(0);
      expect((await app.request('GET', `/users/${id}`, undefined, ROOT)).body).toMatchObject({ email: owner.email });
      expect((await app.request('POST', '/users/confirmVerification', { token })).body).toEqual({ verified: true, email: next });
      expect((await app.request('GET', `/users/${id}`, undefined, ROOT)).body).toMatchObject({ email: next, verified: true });
      // The old address's reset link is void now; a reset mail goes to the new address only.
      expect((await app.request('POST', '/users/confirmPasswordReset', { token: oldReset, password: 'takeover' })).status).toBe(400);
      await app.request('POST', '/users/requestPasswordReset', { email: owner.email });
      await app.request('POST', '/users/requestPasswordReset', { email: next });
      await smtp.next(next);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(smtp.pending(owner.email)).toHaveLength(0);
    });

    it('an email change over the mail limits is refused before anything is saved', async () => {
      const user = fresh();
      const id = await signUp(app.request, user, '/staff');
      const client = app.client();
      await client('POST', '/staff/login', { username: user.username, password: user.password });
      const next = `limited-${n}-${store}@example.com`;
      for (let i = 0; i < 2; i++) await app.request('POST', '/staff/requestPasswordReset', { email: next });
      const put = await client('PUT', `/staff/${id}`, { email: next, name: 'changed' });
      expect(put.status).toBe(429);
      expect((await app.request('GET', `/staff/${id}`)).body).not.toHaveProperty('name', 'changed');
    });

    it('a verification token made before the address changed is void', async () => {
      const user = fresh();
      const id = await app.request('POST', '/users', user).then((r) => (r.body as { id: string }).id);
      const stale = tokenIn(await smtp.next(user.email));
      expect((await app.request('PUT', `/users/${id}`, { email: `moved-${n}@example.com` }, ROOT)).status).toBe(200);
      expect((await app.request('POST', '/users/confirmVerification', { token: stale })).status).toBe(400);
    });

    it('verification.required: no login (any method) before the address is confirmed; On Login applies to codes', async () => {
      const user = fresh();
      const res = await app.request('POST', '/members', user);
      const id = (res.body as { id: string }).id;
      const token = tokenIn(await smtp.next(user.email));
      expect((await app.client()('POST', '/members/login', { username: user.username, password: user.password })).status).toBe(403);
      // A wrong password still says only 'bad credentials'.
      expect((await app.client()('POST', '/members/login', { username: user.username, password: 'wrong' })).status).toBe(401);
      expect((await app.request('POST', '/members/confirmVerification', { token })).status).toBe(200);
      expect((await app.client()('POST', '/members/login', { username: user.username, password: user.password })).status).toBe(200);
      // No reset on this collection.
      expect((await app.request('POST', '/members/requestPasswordReset', { email: user.email })).status).toBe(404);

      // On Login runs for a code login too, and may refuse it.
      await app.request('PUT', `/members/${id}`, { name: 'blocked' }, ROOT);
      await app.request('POST', '/members/requestCode', { email: user.email, language: 'de' });
      const mail = await smtp.next(user.email);
      // The collection's templates: de text, default-language subject (one line: no header from a template), html escaped.
      expect(mail.parsed.subject).toMatch(/^Dein Code \d{6} Bcc: evil@example.com$/);
      expect(mail.parsed.bcc).toBeUndefined();
      expect(mail.rcptTo).toEqual([user.email]);
      expect(mail.parsed.text).toMatch(/^Hallo /);
      expect((await app.client()('POST', '/members/loginWithCode', { email: user.email, code: codeIn(mail) })).status).toBe(403);
    });

    it('html templates escape values (a username with markup)', async () => {
      const user = { ...fresh(), username: `<img src=x onerror=alert(1)>-${n}` };
      await app.request('POST', '/members', user);
      await smtp.next(user.email);
      await app.request('POST', '/members/requestCode', { email: user.email });
      const mail = await smtp.next(user.email);
      expect(mail.parsed.html).toContain('&#60;img src=x onerror=alert(1)&#62;');
      expect(mail.parsed.html).not.toContain('<img');
    });

    it('mails are limited per recipient, with the same answer whether the address is known or not', async () => {
      const user = fresh();
      // The sign-up's verification mail counts one for the address; one request counts one for the ghost.
      await app.request('POST', '/staff', user);
      await smtp.next(user.email);
      const ghost = `ghost-staff-${n}-${store}@example.com`;
      expect((await app.request('POST', '/staff/requestVerification', { email: ghost })).status).toBe(202);
      const known = [];
      const unknown = [];
      for (let i = 0; i < 3; i++) {
        known.push((await app.request('POST', '/staff/requestPasswordReset', { email: user.email })).status);
        unknown.push((await app.request('POST', '/staff/requestPasswordReset', { email: ghost })).status);
      }
      expect(known).toEqual([202, 429, 429]);
      expect(unknown).toEqual(known);
      // A sign-up's verification mail counts too: over the limit the user is made, without the mail.
      const late = { ...fresh(), email: ghost };
      expect((await app.request('POST', '/staff', late)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(smtp.pending(ghost)).toHaveLength(0);
    });

    it('requestVerification mails a new link to an unverified address only; same answer for all', async () => {
      const user = fresh();
      await app.request('POST', '/users', user);
      const first = tokenIn(await smtp.next(user.email));
      expect((await app.request('POST', '/users/requestVerification', { email: user.email })).body).toEqual({ requested: true });
      const second = tokenIn(await smtp.next(user.email));
      expect(second).not.toBe(first);
      expect((await app.request('POST', '/users/confirmVerification', { token: second })).status).toBe(200);
      // Verified now: asking again answers the same, and no mail comes.
      expect((await app.request('POST', '/users/requestVerification', { email: user.email })).body).toEqual({ requested: true });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(smtp.pending(user.email)).toHaveLength(0);
    });

    it('@svc/client: the account calls, typed', async () => {
      interface User {
        id: string;
        username: string;
        email?: string;
        verified: boolean;
      }
      const svc = createClient<{ resources: { users: UserCollectionDef<User> } }>(app.url, { resources: [{ path: '/users', kind: 'users' }] });
      try {
        const user = fresh();
        await svc.users.post({ ...user });
        await svc.users.confirmVerification({ token: tokenIn(await smtp.next(user.email)) });
        expect(await svc.users.requestPasswordReset({ email: user.email })).toEqual({ requested: true });
        expect(await svc.users.confirmPasswordReset({ token: tokenIn(await smtp.next(user.email)), password: 'by client' })).toBeNull();
        await expect(svc.users.confirmPasswordReset({ token: FORGED, password: 'x' })).rejects.toMatchObject({ status: 400 });
        expect(await svc.users.requestCode({ email: user.email, language: 'en' })).toEqual({ requested: true });
        const session = await svc.users.loginWithCode({ email: user.email, code: codeIn(await smtp.next(user.email)) });
        expectTypeOf(session).toEqualTypeOf<SessionInfo>();
        expect(await svc.users.me()).toMatchObject({ username: user.username, verified: true });
        await svc.users.requestVerification({ email: user.email });
        // @ts-expect-error: a token is a string
        expectTypeOf(svc.users.confirmVerification).toBeCallableWith({ token: 1 });
      } finally {
        svc.close();
      }
    });

    // The test's own expect: this file's store variants run side by side (concurrent), where the
    // global expect.poll cannot tell which test it is in ("must be called inside a test").
    it("after a reset the user's realtime sockets leave: user-targeted messages stop reaching them", async ({ expect }) => {
      const user = fresh();
      const id = await signUp(app.request, user);
      const svc = createClient<{ resources: { users: UserCollectionDef<{ id: string; username: string }> } }>(app.url, { resources: [{ path: '/users', kind: 'users' }, { path: '/pings', kind: 'collection' }] });
      try {
        await new Promise<void>((resolve) => svc.socketReady(resolve));
        await svc.users.login({ username: user.username, password: user.password });
        const dms: unknown[] = [];
        const markers: unknown[] = [];
        svc.on('dm', (d) => dms.push(d));
        svc.on('marker', (d) => markers.push(d));
        await app.request('POST', '/pings', { to: id });
        await expect.poll(() => markers.length, { timeout: 10_000 }).toBe(1);
        expect(dms).toEqual([id]);

        await app.request('POST', '/users/requestPasswordReset', { email: user.email });
        expect((await app.request('POST', '/users/confirmPasswordReset', { token: tokenIn(await smtp.next(user.email)), password: 'after reset' })).status).toBe(204);
        // The marker is sent after the dm on the same socket: once it is here, a dm would be too.
        await app.request('POST', '/pings', { to: id });
        await expect.poll(() => markers.length, { timeout: 10_000 }).toBe(2);
        expect(dms).toEqual([id]);
        expect(await svc.users.me()).toBeNull();
      } finally {
        svc.close();
      }
    });

    it('On BeforeReset runs with the user as this; its cancel() refuses the reset and leaves the token usable', async () => {
      const user = fresh();
      const id = await signUp(app.request, user);
      await app.request('PUT', `/users/${id}`, { name: 'no-reset' }, ROOT);
      await app.request('POST', '/users/requestPasswordReset', { email: user.email });
      const token = tokenIn(await smtp.next(user.email));
      expect(await app.request('POST', '/users/confirmPasswordReset', { token, password: 'refused' })).toMatchObject({ status: 403, body: { message: 'resets are off for this user' } });
      expect((await app.client()('POST', '/users/login', { username: user.username, password: user.password })).status).toBe(200);
      await app.request('PUT', `/users/${id}`, { name: 'ok' }, ROOT);
      expect((await app.request('POST', '/users/confirmPasswordReset', { token, password: 'allowed' })).status).toBe(204);
    });

    it('wrong codes sent at once: the code allows maxAttempts guesses in all, then the right one fails too', async () => {
      const user = fresh();
      await signUp(app.request, user);
      await app.request('POST', '/users/requestCode', { email: user.email });
      const code = codeIn(await smtp.next(user.email));
      const wrong = Array.from({ length: 12 }, (_, i) => String((Number(code) + 1 + i) % 1_000_000).padStart(6, '0'));
      const statuses = await Promise.all(wrong.map((guess) => app.client()('POST', '/users/loginWithCode', { email: user.email, code: guess }).then((r) => r.status)));
      expect(statuses.every((s) => s === 401)).toBe(true);
      expect((await app.client()('POST', '/users/loginWithCode', { email: user.email, code })).status).toBe(401);
    });
  });
});
