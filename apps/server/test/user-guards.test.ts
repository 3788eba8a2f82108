import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryLogger, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 11 (9): a UserCollection let an anonymous caller DELETE any user and any user change
// another's profile. Deployd's open model stays for apps written for it, but new apps start safe
// (svc create writes access rules, issue 24) and production lists the collections without them.

const TEMPLATE = fileURLToPath(new URL('../templates/app', import.meta.url));

async function templateFiles(dir = TEMPLATE): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) Object.assign(out, await templateFiles(path));
    else out[relative(TEMPLATE, path)] = await readFile(path, 'utf8');
  }
  return out;
}

const ROOT = { 'svc-ssh-key': 'guard-root-key' };

describe('the users of an app made by svc create', () => {
  let h: AppHandle;
  let ann: string;
  let bob: string;

  beforeAll(async () => {
    const files = await templateFiles();
    // Rules, not scripts: config.json's update and delete rules are the user themself.
    expect(Object.keys(files).filter((f) => f.startsWith('resources/users/'))).toEqual(['resources/users/config.json']);
    h = await runApp({ ...files, 'app.json': { passwordCost: 4 }, '.svc/keys.json': { 'guard-root-key': true } }, { env: 'production' });
    ann = ((await h.request('POST', '/users', { username: 'ann', password: 'pw-ann' })).body as { id: string }).id;
    bob = ((await h.request('POST', '/users', { username: 'bob', password: 'pw-bob' })).body as { id: string }).id;
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a visitor who is not logged in cannot delete or change a user', async () => {
    // The read rule hides other users (issue 38): they answer as missing ones, 404 and 400.
    expect(await h.client()('DELETE', `/users/${ann}`)).toMatchObject({ status: 404, body: { status: 404 } });
    expect((await h.client()('PUT', `/users/${ann}`, { displayName: 'pwned' })).status).toBe(400);
    expect((await h.request('GET', `/users/${ann}`, undefined, ROOT)).body).not.toHaveProperty('displayName');
  });

  it('a user cannot change or delete another user, but can change and delete their own', async () => {
    const asBob = h.client();
    expect((await asBob('POST', '/users/login', { username: 'bob', password: 'pw-bob' })).status).toBe(200);
    expect((await asBob('PUT', `/users/${ann}`, { displayName: 'pwned' })).status).toBe(400);
    expect((await asBob('DELETE', `/users/${ann}`)).status).toBe(404);
    expect((await h.request('GET', `/users/${ann}`, undefined, ROOT)).status).toBe(200);
    expect(await asBob('PUT', `/users/${bob}`, { displayName: 'Bob' })).toMatchObject({ status: 200, body: { displayName: 'Bob' } });
    expect((await asBob('DELETE', `/users/${bob}`)).status).toBe(204);
  });

  it('root may change and delete any user', async () => {
    expect((await h.request('PUT', `/users/${ann}`, { displayName: 'Ann' }, ROOT)).status).toBe(200);
    expect((await h.request('DELETE', `/users/${ann}`, undefined, ROOT)).status).toBe(204);
  });
});

describe('a UserCollection without guards', () => {
  it('is listed at a production start (access rules warning); with rules it is not', async () => {
    const logger = memoryLogger();
    const open = await runApp({ 'resources/people/config.json': { type: 'UserCollection' } }, { env: 'production', logger });
    await open.close();
    expect(logger.lines.join('\n')).toMatch(/warn access rules: anyone may write to people \(create, update, delete\)/);
    const quiet = memoryLogger();
    const ruled = await runApp({ 'resources/people/config.json': { type: 'UserCollection', rules: { create: true, update: { id: '@me.id' }, delete: { id: '@me.id' } } } }, { env: 'production', logger: quiet });
    await ruled.close();
    expect(quiet.lines.join('\n')).not.toMatch(/anyone may write/);
  });
});
