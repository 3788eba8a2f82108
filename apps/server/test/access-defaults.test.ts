import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import { relative } from 'node:path';
import { defaultRules, defaultWriteRules, OWNER_PROPERTY } from '../src/defaultRules.js';
import { memoryLogger, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 24, "defaults that help": svc create and the dashboard's new collections start with write
// rules (create needs a login; an owner changes and deletes only their own), not Deployd's open model.

const TEMPLATE = fileURLToPath(new URL('../templates/app/resources', import.meta.url));
const LOGGED_IN = { '@me.id': { $exists: true } };

let apps: AppHandle[] = [];
afterEach(async () => {
  for (const h of apps) await h.close();
  apps = [];
});

async function start(files: Record<string, string | object>): Promise<AppHandle> {
  const h = await runApp(files);
  apps.push(h);
  return h;
}

const dashboard = (h: AppHandle, body: unknown) => h.request('POST', '/dashboard/api/resources', body, { 'svc-ssh-key': 'development' });
const configOf = async (h: AppHandle, name: string): Promise<Record<string, unknown>> => JSON.parse(await readFile(join(h.dir, 'resources', name, 'config.json'), 'utf8')) as Record<string, unknown>;

describe('the rules svc create writes', () => {
  it('todos have an indexed owner and the owner rules; users sign up freely, see and change only themselves', async () => {
    const todos = JSON.parse(await readFile(join(TEMPLATE, 'todos/config.json'), 'utf8')) as Record<string, Record<string, unknown>>;
    expect(todos.properties?.[OWNER_PROPERTY]).toEqual({ type: 'string', index: true });
    expect(todos.rules).toEqual(defaultWriteRules('Collection', OWNER_PROPERTY));
    expect(todos.rules).toEqual({ create: { ...LOGGED_IN, owner: '@me.id' }, update: { owner: '@me.id' }, delete: { owner: '@me.id' } });
    const users = JSON.parse(await readFile(join(TEMPLATE, 'users/config.json'), 'utf8')) as Record<string, unknown>;
    expect(users.rules).toEqual(defaultRules('UserCollection'));
    // Issue 38: nobody lists or reads other users (Deployd let anyone list every user).
    expect(users.rules).toEqual({ list: { id: '@me.id' }, read: { id: '@me.id' }, create: true, update: { id: '@me.id' }, delete: { id: '@me.id' } });
  });
});

describe('the rules of a collection made in the dashboard', () => {
  it('with an owner property: the property (indexed) and the owner rules', async () => {
    const h = await start({ 'resources/todos/config.json': { type: 'Collection' } });
    expect((await dashboard(h, { name: 'posts', type: 'Collection', owner: 'author' })).status).toBe(201);
    expect(await configOf(h, 'posts')).toEqual({
      type: 'Collection',
      properties: { author: { type: 'string', index: true } },
      rules: { create: { ...LOGGED_IN, author: '@me.id' }, update: { author: '@me.id' }, delete: { author: '@me.id' } },
    });
  });

  it('without one: create needs a login, the rest stays open', async () => {
    const h = await start({ 'resources/todos/config.json': { type: 'Collection' } });
    for (const [name, owner] of [['a', undefined], ['b', ''], ['c', null]] as const) {
      expect((await dashboard(h, { name, type: 'Collection', ...(owner !== undefined ? { owner } : {}) })).status, name).toBe(201);
      expect(await configOf(h, name)).toEqual({ type: 'Collection', properties: {}, rules: { create: LOGGED_IN } });
    }
  });

  it('a user collection: sign-up open on purpose, a user lists, reads, changes and deletes only themself', async () => {
    const h = await start({ 'resources/todos/config.json': { type: 'Collection' } });
    expect((await dashboard(h, { name: 'members', type: 'UserCollection', owner: 'ignored' })).status).toBe(201);
    expect(await configOf(h, 'members')).toEqual({
      type: 'UserCollection',
      properties: {},
      rules: { list: { id: '@me.id' }, read: { id: '@me.id' }, create: true, update: { id: '@me.id' }, delete: { id: '@me.id' } },
    });
  });

  it('served at once: sign-up open, create needs a login as the owner, only the owner changes and deletes', async () => {
    const h = await start({ 'resources/todos/config.json': { type: 'Collection' } });
    expect((await dashboard(h, { name: 'members', type: 'UserCollection' })).status).toBe(201);
    expect((await dashboard(h, { name: 'posts', type: 'Collection', owner: 'author' })).status).toBe(201);
    const member = async (username: string): Promise<{ id: string; as: AppHandle['request'] }> => {
      const made = await h.client()('POST', '/members', { username, password: `pw-${username}-1` });
      expect(made.status).toBe(200);
      const as = h.client();
      expect((await as('POST', '/members/login', { username, password: `pw-${username}-1` })).status).toBe(200);
      return { id: (made.body as { id: string }).id, as };
    };
    const ann = await member('ann');
    const bob = await member('bob');
    expect((await h.client()('POST', '/posts', { author: ann.id })).status).toBe(403);
    expect((await bob.as('POST', '/posts', { author: ann.id })).status).toBe(403);
    const post = await ann.as('POST', '/posts', { author: ann.id });
    expect(post.status).toBe(200);
    const id = (post.body as { id: string }).id;
    expect((await bob.as('PUT', `/posts/${id}`, { author: bob.id })).status).toBe(403);
    expect((await bob.as('DELETE', `/posts/${id}`)).status).toBe(403);
    expect((await ann.as('PUT', `/posts/${id}`, {})).status).toBe(200);
    expect((await ann.as('DELETE', `/posts/${id}`)).status).toBe(204);
    expect((await bob.as('PUT', `/members/${ann.id}`, {})).status).toBe(400);
    expect(((await bob.as('GET', '/members')).body as { id: string }[]).map((m) => m.id)).toEqual([bob.id]);
    expect((await bob.as('GET', `/members/${ann.id}`)).status).toBe(404);
    expect((await h.client()('DELETE', `/members/${ann.id}`)).status).toBe(404);
    expect((await ann.as('DELETE', `/members/${ann.id}`)).status).toBe(204);
  });

  it('a bad owner name is refused on the owner field, and nothing is written', async () => {
    const h = await start({ 'resources/todos/config.json': { type: 'Collection' } });
    for (const owner of ['id', '$where', 'a.b', '9x', 'has space', 12, { $ne: 1 }, ['owner']]) {
      const res = await dashboard(h, { name: 'posts', type: 'Collection', owner });
      expect(res.status, JSON.stringify(owner)).toBe(400);
      expect((res.body as { errors?: Record<string, string> }).errors).toHaveProperty('owner');
    }
    expect((await h.request('GET', '/dashboard/api/resources/posts', undefined, { 'svc-ssh-key': 'development' })).status).toBe(404);
  });
});

/** The template's files, as runApp writes them. */
async function templateFiles(dir = fileURLToPath(new URL('../templates/app', import.meta.url)), root = dir): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) Object.assign(out, await templateFiles(path, root));
    else out[relative(root, path)] = await readFile(path, 'utf8');
  }
  return out;
}

