import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumAvailable, launchChromium, startBrowserApp } from './browser-helpers.js';
import type { BrowserApp } from './browser-helpers.js';

const EXAMPLE = fileURLToPath(new URL('../example', import.meta.url));
const run = chromiumAvailable('browser test of the example app');

// Needs the server's event scripts: the todos' post.js, put.js and delete.js emit the changes.
describe.skipIf(!run)('the example app: a todo list that updates live across browsers', () => {
  let browser: Browser;
  let t: BrowserApp;

  beforeAll(async () => {
    t = await startBrowserApp({}, { copyFrom: EXAMPLE });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function open(): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${t.url}/`);
    await page.waitForSelector('#status.live');
    return page;
  }

  it('a todo added, checked and deleted in one browser changes in the other without a reload', async () => {
    const [a, b] = [await open(), await open()];
    await a.fill('#title', 'buy milk');
    await a.click('#add button');
    await b.waitForSelector('li span:text("buy milk")');
    expect(await b.locator('li span').allTextContents()).toEqual(['buy milk']);

    await b.click('li input[type=checkbox]');
    await a.waitForSelector('li.done span:text("buy milk")');

    await a.fill('#title', 'walk the dog');
    await a.click('#add button');
    await b.waitForSelector('li span:text("walk the dog")');
    expect(await b.locator('li span').allTextContents()).toEqual(['buy milk', 'walk the dog']);

    await a.click('li:has(span:text("buy milk")) button');
    await b.waitForFunction('document.querySelectorAll("li").length === 1');
    expect(await b.locator('li span').allTextContents()).toEqual(['walk the dog']);

    // A third browser opened now loads the current list.
    const c = await open();
    await c.waitForSelector('li span:text("walk the dog")');
    expect(await c.locator('li span').allTextContents()).toEqual(['walk the dog']);
    for (const p of [a, b, c]) await p.context().close();
  });
});
