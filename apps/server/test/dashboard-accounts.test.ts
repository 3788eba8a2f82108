import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { startSmtp } from './helpers/smtp.js';
import type { TestSmtp } from './helpers/smtp.js';
import { rawRequest } from './helpers/rawRequest.js';

// Issue 27: the dashboard's Accounts tab. A UserCollection's `auth` settings are saved through the
// dashboard's one config path (the server's load-time check answers, nothing changes on a refusal),
// a secret only ever as an ${env:NAME} reference, and mail templates are files of the collection's
// mail/ folder whose names the server makes (no traversal, no symbolic link followed).

const ROOT = { 'svc-ssh-key': 'development' };
const SECRET_VALUE = 'very-secret-client-secret-value';
const SMTP_SECRET = 'smtp-password-value-42';
/** Apple's key (issue 43): a secret as the client secret is. */
const APPLE_KEY = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const APPLE_KEY_BODY = APPLE_KEY.split('\n')[1] as string;
const appleWith = (privateKey: unknown) => ({ clientId: 'x', teamId: 'TEAM123456', keyId: 'KEY1234567', privateKey });

let smtp: TestSmtp;
beforeAll(async () => {
  smtp = await startSmtp();
  process.env.DASH_TEST_GOOGLE_SECRET = SECRET_VALUE;
  process.env.DASH_TEST_OTHER_SECRET = 'other-secret-value';
});
afterAll(async () => {
  await smtp.close();
  delete process.env.DASH_TEST_GOOGLE_SECRET;
  delete process.env.DASH_TEST_OTHER_SECRET;
});

let apps: AppHandle[] = [];
afterEach(async () => {
  for (const h of apps) await h.close();
  apps = [];
});

function usersConfig(auth: object): object {
  return { type: 'UserCollection', properties: { email: { type: 'string', unique: true } }, auth };
}

async function start(auth: object = {}): Promise<AppHandle> {
  const h = await runApp({
    'app.json': { passwordCost: 4 },
    'resources/users/config.json': usersConfig(auth),
    'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
  });
  apps.push(h);
  return h;
}

const mailAuth = (): object => ({ reset: {}, mail: { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'app@example.com' } });

