import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { CollectionDef, SvcClient } from '@svc/client';
import { BLANK_PAGE, chromiumAvailable, launchChromium, startBrowserApp, until } from './browser-helpers.js';
import type { BrowserApp } from './browser-helpers.js';

interface Todo {
  id: string;
  title: string;
  n?: number;
  secret?: string;
}
declare const svc: SvcClient<{ resources: { todos: CollectionDef<Todo> } }>;

const APP = {
  'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' }, n: { type: 'number' }, secret: { type: 'string', private: true } } },
  'public/index.html': BLANK_PAGE,
};

const run = chromiumAvailable('browser tests of live queries in /svc.js');

describe.skipIf(!run)('svc.todos.subscribe in /svc.js, in chromium', () => {
  let browser: Browser;
  let t: BrowserApp;

  beforeAll(async () => {
    t = await startBrowserApp(APP);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const post = (body: Record<string, unknown>): Promise<Response> =>
    fetch(`${t.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': 'k' }, body: JSON.stringify(body) });

  it('keeps the page\'s ordered window, without private properties, until it unsubscribes', async () => {
    for (const n of [4, 2, 8]) await post({ title: `t${n}`, n, secret: 'never in a page' });
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${t.url}/`);
    await page.evaluate(() => {
      const g = globalThis as unknown as { titles: string[]; types: string[]; raw: string[]; stop: () => void };
      g.types = [];
      g.raw = [];
      g.stop = svc.todos.subscribe({ $sort: { n: -1 }, $limit: 2 }, (event, todos) => {
        g.types.push(event.type);
        g.raw.push(JSON.stringify(event));
        g.titles = todos.map((o) => o.title);
      });
    });
    const titles = (): Promise<string[] | undefined> => page.evaluate(() => (globalThis as unknown as { titles?: string[] }).titles);
    await until(async () => JSON.stringify(await titles()) === JSON.stringify(['t8', 't4']));
    await post({ title: 't6', n: 6, secret: 'never in a page' });
    await until(async () => JSON.stringify(await titles()) === JSON.stringify(['t8', 't6']));
    const raw = await page.evaluate(() => (globalThis as unknown as { raw: string[] }).raw.join('\n'));
    expect(raw).not.toContain('never in a page');
    await page.evaluate(() => (globalThis as unknown as { stop: () => void }).stop());
    const before = await page.evaluate(() => (globalThis as unknown as { types: string[] }).types.length);
    await post({ title: 't9', n: 9 });
    await new Promise((r) => setTimeout(r, 400));
    expect(await page.evaluate(() => (globalThis as unknown as { types: string[] }).types.length)).toBe(before);
    await page.context().close();
  });
});
