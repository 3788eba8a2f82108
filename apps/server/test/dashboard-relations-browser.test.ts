import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { RunningApp } from '../src/startApp.js';
import { chromiumAvailable } from './browser-helpers.js';
import { openAppInChromium } from './helpers/appInChromium.js';
import type { AppInChromium } from './helpers/appInChromium.js';

// Issue 25: relations in the dashboard's data grid, in a browser: a relation cell shows the
// related objects as links (their names, one read of the related collection per page), a link
// opens the related collection filtered to that object, and editing a relation picks from a
// search of the related collection (one id, or a many relation's ids added and taken out). All
// through the app's REST API as root, as the rest of the grid.

const run = chromiumAvailable('dashboard relations browser tests');
const SHOTS = fileURLToPath(new URL('../test-output/dashboard/', import.meta.url));
const ROOT = { 'svc-ssh-key': 'development' };

async function rest(app: RunningApp, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${app.url}${path}`, { method, headers: { 'content-type': 'application/json', ...ROOT }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : {}) as Record<string, unknown>;
}

describe.skipIf(!run)('dashboard relations in the browser', () => {
  let app: RunningApp;
  let page: Page;
  let session: AppInChromium | undefined;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    const files: Record<string, object> = {
      'resources/users/config.json': { type: 'UserCollection', properties: { name: { type: 'string' } } },
      'resources/tags/config.json': { type: 'Collection', properties: { label: { type: 'string' } } },
      'resources/posts/config.json': {
        type: 'Collection',
        properties: { title: { type: 'string' }, author: { type: 'relation', collection: 'users' }, tags: { type: 'relation', collection: 'tags', many: true } },
      },
    };
    session = await openAppInChromium(files, { prefix: 'svc-dashboard-relations-', viewport: { width: 1360, height: 900 }, timeout: 10_000 });
    ({ app, page } = session);
    for (const name of ['ann', 'bob', 'cy']) ids[name] = String((await rest(app, 'POST', '/users', { username: name, password: `pw-${name}-12`, name: `${name} (user)` })).id);
    for (const label of ['red', 'blue', 'green']) ids[label] = String((await rest(app, 'POST', '/tags', { label })).id);
    ids.post = String((await rest(app, 'POST', '/posts', { title: 'hello', author: ids.ann, tags: [ids.red, ids.blue] })).id);
    await rest(app, 'POST', '/posts', { title: 'no author' });
  });
  afterAll(async () => {
    await session?.close();
  });

  const cell = (col: string) => `tr[data-id="${ids.post}"] td[data-col="${col}"]`;

  it('shows relations as links to the related objects; a link opens the related collection at that object', async () => {
    await page.goto(`${app.url}/dashboard/#/r/posts/data`);
    await page.waitForSelector(`${cell('author')} a:has-text("ann (user)")`);
    expect(await page.locator(`${cell('tags')} [data-test=relation-link]`).allTextContents()).toEqual(['red', 'blue']);
    const href = await page.getAttribute(`${cell('author')} a`, 'href');
    expect(decodeURIComponent(href ?? '')).toBe(`#/r/users/data?{"id":{"$in":["${ids.ann}"]}}`);
    await mkdir(SHOTS, { recursive: true });
    await page.locator('[data-test=grid]').screenshot({ path: join(SHOTS, '20-relations-grid.png') });
    await page.click(`${cell('author')} a`);
    await page.waitForSelector(`tr[data-id="${ids.ann}"]`);
    expect(await page.locator('[data-test=grid] tbody tr').count()).toBe(1);
    expect(await page.inputValue('[aria-label=query]')).toBe(`{"id":{"$in":["${ids.ann}"]}}`);
    await page.click(`a.res[href="#/r/posts"]`);
    await page.waitForSelector(`${cell('author')} a:has-text("ann (user)")`);
  });

  it('edits a relation with a picker searching the related collection', async () => {
    await page.goto(`${app.url}/dashboard/#/r/posts/data`);
    await page.dblclick(cell('author'));
    await page.waitForSelector('[data-test=relation-picker]');
    await page.fill('[aria-label="search users"]', 'BO');
    await page.waitForSelector('[data-test=relation-option]:has-text("bob (user)")');
    expect(await page.locator('[data-test=relation-option]').count()).toBe(1);
    await page.locator('[data-test=relation-picker]').screenshot({ path: join(SHOTS, '21-relations-picker.png') });
    await page.click('[data-test=relation-option]:has-text("bob (user)")');
    await page.waitForSelector(`${cell('author')} a:has-text("bob (user)")`);
    expect((await rest(app, 'GET', `/posts/${ids.post}`)).author).toBe(ids.bob);
    // An id found exactly, typed as is.
    await page.dblclick(cell('author'));
    await page.fill('[aria-label="search users"]', ids.cy as string);
    await page.click('[data-test=relation-option]:has-text("cy (user)")');
    await page.waitForSelector(`${cell('author')} a:has-text("cy (user)")`);
    expect((await rest(app, 'GET', `/posts/${ids.post}`)).author).toBe(ids.cy);
    // Cleared.
    await page.dblclick(cell('author'));
    await page.click('[data-test=relation-picker] [aria-label=clear]');
    await page.waitForSelector(`${cell('author')}:not(:has(a))`);
    expect((await rest(app, 'GET', `/posts/${ids.post}`)).author).toBeNull();
  });

  it('a many relation: ids taken out one by one and added from the search', async () => {
    await page.goto(`${app.url}/dashboard/#/r/posts/data`);
    await page.dblclick(cell('tags'));
    await page.click('[data-test=relation-picker] [aria-label="remove red"]');
    await page.waitForSelector(`${cell('tags')} a:has-text("blue")`);
    expect((await rest(app, 'GET', `/posts/${ids.post}`)).tags).toEqual([ids.blue]);
    await page.dblclick(cell('tags'));
    await page.fill('[aria-label="search tags"]', 'gre');
    await page.click('[data-test=relation-option]:has-text("green")');
    await page.waitForSelector(`${cell('tags')} a:has-text("green")`);
    expect((await rest(app, 'GET', `/posts/${ids.post}`)).tags).toEqual([ids.blue, ids.green]);
    expect(await page.locator(`${cell('tags')} [data-test=relation-link]`).allTextContents()).toEqual(['blue', 'green']);
  });

  it('a new object takes a many relation\'s ids separated by commas; an unknown id is the server\'s 400 on its cell', async () => {
    await page.goto(`${app.url}/dashboard/#/r/posts/data`);
    await page.click('[data-test=add-row]');
    await page.fill('.new-row [aria-label=title]', 'added');
    await page.fill('.new-row [aria-label=tags]', `${ids.green}, ${ids.red}`);
    await page.fill('.new-row [aria-label=author]', 'no-such-user');
    await page.click('[data-test=save-row]');
    await page.waitForSelector('.new-row td[data-col=author] .cell-error:has-text("points to an object that does not exist")');
    await page.fill('.new-row [aria-label=author]', ids.ann as string);
    await page.click('[data-test=save-row]');
    await page.waitForSelector('td[data-col=title]:has-text("added")');
    const added = (await rest(app, 'GET', `/posts?${encodeURIComponent(JSON.stringify({ title: 'added' }))}`)) as unknown as Record<string, unknown>[];
    expect(added.map((p) => [p.author, p.tags])).toEqual([[ids.ann, [ids.green, ids.red]]]);
  });
});
