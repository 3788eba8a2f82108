import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 38, item 5: users were listable by anyone. Anonymous `GET /users` listed every user with
// their address once accounts were on, and `?email=` told whether an address has an account. With
// `auth`, the account fields (the address, the verified flag) are private unless config.json says
// otherwise; `svc create`'s users list and read only themselves. A config without rules and
// without `auth` keeps Deployd's behaviour.

const ROOT = { 'svc-ssh-key': 'users-listing-root-key' };
const TEMPLATE_USERS = fileURLToPath(new URL('../templates/app/resources/users/config.json', import.meta.url));

const q = (query: object) => encodeURIComponent(JSON.stringify(query));

for (const store of appStores()) {
  describe(`who can list users (${store} store)`, () => {
    let h: AppHandle;
    const ids: Record<string, string> = {};

    beforeAll(async () => {
      const account = { email: { type: 'string', unique: true }, verified: { type: 'boolean' }, displayName: { type: 'string' } };
      h = await runApp(
        {
          'app.json': { passwordCost: 4, publicCount: true },
          '.svc/keys.json': { 'users-listing-root-key': true },
          // docs/accounts.md's first example: accounts on, no rules.
          'resources/users/config.json': { type: 'UserCollection', properties: account, auth: { mfa: { issuer: 'My App' } } },
          // A Deployd app: no rules, no auth.
          'resources/people/config.json': { type: 'UserCollection', properties: { email: { type: 'string' } } },
          // Accounts on, and the app says the address is public.
          'resources/staff/config.json': { type: 'UserCollection', properties: { ...account, email: { type: 'string', read: true } }, auth: { mfa: {} } },
          // svc create's users, as the template writes them.
          'resources/members/config.json': JSON.parse(await readFile(TEMPLATE_USERS, 'utf8')) as object,
          'resources/notes/config.json': { type: 'Collection', properties: { text: { type: 'string' }, author: { type: 'relation', collection: 'users' } } },
        },
        { store },
      );
      for (const name of ['ann', 'bob']) {
        ids[name] = ((await h.request('POST', '/users', { username: name, password: `pw-${name}`, email: `${name}@example.com`, displayName: name.toUpperCase() })).body as { id: string }).id;
        await h.request('POST', '/people', { username: name, password: `pw-${name}`, email: `${name}@example.com` });
        await h.request('POST', '/staff', { username: name, password: `pw-${name}`, email: `${name}@example.com` });
        ids[`member-${name}`] = ((await h.request('POST', '/members', { username: name, password: `pw-${name}` })).body as { id: string }).id;
      }
      await h.request('PUT', `/users/${ids.ann as string}`, { verified: true }, ROOT);
      await h.request('POST', '/notes', { text: 'hi', author: ids.ann });
    }, 60_000);
    afterAll(async () => {
      await h?.close();
    });

    it('accounts on: anyone still lists the users (no list rule) but not their address nor their verified flag', async () => {
      const list = (await h.request('GET', '/users')).body as Record<string, unknown>[];
      expect(list.map((u) => u.username).sort()).toEqual(['ann', 'bob']);
      for (const user of list) expect(Object.keys(user).sort()).toEqual(['displayName', 'id', 'username']);
      expect(Object.keys((await h.request('GET', `/users/${ids.ann as string}`)).body as object).sort()).toEqual(['displayName', 'id', 'username']);
      // Not through a relation either.
      const note = ((await h.request('GET', `/notes?${q({ $expand: ['author'] })}`)).body as { author: Record<string, unknown> }[])[0];
      expect(note?.author).toEqual({ id: ids.ann, username: 'ann', displayName: 'ANN' });
    });

    it('accounts on: a filter, sort or count on the address is refused, so it tells nobody whether an address has an account', async () => {
      for (const path of [
        '/users?email=ann@example.com',
        '/users?email=nobody@example.com',
        `/users?${q({ email: { $regex: '^a' } })}`,
        `/users?${q({ $sort: { email: 1 } })}`,
        '/users/count?email=ann@example.com',
        `/users?${q({ $or: [{ email: 'ann@example.com' }, { username: 'x' }] })}`,
        '/users?verified=true',
      ]) {
        const res = await h.request('GET', path);
        expect(res.status, path).toBe(400);
        expect((res.body as { message: string }).message, path).toMatch(/may not be queried/);
      }
      // Nor through a relation.
      expect((await h.request('GET', `/notes?${q({ 'author.email': 'ann@example.com' })}`)).status).toBe(400);
    });

    it('the user at /me and root read the account fields; root filters on them', async () => {
      const ann = h.client();
      expect((await ann('POST', '/users/login', { username: 'ann', password: 'pw-ann' })).status).toBe(200);
      expect((await ann('GET', '/users/me')).body).toMatchObject({ username: 'ann', email: 'ann@example.com', verified: true });
      expect((await ann('GET', '/users?email=ann@example.com')).status).toBe(400);
      expect((await h.request('GET', '/users?email=ann@example.com', undefined, ROOT)).body).toEqual([expect.objectContaining({ id: ids.ann, email: 'ann@example.com', verified: true })]);
    });

    it('a property rule of the app wins: a public address stays public', async () => {
      const list = (await h.request('GET', '/staff?email=ann@example.com')).body as Record<string, unknown>[];
      expect(list).toEqual([expect.objectContaining({ username: 'ann', email: 'ann@example.com' })]);
      expect(list[0]).not.toHaveProperty('verified');
    });

    it('without rules and without auth, Deployd\'s behaviour: anyone lists every user with every property but the password', async () => {
      const list = (await h.request('GET', '/people')).body as Record<string, unknown>[];
      expect(list.map((u) => [u.username, u.email]).sort()).toEqual([['ann', 'ann@example.com'], ['bob', 'bob@example.com']]);
      expect((await h.request('GET', '/people?email=bob@example.com')).body).toEqual([expect.objectContaining({ username: 'bob' })]);
    });

    it('svc create\'s users: a visitor lists nobody, a user lists and reads only themself', async () => {
      expect((await h.request('GET', '/members')).body).toEqual([]);
      expect((await h.request('GET', '/members/count')).body).toEqual({ count: 0 });
      expect((await h.request('GET', `/members/${ids['member-ann'] as string}`)).status).toBe(404);
      const ann = h.client();
      await ann('POST', '/members/login', { username: 'ann', password: 'pw-ann' });
      expect(((await ann('GET', '/members')).body as { id: string }[]).map((u) => u.id)).toEqual([ids['member-ann']]);
      expect((await ann('GET', `/members/${ids['member-bob'] as string}`)).status).toBe(404);
      expect((await ann('GET', `/members/${ids['member-ann'] as string}`)).body).toMatchObject({ username: 'ann' });
      expect((await ann('GET', '/members/me')).body).toMatchObject({ id: ids['member-ann'] });
      expect(((await h.request('GET', '/members', undefined, ROOT)).body as unknown[]).length).toBe(2);
    });
  });
}
