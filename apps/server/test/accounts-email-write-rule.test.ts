import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { startSmtp } from './helpers/smtp.js';
import type { TestSmtp } from './helpers/smtp.js';

// Issue 38 item 4: with verification on, a user's own change of address is held until the new
// address confirms it; the hold compared the address with the stored one and took it out of the
// update before the property's write rule was checked, so a user could change an address the
// rules say only an admin may set (confirming the mail then stored it).

const ROOT = { 'svc-ssh-key': 'any' };

describe('a held change of address is checked against the email write rule first', () => {
  let smtp: TestSmtp;
  let app: AppHandle;

  beforeAll(async () => {
    smtp = await startSmtp();
    app = await runApp({
      'app.json': { passwordCost: 4 },
      'resources/users/config.json': {
        type: 'UserCollection',
        properties: { email: { type: 'string', unique: true, write: { '@me.role': 'admin' } }, role: { type: 'string', write: false }, name: { type: 'string' } },
        rules: { update: { id: '@me.id' } },
        auth: { verification: {}, mail: { smtp: { host: '127.0.0.1', port: smtp.port }, from: 'app@example.com', limits: { perRecipient: 1000, perClient: 10_000 } } },
      },
    });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await smtp?.close();
  });

  it('refuses a user the rule does not allow, sends no mail; the same address again is no change', async () => {
    const id = ((await app.request('POST', '/users', { username: 'ann', password: 'pw-ann-1', email: 'ann@example.com', role: 'user' }, ROOT)).body as { id: string }).id;
    await smtp.next('ann@example.com');
    const ann = app.client();
    expect((await ann('POST', '/users/login', { username: 'ann', password: 'pw-ann-1' })).status).toBe(200);
    const moved = await ann('PUT', `/users/${id}`, { email: 'elsewhere@example.com', name: 'x' });
    expect([moved.status, moved.body]).toEqual([403, { status: 403, statusCode: 403, message: 'forbidden by properties.email.write', errors: { email: 'forbidden by properties.email.write' } }]);
    expect((await ann('PUT', `/users/${id}`, { email: 'ann@example.com', name: 'same address' })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(smtp.pending('elsewhere@example.com')).toHaveLength(0);
    expect((await app.request('GET', `/users/${id}`, undefined, ROOT)).body).toMatchObject({ email: 'ann@example.com', name: 'same address' });
    // An admin may: the change is held and mailed as before.
    const bob = ((await app.request('POST', '/users', { username: 'bob', password: 'pw-bob-1', email: 'bob@example.com', role: 'admin' }, ROOT)).body as { id: string }).id;
    await smtp.next('bob@example.com');
    const admin = app.client();
    await admin('POST', '/users/login', { username: 'bob', password: 'pw-bob-1' });
    expect((await admin('PUT', `/users/${bob}`, { email: 'bob2@example.com' })).status).toBe(200);
    await smtp.next('bob2@example.com');
  });
});
