import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { rawRequest } from './helpers/rawRequest.js';

// Issue 24: the dashboard's Rules tab. Rules are saved through the same config path as properties
// (the server's load-time check answers), and "try as this user on this object" asks the live
// collection's explainAccess for a request of that user. Root only, as the whole dashboard API.

const KEY = 'c0ffee'.repeat(11);
const ROOT = { 'svc-ssh-key': 'development' };

const FILES = {
  'resources/users/config.json': { type: 'UserCollection', properties: { role: { type: 'string' } } },
  'resources/posts/config.json': {
    type: 'Collection',
    properties: { owner: { type: 'string', index: true }, title: { type: 'string' }, published: { type: 'boolean' }, secret: { type: 'string', read: { owner: '@me.id' } } },
    rules: {
      list: { $or: [{ published: true }, { owner: '@me.id' }] },
      read: { $or: [{ published: true }, { owner: '@me.id' }] },
      create: { '@me.id': { $exists: true } },
      update: { owner: '@me.id' },
      delete: { $or: [{ owner: '@me.id' }, { '@me.role': 'admin' }] },
    },
  },
  'resources/staff/config.json': { type: 'UserCollection', properties: { role: { type: 'string' } } },
  'resources/hello/config.json': { type: 'Event' },
};

let apps: AppHandle[] = [];
afterEach(async () => {
  for (const h of apps) await h.close();
  apps = [];
});

async function start(env: 'development' | 'production' = 'development'): Promise<AppHandle> {
  const h = await runApp({ ...FILES, ...(env === 'production' ? { '.svc/keys.json': { [KEY]: true } } : {}) }, { env, resourceTypes: [(await import('@svc/type-event')).default] });
  apps.push(h);
  return h;
}

const EXPLAIN = '/dashboard/api/resources/posts/explain';

describe('dashboard Rules tab: saving rules', () => {
  it('rules and property read/write rules are written to config.json through the config path', async () => {
    const h = await start();
    const config = {
      ...FILES['resources/posts/config.json'],
      properties: { ...FILES['resources/posts/config.json'].properties, secret: { type: 'string', read: { '@me.role': 'hr' }, write: false } },
      rules: { ...FILES['resources/posts/config.json'].rules, read: { $or: [{ owner: '@me.id' }, { title: { $exists: true } }] } },
    };
    const before = await readFile(join(h.dir, 'resources/posts/config.json'), 'utf8');
    const res = await h.request('PUT', '/dashboard/api/resources/posts', { config }, ROOT);
    expect(res.status).toBe(200);
    expect(JSON.parse(await readFile(join(h.dir, 'resources/posts/config.json'), 'utf8'))).toEqual(config);
    expect(before).not.toEqual(await readFile(join(h.dir, 'resources/posts/config.json'), 'utf8'));
  });

  it('a rule that does not load is refused with the server\'s message (file, rule, bad part); nothing changes', async () => {
    const h = await start();
    const before = await readFile(join(h.dir, 'resources/posts/config.json'), 'utf8');
    const cases: [object, RegExp][] = [
      [{ rules: { update: { author: '@me.id' } } }, /resources\/posts\/config\.json: rules\.update: unknown property "author"/],
      [{ rules: { read: { owner: '@old.owner' } } }, /rules\.read: @old\.owner is not available in this rule/],
      [{ rules: { remove: true } }, /unknown rule "remove"/],
      [{ rules: { list: { owner: { $where: 'x' } } } }, /rules\.list: owner: unknown operator \$where/],
      [{ properties: { ...FILES['resources/posts/config.json'].properties, secret: { type: 'string', read: { '@me.salary': 1 } } } }, /properties\.secret\.read: @me\.salary names no property/],
    ];
    for (const [change, message] of cases) {
      const res = await h.request('PUT', '/dashboard/api/resources/posts', { config: { ...FILES['resources/posts/config.json'], ...change } }, ROOT);
      expect(res.status, JSON.stringify(change)).toBe(400);
      expect((res.body as { message: string }).message).toMatch(message);
      expect(JSON.stringify(res.body)).not.toContain(h.dir);
      expect(await readFile(join(h.dir, 'resources/posts/config.json'), 'utf8')).toBe(before);
    }
    // The app kept serving the previous rules.
    expect((await h.request('POST', '/posts', { title: 'anonymous' })).status).toBe(403);
  });
});

