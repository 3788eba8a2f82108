import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { totpNow } from './helpers/totp.js';
import { rawRequest } from './helpers/rawRequest.js';

// "Reset two-factor" of the dashboard (a user lost their device): root only, behind the dashboard
// API's Host/Origin checks; MFA goes off and every session of the user ends, in every process.

const ROOT = { 'svc-ssh-key': 'development' };
const APP = {
  'app.json': { passwordCost: 4 },
  'resources/users/config.json': { type: 'UserCollection', properties: {}, auth: { mfa: { issuer: 'Reset Test' } } },
  'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
};

let apps: AppHandle[] = [];
afterEach(async () => {
  for (const h of apps) await h.close();
  apps = [];
});

type Request = AppHandle['request'];

/** A user with two-factor on, and a client logged in as that user. */
async function enrolledUser(h: AppHandle, username: string): Promise<{ id: string; client: Request }> {
  const created = await h.request('POST', '/users', { username, password: 'pw' });
  expect(created.status).toBe(200);
  const client = h.client();
  expect((await client('POST', '/users/login', { username, password: 'pw' })).status).toBe(200);
  const { secret } = (await client('POST', '/users/mfa/enroll', {})).body as { secret: string };
  expect((await client('POST', '/users/mfa/confirm', { code: totpNow(secret) })).status).toBe(200);
  return { id: (created.body as { id: string }).id, client };
}

const reset = (h: AppHandle, id: unknown, headers: Record<string, string> = ROOT) => h.request('POST', '/dashboard/api/resources/users/reset-mfa', { id }, headers);

for (const store of appStores()) {
  describe(`dashboard: reset a user's two-factor (${store} store)`, () => {
    it('turns MFA off and ends every session of the user: the next login asks for the password only', async () => {
      const h = await runApp(APP, { store });
      apps.push(h);
      const ada = await enrolledUser(h, 'ada');
      const other = await enrolledUser(h, 'bob');
      const second = h.client();
      expect((await second('POST', '/users/login', { username: 'ada', password: 'pw' })).body).toMatchObject({ mfaRequired: true });
      expect((await ada.client('GET', '/users/me')).status).toBe(200);
      expect((await h.request('GET', `/users/methods?ids=${ada.id}`, undefined, ROOT)).body).toEqual({ [ada.id]: { password: true, providers: [], mfa: true } });

      const done = await reset(h, ada.id);
      expect(done.status).toBe(200);
      expect(done.body).toEqual({ id: ada.id, sessionsEnded: 1 });
      expect((await ada.client('GET', '/users/me')).status).toBe(204);
      expect((await ada.client('GET', '/users/mfa')).status).toBe(401);
      expect((await h.request('GET', `/users/methods?ids=${ada.id}`, undefined, ROOT)).body).toEqual({ [ada.id]: { password: true, providers: [], mfa: false } });
      const again = h.client();
      const login = await again('POST', '/users/login', { username: 'ada', password: 'pw' });
      expect(login.status).toBe(200);
      expect(login.body).toMatchObject({ path: '/users', uid: ada.id });
      expect(login.body).not.toHaveProperty('mfaRequired');
      expect((await again('GET', '/users/mfa')).body).toEqual({ enabled: false, required: false, recoveryCodesLeft: 0 });
      // Another user keeps both their session and their two-factor.
      expect((await other.client('GET', '/users/me')).status).toBe(200);
      expect((await h.client()('POST', '/users/login', { username: 'bob', password: 'pw' })).body).toMatchObject({ mfaRequired: true });
    });

    it('bad input: a clear JSON error, nothing changed', async () => {
      const h = await runApp(APP, { store });
      apps.push(h);
      const ada = await enrolledUser(h, 'ada');
      for (const id of [undefined, '', 42, 'x'.repeat(65)]) {
        const res = await reset(h, id);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ status: 400, errors: { id: expect.any(String) } });
      }
      expect((await reset(h, 'no-such-user')).status).toBe(404);
      expect((await h.request('POST', '/dashboard/api/resources/todos/reset-mfa', { id: ada.id }, ROOT)).status).toBe(404);
      expect((await h.request('POST', '/dashboard/api/resources/nothing/reset-mfa', { id: ada.id }, ROOT)).status).toBe(404);
      expect((await h.request('GET', '/dashboard/api/resources/users/reset-mfa', undefined, ROOT)).status).toBe(404);
      expect((await ada.client('GET', '/users/me')).status).toBe(200);
    });
  });
}

describe('dashboard: reset two-factor keeps the dashboard API protections', () => {
  it('root only, no cross-site page, no other host name', async () => {
    const h = await runApp(APP);
    apps.push(h);
    const ada = await enrolledUser(h, 'ada');
    for (const headers of [{}, { 'svc-ssh-key': 'x', origin: 'http://evil.example' }, { 'svc-ssh-key': 'x', 'sec-fetch-site': 'cross-site' }, { 'svc-ssh-key': 'x', 'sec-fetch-site': 'same-site' }] as Record<string, string>[]) {
      expect((await reset(h, ada.id, headers)).status, JSON.stringify(headers)).toBeGreaterThanOrEqual(401);
    }
    // The user's own session is not root either.
    expect((await ada.client('POST', '/dashboard/api/resources/users/reset-mfa', { id: ada.id })).status).toBe(401);
    for (const headers of [{ host: 'evil.example:2403' }, { host: 'evil.example', origin: 'http://evil.example' }] as Record<string, string>[]) {
      expect(await rawRequest(h.url, 'POST', '/dashboard/api/resources/users/reset-mfa', { id: ada.id }, { 'svc-ssh-key': 'x', ...headers })).toBe(403);
    }
    expect((await ada.client('GET', '/users/me')).status).toBe(200);
    expect((await h.client()('POST', '/users/login', { username: 'ada', password: 'pw' })).body).toMatchObject({ mfaRequired: true });
  });
});

const mongo = process.env.SVC_TEST_MONGODB_URL;
if (!mongo) process.stderr.write('SKIPPED dashboard reset-mfa across two processes: SVC_TEST_MONGODB_URL is not set\n');
describe.skipIf(!mongo)('dashboard: reset two-factor ends the sessions every process of the app serves', () => {
  it('a session made on one process ends when root resets the user on another (one database)', async () => {
    const db = `${(mongo ?? '').replace(/\/$/, '')}/svc_resetmfa_${randomBytes(5).toString('hex')}`;
    const a = await runApp(APP, { db });
    const b = await runApp(APP, { db });
    apps.push(a, b);
    const ada = await enrolledUser(a, 'ada');
    expect((await ada.client('GET', '/users/me')).status).toBe(200);
    expect((await reset(b, ada.id)).body).toEqual({ id: ada.id, sessionsEnded: 1 });
    expect((await ada.client('GET', '/users/me')).status).toBe(204);
    expect((await a.client()('POST', '/users/login', { username: 'ada', password: 'pw' })).body).not.toHaveProperty('mfaRequired');
  });
});
