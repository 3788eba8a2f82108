import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable } from './browser-helpers.js';
import { openAppInChromium } from './helpers/appInChromium.js';
import type { AppInChromium } from './helpers/appInChromium.js';

// Issue 24: the Rules tab in a browser: edit and save a collection's rules (a rule the server
// refuses shows its message and changes nothing), then "try as this user on this object".

const run = chromiumAvailable('dashboard Rules tab browser tests');
const SHOTS = fileURLToPath(new URL('../test-output/dashboard/', import.meta.url));
const ROOT = { 'svc-ssh-key': 'development' };

async function rest(app: RunningApp, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${app.url}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}

describe.skipIf(!run)('dashboard Rules tab in the browser', () => {
  let app: RunningApp;
  let dir: string;
  let page: Page;
  let session: AppInChromium | undefined;
  let ann = '';
  let post = '';

  beforeAll(async () => {
    const files: Record<string, object> = {
      'resources/users/config.json': { type: 'UserCollection', properties: { role: { type: 'string' } } },
      'resources/posts/config.json': {
        type: 'Collection',
        properties: { owner: { type: 'string', index: true }, title: { type: 'string' }, secret: { type: 'string', read: { owner: '@me.id' } } },
        rules: { create: { '@me.id': { $exists: true }, owner: '@me.id' }, update: { owner: '@me.id' }, delete: { owner: '@me.id' } },
      },
    };
    session = await openAppInChromium(files, { prefix: 'svc-dashboard-rules-', viewport: { width: 1360, height: 900 }, timeout: 10_000 });
    ({ dir, app, page } = session);
    ann = String((await rest(app, 'POST', '/users', { username: 'ann', password: 'pw-ann-1' })).body.id);
    await rest(app, 'POST', '/users', { username: 'bob', password: 'pw-bob-1' });
    post = String((await rest(app, 'POST', '/posts', { owner: ann, title: 'hello', secret: 's' }, ROOT)).body.id);
    await page.goto(`${app.url}/dashboard/#/r/posts/rules`);
    await page.waitForSelector('[data-test=rules]');
  });
  afterAll(async () => {
    await session?.close();
  });

  it('shows the saved rules, saves a change to config.json, and shows the server\'s refusal of a bad rule', async () => {
    expect(await page.inputValue('[aria-label="update query"]')).toBe('{"owner":"@me.id"}');
    expect(await page.inputValue('[aria-label="secret read query"]')).toBe('{"owner":"@me.id"}');
    // Every write has a rule: nothing for the production warning to list.
    expect(await page.locator('[data-test=open-writes]').count()).toBe(0);
    await page.goto(`${app.url}/dashboard/#/r/users/rules`);
    await page.waitForSelector('[data-test=open-writes]:has-text("Anyone may create, update, delete")');
    await page.goto(`${app.url}/dashboard/#/r/posts/rules`);
    await page.waitForSelector('[aria-label="update query"]');
    // Drafts: published or mine.
    await page.selectOption('[aria-label="read kind"]', 'query');
    await page.fill('[aria-label="read query"]', '{"$or": [{"title": {"$exists": true}}, {"owner": "@me.id"}]}');
    await page.selectOption('[aria-label="delete kind"]', 'false');
    await page.click('[data-test=save-rules]');
    await page.waitForSelector('.rules .ok:has-text("Saved")');
    const config = JSON.parse(await readFile(join(dir, 'resources/posts/config.json'), 'utf8')) as { rules: Record<string, unknown> };
    expect(config.rules).toEqual({
      create: { '@me.id': { $exists: true }, owner: '@me.id' },
      update: { owner: '@me.id' },
      delete: false,
      read: { $or: [{ title: { $exists: true } }, { owner: '@me.id' }] },
    });
    // Served at once: ann may not delete her own post any more (root only).
    const asAnn = await fetch(`${app.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ann', password: 'pw-ann-1' }) });
    const cookie = (asAnn.headers.getSetCookie().find((c) => c.startsWith('sid=')) ?? '').split(';')[0] as string;
    expect((await rest(app, 'DELETE', `/posts/${post}`, undefined, { cookie })).status).toBe(403);

    // A rule naming a property that does not exist: the server's load-time check answers; nothing changes.
    await page.fill('[aria-label="update query"]', '{"author": "@me.id"}');
    await page.click('[data-test=save-rules]');
    await page.waitForSelector('[data-test=rules-error]');
    expect(await page.textContent('[data-test=rules-error]')).toContain('author');
    expect(JSON.parse(await readFile(join(dir, 'resources/posts/config.json'), 'utf8'))).toEqual(config);
    // Text that is not JSON is caught before it is sent.
    await page.fill('[aria-label="update query"]', '{"owner": ');
    await page.waitForSelector('.rule-field.has-error');
    await page.click('button:has-text("Revert")');
    expect(await page.inputValue('[aria-label="update query"]')).toBe('{"owner":"@me.id"}');
  });

  it('tries the rules as a user on an object: the owner, another user, a visitor', async () => {
    const explain = async (user: string): Promise<Record<string, string>> => {
      await page.fill('[aria-label="try as user"]', user);
      await page.fill('[aria-label="try on object"]', post);
      await page.click('[data-test=explain]');
      await page.waitForSelector(`[data-test=explanation] strong:has-text("${user === '' ? 'a visitor who is not logged in' : user}")`);
      const out: Record<string, string> = {};
      for (const action of ['list', 'read', 'update', 'delete']) out[action] = (await page.textContent(`[data-explained=${action}] td:nth-child(2)`)) ?? '';
      out.secret = (await page.textContent('[data-explained-prop=secret] td:nth-child(2)')) ?? '';
      return out;
    };
    const owner = await explain('ann');
    await mkdir(SHOTS, { recursive: true });
    await page.locator('[data-test=try-as]').screenshot({ path: join(SHOTS, '17-rules-try-as.png') });
    expect(owner).toMatchObject({ read: expect.stringContaining('allowed'), update: expect.stringContaining('allowed'), delete: expect.stringContaining('refused'), secret: expect.stringContaining('allowed') });
    const other = await explain('bob');
    expect(other).toMatchObject({ read: expect.stringContaining('allowed'), update: expect.stringContaining('refused'), delete: expect.stringContaining('refused'), secret: expect.stringContaining('refused') });
    const visitor = await explain('');
    expect(visitor).toMatchObject({ update: expect.stringContaining('refused'), secret: expect.stringContaining('refused') });
    // A user that does not exist: the server says so.
    await page.fill('[aria-label="try as user"]', 'nobody');
    await page.click('[data-test=explain]');
    await page.waitForSelector('[data-test=explain-error]:has-text("no user nobody")');
  });

  it('says who can list the users (issue 38): anyone without a list rule, then whom the saved rule allows', async () => {
    await page.goto(`${app.url}/dashboard/#/r/posts/rules`);
    await page.waitForSelector('[aria-label="update query"]');
    expect(await page.locator('[data-test=who-lists-users]').count()).toBe(0);
    await page.goto(`${app.url}/dashboard/#/r/users/rules`);
    await page.waitForSelector('[data-test=who-lists-users].warn:has-text("Anyone, logged in or not, can list every user (no list rule")');
    await page.selectOption('[aria-label="list kind"]', 'query');
    await page.fill('[aria-label="list query"]', '{"id": "@me.id"}');
    await page.click('[data-test=save-rules]');
    await page.waitForSelector('[data-test=who-lists-users]:has-text("Users are listed to those the list rule allows")');
    expect(await page.textContent('[data-test=who-lists-users]')).toContain('{"id":"@me.id"}');
    expect(await page.locator('[data-test=who-lists-users].warn').count()).toBe(0);
    // Served at once: a visitor lists nobody.
    expect((await rest(app, 'GET', '/users')).body).toEqual([]);
  });
});
