import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 24: the dashboard's Rules tab. Rules are saved through the same config path as properties
// (the server's load-time check answers), and "try as this user on this object" asks the live
// collection's explainAccess for a request of that user. Root only, as the whole dashboard API.

const KEY = 'c0ffee'.repeat(11);
const ROOT = { 'svc-ssh-key': 'development' };

const FILES = {
  'resources/users/config.json': { type: 'UserCollection', properties: { role: { type: 'string' } } },
  'resources/posts/config.json': {
    type: 'Collection',
    properties: { owner: { type: 'string', index: true }, title: { type: 'string' }, secret: { type: 'string' } },
    rules: { create: { '@me.id': { $exists: true } }, update: { owner: '@me.id' }, delete: { owner: '@me.id' } },
  },
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

function rawPost(url: string, path: string, body: unknown, headers: Record<string, string>): Promise<number> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(text);
  });
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
    const res = await h.request('PUT', '/dashboard/api/resources/posts', { config }, ROOT);
    expect(res.status).toBe(200);
    expect(JSON.parse(await readFile(join(h.dir, 'resources/posts/config.json'), 'utf8'))).toEqual(config);
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
    expect(await rawPost(dev.url, EXPLAIN, { object: 'x' }, { ...ROOT, host: 'evil.example:2403' })).toBe(403);
    // Scripts cannot reach the dashboard (internal requests answer 404), nor can GET.
    expect((await dev.request('GET', EXPLAIN, undefined, ROOT)).status).toBe(404);
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
