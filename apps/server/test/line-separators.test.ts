import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { writeApp } from './helpers/app.js';

// Issue 38 item 2: anyone may POST `{"title": "a\u2028b"}` where creates are open; the embedded
// store wrote it raw and its loader split lines on U+2028, so after the next start the collection
// answered 500 "embedded store: ... is corrupt". Through HTTP, across a restart.

let dir: string | undefined;
let app: RunningApp | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
});

const start = (appDir: string): Promise<RunningApp> => startApp({ appDir, port: 0, host: '127.0.0.1', env: 'development', logger: silentLogger });

async function call(method: string, url: string, body?: unknown, cookie?: string): Promise<{ status: number; body: unknown; sid: string | undefined }> {
  const res = await fetch(url, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(cookie ? { cookie } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const sid = res.headers.getSetCookie().find((c) => c.startsWith('sid='));
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined, sid: sid?.slice(0, sid.indexOf(';')) };
}

describe.each(['files', 'sqlite'])('U+2028, U+2029 and NEL posted by a client (embedded engine %s)', (engine) => {
  it('are stored and answered intact after a restart (collections, users, sessions)', async () => {
    dir = await writeApp({
      'app.json': { embeddedStore: { engine } },
      'resources/posts/config.json': { type: 'Collection', properties: { title: { type: 'string' }, tags: { type: 'array' } } },
      'resources/users/config.json': { type: 'UserCollection', properties: { name: { type: 'string' } } },
    });
    const odd = 'a\u2028b\u2029c\u0085d';
    app = await start(dir);
    const created = await call('POST', `${app.url}/posts`, { title: odd, tags: [odd] });
    expect(created.status).toBe(200);
    const id = (created.body as { id: string }).id;
    expect((await call('POST', `${app.url}/users`, { username: `ann${odd}`, password: 'secret-pw-1', name: odd })).status).toBe(200);
    const login = await call('POST', `${app.url}/users/login`, { username: `ann${odd}`, password: 'secret-pw-1' });
    expect(login.status).toBe(200);
    await app.close();
    app = await start(dir);
    const list = await call('GET', `${app.url}/posts`);
    expect(list).toMatchObject({ status: 200, body: [{ id, title: odd, tags: [odd] }] });
    expect(await call('GET', `${app.url}/posts/${id}`)).toMatchObject({ status: 200, body: { id, title: odd } });
    expect(await call('GET', `${app.url}/users/me`, undefined, login.sid)).toMatchObject({ status: 200, body: { username: `ann${odd}`, name: odd } });
    expect((await call('POST', `${app.url}/users/login`, { username: `ann${odd}`, password: 'secret-pw-1' })).status).toBe(200);
  });
});