const RULED = { create: { '@me.id': { $exists: true } }, update: { owner: '@me.id' }, delete: false };

describe('a production start lists the collections anyone may write to', () => {
  const files = {
    'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
    'resources/people/config.json': { type: 'UserCollection' },
    'resources/people/put.js': "cancelUnless(isRoot || isMe(this.id), 'no', 403);",
    'resources/notes/config.json': { type: 'Collection', properties: { owner: { type: 'string' } }, rules: RULED },
    'resources/half/config.json': { type: 'Collection', properties: { owner: { type: 'string' } }, rules: { update: { owner: '@me.id' } } },
    'resources/members/config.json': { type: 'UserCollection', rules: { create: true, update: { id: '@me.id' }, delete: { id: '@me.id' } } },
    'resources/hello/config.json': { type: 'Event' },
  };

  it('one warning naming each open action, the scripts that may guard them, and the fix', async () => {
    const logger = memoryLogger();
    const h = await runApp(files, { env: 'production', logger, resourceTypes: [(await import('@svc/type-event')).default] });
    await h.close();
    const warnings = logger.lines.filter((l) => l.includes('anyone may write'));
    expect(warnings).toHaveLength(1);
    const [line] = warnings as [string];
    expect(line).toMatch(/^warn access rules: anyone may write to /);
    expect(line).toContain('todos (create, update, delete)');
    expect(line).toContain('people (create, update, delete; put.js may guard it)');
    expect(line).toContain('half (create, delete)');
    // Ruled (queries, false) and open on purpose (true) are not listed; nor other resource types.
    for (const name of ['notes', 'members', 'hello']) expect(line).not.toContain(` ${name} (`);
    expect(line).toContain('"update": {"owner": "@me.id"}');
    expect(line).toContain('docs/access-rules.md');
  });

  it('one more warning naming the user collections anyone may list or read (issue 38)', async () => {
    const logger = memoryLogger();
    const h = await runApp(
      {
        ...files,
        'resources/people/get.js': "if (!isMe(this.id)) hide('email');",
        'resources/readers/config.json': { type: 'UserCollection', rules: { list: false } },
        'resources/open/config.json': { type: 'UserCollection', rules: { list: true, read: true } },
      },
      { env: 'production', logger, resourceTypes: [(await import('@svc/type-event')).default] },
    );
    await h.close();
    const warnings = logger.lines.filter((l) => l.includes('anyone may list or read'));
    expect(warnings).toHaveLength(1);
    const [line] = warnings as [string];
    expect(line).toMatch(/^warn access rules: anyone may list or read the users of /);
    expect(line).toContain('people (list, read; get.js may guard them)');
    expect(line).toContain('members (list, read)');
    expect(line).toContain('readers (read)');
    // Collections that are not user collections, and user collections open on purpose (true), are not listed.
    for (const name of ['todos', 'notes', 'open', 'hello']) expect(line).not.toContain(` ${name} (`);
    expect(line).toContain('"list": {"id": "@me.id"}');
  });

  it('development says nothing; an app of svc create says nothing in production either', async () => {
    const dev = memoryLogger();
    await (await runApp(files, { env: 'development', logger: dev, resourceTypes: [(await import('@svc/type-event')).default] })).close();
    expect(dev.lines.join('\n')).not.toMatch(/anyone may (write|list)/);
    const created = memoryLogger();
    await (await runApp({ ...(await templateFiles()), '.svc/keys.json': { ['k'.repeat(64)]: true } }, { env: 'production', logger: created })).close();
    expect(created.lines.join('\n')).not.toMatch(/anyone may (write|list)/);
  });
});