describe('dashboard Accounts tab: auth settings', () => {
  it('answers the auth settings, the presets and the messages; only UserCollections have them', async () => {
    const h = await start({ mfa: { issuer: 'Acme' }, oauth: { redirects: ['https://app.example.com/done'], providers: { google: { clientId: 'cid', clientSecret: '${env:DASH_TEST_GOOGLE_SECRET}' } } } });
    const res = await h.request('GET', '/dashboard/api/resources/users/accounts', undefined, ROOT);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      auth: { mfa: { issuer: 'Acme' }, oauth: { providers: { google: { clientId: 'cid', clientSecret: '${env:DASH_TEST_GOOGLE_SECRET}' } } } },
      presets: ['google', 'apple', 'microsoft', 'github', 'gitlab', 'bitbucket', 'discord', 'facebook', 'x', 'linkedin', 'slack', 'spotify', 'twitch', 'zoom'],
      consoles: expect.objectContaining({ google: 'https://console.cloud.google.com/apis/credentials', github: 'https://github.com/settings/developers' }),
      messages: ['verification', 'reset', 'code'],
    });
    expect(JSON.stringify(res.body)).not.toContain(SECRET_VALUE);
    expect((await h.request('GET', '/dashboard/api/resources/todos/accounts', undefined, ROOT)).status).toBe(404);
    expect((await h.request('GET', '/dashboard/api/resources/nope/accounts', undefined, ROOT)).status).toBe(404);
  });

  it('saves auth through the config path: written to config.json and served at once', async () => {
    const h = await start();
    const auth = {
      ...mailAuth(),
      mfa: { issuer: 'Acme', required: false },
      oauth: { redirects: ['https://app.example.com/done'], providers: { google: { clientId: 'cid.apps', clientSecret: '${env:DASH_TEST_GOOGLE_SECRET}' } } },
    };
    const res = await h.request('PUT', '/dashboard/api/resources/users/accounts', { auth }, ROOT);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const file = JSON.parse(await readFile(join(h.dir, 'resources/users/config.json'), 'utf8')) as { auth: unknown; properties: unknown };
    expect(file.auth).toEqual(auth);
    expect(file.properties).toEqual({ email: { type: 'string', unique: true } });
    expect(await readFile(join(h.dir, 'resources/users/config.json'), 'utf8')).not.toContain(SECRET_VALUE);
    // Served: the provider is listed, the reset flow is on.
    expect((await h.request('GET', '/users/oauth')).body).toEqual({ providers: ['google'] });
    expect((await h.request('POST', '/users/requestPasswordReset', { email: 'nobody@example.com' })).status).toBe(202);
    // null removes the settings.
    expect((await h.request('PUT', '/dashboard/api/resources/users/accounts', { auth: null }, ROOT)).status).toBe(200);
    expect(JSON.parse(await readFile(join(h.dir, 'resources/users/config.json'), 'utf8'))).not.toHaveProperty('auth');
    expect((await h.request('POST', '/users/requestPasswordReset', { email: 'nobody@example.com' })).status).toBe(404);
  });

  it.each([
    [{ mfa: { isuer: 'typo' } }, /auth\.mfa: unknown setting "isuer"/],
    [{ reset: {} }, /auth\.mail is required/],
    [{ codes: { length: 3 }, mail: { smtp: { host: 'x' }, from: 'a@example.com' } }, /auth\.codes\.length must be a whole number from 6 to 10/],
    [{ oauth: { providers: { google: { clientId: 'x', clientSecret: '${env:DASH_TEST_NOT_SET}' } } } }, /DASH_TEST_NOT_SET/],
    [{ oauth: { providers: { nope: { clientId: 'x', clientSecret: '${env:DASH_TEST_GOOGLE_SECRET}' } } } }, /needs "issuer"/],
    [{ oauth: { providers: { google: { preset: 'myspace', clientId: 'x', clientSecret: '${env:DASH_TEST_GOOGLE_SECRET}' } } } }, /unknown preset "myspace"/],
  ])('a bad setting %j is refused with the server\'s own message; nothing changes', async (auth, message) => {
    const h = await start({ mfa: { issuer: 'Before' } });
    const before = await readFile(join(h.dir, 'resources/users/config.json'), 'utf8');
    const res = await h.request('PUT', '/dashboard/api/resources/users/accounts', { auth }, ROOT);
    expect(res.status).toBe(400);
    expect((res.body as { message: string }).message).toMatch(message);
    expect(JSON.stringify(res.body)).not.toContain(h.dir);
    expect(JSON.stringify(res.body)).not.toContain(SECRET_VALUE);
    expect(await readFile(join(h.dir, 'resources/users/config.json'), 'utf8')).toBe(before);
    // The previous settings still serve.
    expect((await h.request('GET', '/dashboard/api/resources/users/accounts', undefined, ROOT)).body).toMatchObject({ auth: { mfa: { issuer: 'Before' } } });
  });

  it('a secret is only ever an ${env:NAME} reference: a value is refused and never written', async () => {
    const h = await start();
    const before = await readFile(join(h.dir, 'resources/users/config.json'), 'utf8');
    for (const auth of [
      { oauth: { providers: { google: { clientId: 'x', clientSecret: SECRET_VALUE } } } },
      { oauth: { providers: { google: { clientId: 'x', clientSecret: `prefix-\${env:DASH_TEST_GOOGLE_SECRET}` } } } },
      { oauth: { providers: { google: { clientId: 'x', clientSecret: { $ne: null } } } } },
      { oauth: { providers: { apple: appleWith(APPLE_KEY) } } },
      { reset: {}, mail: { smtp: { host: '127.0.0.1', port: smtp.port, username: 'u', password: SMTP_SECRET }, from: 'a@example.com' } },
    ]) {
      const res = await h.request('PUT', '/dashboard/api/resources/users/accounts', { auth }, ROOT);
      expect(res.status, JSON.stringify(auth)).toBe(400);
      expect((res.body as { message: string }).message).toContain('${env:NAME}');
      expect(JSON.stringify(res.body)).not.toContain(SECRET_VALUE);
      expect(JSON.stringify(res.body)).not.toContain(SMTP_SECRET);
      expect(JSON.stringify(res.body)).not.toContain(APPLE_KEY_BODY);
    }
    expect(await readFile(join(h.dir, 'resources/users/config.json'), 'utf8')).toBe(before);
  });

  it('a refusal never quotes a value that came from the environment', async () => {
    process.env.DASH_TEST_LONG_SECRET = `${SECRET_VALUE}-${'x'.repeat(100)}`;
    try {
      const h = await start();
      for (const auth of [
        { oauth: { redirects: ['${env:DASH_TEST_GOOGLE_SECRET}'], providers: {} } },
        { oauth: { redirects: ['${env:DASH_TEST_LONG_SECRET}'], providers: {} } },
        { oauth: { baseUrl: 'x${env:DASH_TEST_GOOGLE_SECRET}', providers: {} } },
        { reset: {}, mail: { smtp: { host: '127.0.0.1' }, from: '${env:DASH_TEST_GOOGLE_SECRET}' } },
      ]) {
        const res = await h.request('PUT', '/dashboard/api/resources/users/accounts', { auth }, ROOT);
        expect(res.status, JSON.stringify(auth)).toBe(400);
        expect(JSON.stringify(res.body), JSON.stringify(auth)).not.toContain(SECRET_VALUE.slice(0, 12));
      }
    } finally {
      delete process.env.DASH_TEST_LONG_SECRET;
    }
  });

  it('a secret written as a value in config.json (by hand) is never answered, and saving keeps it', async () => {
    const h = await start({ ...mailAuth(), mail: { smtp: { host: '127.0.0.1', port: smtp.port, username: 'u', password: SMTP_SECRET }, from: 'a@example.com' }, oauth: { providers: { google: { clientId: 'x', clientSecret: SECRET_VALUE }, apple: appleWith(APPLE_KEY) } } });
    for (const path of ['/dashboard/api/resources/users/accounts', '/dashboard/api/app', '/dashboard/api/resources/users']) {
      const res = await h.request('GET', path, undefined, ROOT);
      expect(res.status, path).toBe(200);
      expect(JSON.stringify(res.body), path).not.toContain(SECRET_VALUE);
      expect(JSON.stringify(res.body), path).not.toContain(SMTP_SECRET);
      expect(JSON.stringify(res.body), path).not.toContain(APPLE_KEY_BODY);
      expect(JSON.stringify(res.body), path).toContain('(hidden: a value written in config.json)');
    }
    // The tab saves back what it was shown: the hidden values stay as they are in the file.
    const shown = (await h.request('GET', '/dashboard/api/resources/users/accounts', undefined, ROOT)).body as { auth: { mfa?: object } };
    const saved = await h.request('PUT', '/dashboard/api/resources/users/accounts', { auth: { ...shown.auth, mfa: { issuer: 'New' } } }, ROOT);
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(JSON.stringify(saved.body)).not.toContain(SECRET_VALUE);
    const file = await readFile(join(h.dir, 'resources/users/config.json'), 'utf8');
    expect(file).toContain(SECRET_VALUE);
    expect(file).toContain(SMTP_SECRET);
    expect(file).toContain(APPLE_KEY_BODY);
    expect(file).not.toContain('hidden');
    // So does the Rules/Properties path (PUT of the whole config the page was shown).
    const app = (await h.request('GET', '/dashboard/api/app', undefined, ROOT)).body as { resources: { name: string; config: object }[] };
    const config = app.resources.find((r) => r.name === 'users')?.config as Record<string, unknown>;
    expect((await h.request('PUT', '/dashboard/api/resources/users', { config: { ...config, rules: { delete: false } } }, ROOT)).status).toBe(200);
    expect(await readFile(join(h.dir, 'resources/users/config.json'), 'utf8')).toContain(SECRET_VALUE);
    // A hidden marker where the file has nothing is refused, not written.
    const res = await h.request('PUT', '/dashboard/api/resources/users/accounts', { auth: { oauth: { providers: { github: { clientId: 'x', clientSecret: '(hidden: a value written in config.json)' } } } } }, ROOT);
    expect(res.status).toBe(400);
  });

  it('keeps the dashboard\'s protections: root only, no cross-site page, no other host name', async () => {
    const h = await start();
    const body = { auth: { mfa: { issuer: 'pwned' } } };
    for (const headers of [{}, { 'svc-ssh-key': 'x', origin: 'http://evil.example' }, { 'svc-ssh-key': 'x', 'sec-fetch-site': 'cross-site' }, { 'svc-ssh-key': 'x', 'sec-fetch-site': 'same-site' }] as Record<string, string>[]) {
      expect((await h.request('PUT', '/dashboard/api/resources/users/accounts', body, headers)).status, JSON.stringify(headers)).toBeGreaterThanOrEqual(401);
      expect((await h.request('PUT', '/dashboard/api/resources/users/mail', { message: 'reset', part: 'text', text: 'pwned' }, headers)).status).toBeGreaterThanOrEqual(401);
      expect((await h.request('GET', '/dashboard/api/resources/users/accounts', undefined, headers)).status).toBeGreaterThanOrEqual(401);
    }
    for (const headers of [{ host: 'evil.example:2403' }, { host: 'evil.example', origin: 'http://evil.example' }] as Record<string, string>[]) {
      expect(await rawRequest(h.url, 'PUT', '/dashboard/api/resources/users/accounts', body, { 'svc-ssh-key': 'x', ...headers })).toBe(403);
      expect(await rawRequest(h.url, 'PUT', '/dashboard/api/resources/users/mail', { message: 'reset', part: 'text', text: 'pwned' }, { 'svc-ssh-key': 'x', ...headers })).toBe(403);
    }
    expect(await readFile(join(h.dir, 'resources/users/config.json'), 'utf8')).not.toContain('pwned');
    expect(existsSync(join(h.dir, 'resources/users/mail'))).toBe(false);
  });
});