describe('dashboard Rules tab: try as this user on this object', () => {
  it('is root only: no key, a wrong key, another site or another host name are refused', async () => {
    const h = await start('production');
    for (const headers of [{}, { 'svc-ssh-key': 'development' }, { 'svc-ssh-key': KEY.slice(1) }] as Record<string, string>[]) {
      const res = await h.client()('POST', EXPLAIN, { object: 'x' }, headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
    }
    for (const headers of [{ origin: 'http://evil.example' }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }] as Record<string, string>[]) {
      const res = await h.client()('POST', EXPLAIN, { object: 'x' }, { 'svc-ssh-key': KEY, ...headers });
      expect(res.status, JSON.stringify(headers)).toBe(403);
    }
    const dev = await start('development');
    // DNS rebinding: a page of another name pointing at this machine (fetch cannot set Host).
    expect(await rawRequest(dev.url, 'POST', EXPLAIN, { object: 'x' }, { ...ROOT, host: 'evil.example:2403' })).toBe(403);
    // Scripts cannot reach the dashboard (internal requests answer 404), nor can GET.
    expect((await dev.request('GET', EXPLAIN, undefined, ROOT)).status).toBe(404);
  });

  it('answers what the saved rules decide for the owner, another user, an admin of another user collection and a visitor; the real requests agree', async () => {
    const h = await start();
    const signUp = async (users: string, username: string, role?: string): Promise<{ id: string; as: AppHandle['request'] }> => {
      const made = await h.request('POST', `/${users}`, { username, password: `pw-${username}-1`, ...(role ? { role } : {}) }, role ? ROOT : {});
      const as = h.client();
      expect((await as('POST', `/${users}/login`, { username, password: `pw-${username}-1` })).status).toBe(200);
      return { id: (made.body as { id: string }).id, as };
    };
    const ann = await signUp('users', 'ann');
    const bob = await signUp('users', 'bob');
    await signUp('staff', 'boss', 'admin');
    const draft = (await ann.as('POST', '/posts', { owner: ann.id, title: 'draft', secret: 's' })).body as { id: string };
    const explain = async (user: string | undefined, users?: string) => {
      const res = await h.request('POST', EXPLAIN, { object: draft.id, ...(user !== undefined ? { user } : {}), ...(users ? { users } : {}) }, ROOT);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body as { user: { id: string; username: string; users: string } | null; object: string; access: Record<string, { allowed: boolean; rule: string }> & { properties: Record<string, { read: boolean; write: boolean }> } };
    };
    const owner = await explain('ann');
    expect(owner.user).toEqual({ id: ann.id, username: 'ann', users: 'users' });
    expect(owner.object).toBe(draft.id);
    expect(owner.access).toMatchObject({
      list: { allowed: true, rule: 'rules.list' },
      read: { allowed: true, rule: 'rules.read' },
      update: { allowed: true, rule: 'rules.update' },
      delete: { allowed: true, rule: 'rules.delete' },
      properties: { secret: { read: true, write: true }, title: { read: true, write: true } },
    });
    // By id: the same answer.
    expect((await explain(ann.id)).access).toEqual(owner.access);
    const other = await explain('bob');
    expect(other.access).toMatchObject({ read: { allowed: false }, update: { allowed: false }, delete: { allowed: false }, properties: { secret: { read: false } } });
    const admin = await explain('boss', 'staff');
    expect(admin.user).toMatchObject({ username: 'boss', users: 'staff' });
    expect(admin.access).toMatchObject({ read: { allowed: false }, update: { allowed: false }, delete: { allowed: true } });
    const visitor = await explain(undefined);
    expect(visitor.user).toBeNull();
    expect(visitor.access).toMatchObject({ read: { allowed: false }, update: { allowed: false }, delete: { allowed: false } });
    // The server's own answers to those users agree (explainAccess decides through the same rules).
    expect((await ann.as('GET', `/posts/${draft.id}`)).status).toBe(200);
    expect((await bob.as('GET', `/posts/${draft.id}`)).status).toBe(404);
    expect((await h.client()('GET', `/posts/${draft.id}`)).status).toBe(404);
    expect((await bob.as('DELETE', `/posts/${draft.id}`)).status).toBe(404);
    // No password hash in any answer; a user collection that does not exist, a user or an object that does not exist: 404 naming the field.
    expect(JSON.stringify([owner, other, admin])).not.toMatch(/password|\$2[aby]\$/);
    for (const [body, field] of [[{ object: draft.id, user: 'nobody' }, 'user'], [{ object: draft.id, user: 'ann', users: 'staff' }, 'user'], [{ object: draft.id, user: 'ann', users: 'nope' }, 'users'], [{ object: 'nope' }, 'object']] as const) {
      const res = await h.request('POST', EXPLAIN, body, ROOT);
      expect(res.status, JSON.stringify(body)).toBe(404);
      expect((res.body as { errors?: Record<string, string> }).errors).toHaveProperty(field);
    }
    // A username that looks like a query is a plain value: it finds nobody.
    expect((await h.request('POST', EXPLAIN, { object: draft.id, user: '{"$ne": null}' }, ROOT)).status).toBe(404);
    // Root may do anything: the answer for a root request is not what a user gets; the dashboard never asks as root.
    expect(JSON.stringify(owner.access)).not.toContain('"rule":"root"');
  });

  it('bad input is a clear 400/404, naming the field', async () => {
    const h = await start();
    const cases: [string, unknown, number, string][] = [
      [EXPLAIN, {}, 400, 'object'],
      [EXPLAIN, { object: '' }, 400, 'object'],
      [EXPLAIN, { object: { $ne: 1 } }, 400, 'object'],
      [EXPLAIN, { object: 'x', user: { $ne: 1 } }, 400, 'user'],
      [EXPLAIN, { object: 'x', user: 'ann', users: 7 }, 400, 'users'],
      ['/dashboard/api/resources/nope/explain', { object: 'x' }, 404, ''],
      ['/dashboard/api/resources/hello/explain', { object: 'x' }, 404, ''],
      ['/dashboard/api/resources/..%2F..%2Fetc/explain', { object: 'x' }, 400, ''],
    ];
    for (const [path, body, status, field] of cases) {
      const res = await h.request('POST', path, body, ROOT);
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(status);
      if (field) expect((res.body as { errors?: Record<string, string> }).errors).toHaveProperty(field);
      expect(JSON.stringify(res.body)).not.toContain(h.dir);
    }
  });
});