describe('dashboard Accounts tab: mail templates', () => {
  it('writes a message\'s parts per language; the mails sent use them at once; null removes a part', async () => {
    const h = await start(mailAuth());
    const put = (body: object) => h.request('PUT', '/dashboard/api/resources/users/mail', body, ROOT);
    expect((await put({ message: 'reset', part: 'subject', text: 'Neues Passwort für {{email}}', language: 'de' })).status).toBe(200);
    expect((await put({ message: 'reset', part: 'text', text: 'Hallo! {{link}}\n', language: 'de' })).status).toBe(200);
    const res = await put({ message: 'reset', part: 'text', text: 'Custom reset {{link}}\n' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ language: '', message: 'reset', files: { subject: null, text: 'Custom reset {{link}}\n', html: null }, builtIn: { subject: 'Reset your password' } });
    expect(await readFile(join(h.dir, 'resources/users/mail/de/reset.subject.txt'), 'utf8')).toBe('Neues Passwort für {{email}}');
    expect((await h.request('GET', '/dashboard/api/resources/users/mail?language=de&message=reset', undefined, ROOT)).body).toMatchObject({ files: { subject: 'Neues Passwort für {{email}}', text: 'Hallo! {{link}}\n', html: null } });

    await h.request('POST', '/users', { username: 'ann', password: 'pw', email: 'ann@example.com' });
    await h.request('POST', '/users/requestPasswordReset', { email: 'ann@example.com', language: 'de' });
    const german = await smtp.next('ann@example.com');
    expect(german.parsed.subject).toBe('Neues Passwort für ann@example.com');
    expect(german.parsed.text).toMatch(/^Hallo! /);
    await h.request('POST', '/users/requestPasswordReset', { email: 'ann@example.com' });
    const english = await smtp.next('ann@example.com');
    expect(english.parsed.subject).toBe('Reset your password');
    expect(english.parsed.text).toMatch(/^Custom reset /);

    expect((await put({ message: 'reset', part: 'text', text: null })).body).toMatchObject({ files: { text: null } });
    expect(existsSync(join(h.dir, 'resources/users/mail/reset.txt'))).toBe(false);
  });

  it('names come from the server: traversal, unknown messages, parts and languages are refused', async () => {
    const h = await start(mailAuth());
    const bad: object[] = [
      { message: '../../config', part: 'text', text: 'x' },
      { message: 'reset', part: '../../../config.json', text: 'x' },
      { message: 'reset', part: 'text', text: 'x', language: '..' },
      { message: 'reset', part: 'text', text: 'x', language: '../../todos' },
      { message: 'reset', part: 'text', text: 'x', language: 'de/../..' },
      { message: 'reset', part: 'text', text: 'x', language: '/etc' },
      { message: 'reset', part: 'text', text: 'x', language: 'de%2f..' },
      { message: 'constructor', part: 'text', text: 'x' },
      { message: 'reset', part: '__proto__', text: 'x' },
      { message: 'reset', part: 'text', text: { $ne: 1 } },
      { message: 'reset', part: 'text', text: 'x'.repeat(70_000) },
      { message: 'reset', text: 'x' },
    ];
    const before = await readFile(join(h.dir, 'resources/users/config.json'), 'utf8');
    for (const body of bad) {
      const res = await h.request('PUT', '/dashboard/api/resources/users/mail', body, ROOT);
      expect(res.status, JSON.stringify(body).slice(0, 100)).toBe(400);
      expect(JSON.stringify(res.body)).not.toContain(h.dir);
    }
    expect(await readFile(join(h.dir, 'resources/users/config.json'), 'utf8')).toBe(before);
    expect(existsSync(join(h.dir, 'resources/users/mail'))).toBe(false);
    for (const query of ['language=..&message=reset', 'language=../todos&message=reset', 'message=../config']) {
      expect((await h.request('GET', `/dashboard/api/resources/users/mail?${query}`, undefined, ROOT)).status, query).toBe(400);
    }
    // Only a UserCollection has templates; the path is the collection's.
    expect((await h.request('PUT', '/dashboard/api/resources/todos/mail', { message: 'reset', part: 'text', text: 'x' }, ROOT)).status).toBe(404);
    expect((await h.request('PUT', '/dashboard/api/resources/../users/mail', { message: 'reset', part: 'text', text: 'x' }, ROOT)).status).toBeGreaterThanOrEqual(400);
    expect(existsSync(join(h.dir, 'resources/todos/mail'))).toBe(false);
  });

  it('does not follow a symbolic link in the mail folder: not to read, not to write', async () => {
    const h = await start(mailAuth());
    const outside = join(h.dir, 'outside.txt');
    await writeFile(outside, 'OUTSIDE SECRET');
    const mail = join(h.dir, 'resources/users/mail');
    await mkdir(mail);
    await symlink(outside, join(mail, 'reset.txt'));
    // A language folder that is a link to another folder.
    await mkdir(join(h.dir, 'elsewhere'));
    await symlink(join(h.dir, 'elsewhere'), join(mail, 'de'));
    const read = await h.request('GET', '/dashboard/api/resources/users/mail?message=reset', undefined, ROOT);
    expect(read.status).toBe(400);
    expect(JSON.stringify(read.body)).not.toContain('OUTSIDE SECRET');
    expect((await h.request('PUT', '/dashboard/api/resources/users/mail', { message: 'reset', part: 'text', text: 'overwritten' }, ROOT)).status).toBe(400);
    expect(await readFile(outside, 'utf8')).toBe('OUTSIDE SECRET');
    expect(await readlink(join(mail, 'reset.txt'))).toBe(outside);
    expect((await h.request('PUT', '/dashboard/api/resources/users/mail', { language: 'de', message: 'reset', part: 'text', text: 'through the link' }, ROOT)).status).toBe(400);
    expect(existsSync(join(h.dir, 'elsewhere/reset.txt'))).toBe(false);
    // The mail folder itself as a link.
    const h2 = await start(mailAuth());
    await mkdir(join(h2.dir, 'target'));
    await symlink(join(h2.dir, 'target'), join(h2.dir, 'resources/users/mail'));
    expect((await h2.request('PUT', '/dashboard/api/resources/users/mail', { message: 'code', part: 'html', text: '<p>x</p>' }, ROOT)).status).toBe(400);
    expect(existsSync(join(h2.dir, 'target/code.html'))).toBe(false);
  });
});
