import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { runApp } from '../apps/server/test/helpers/app.js';
import type { AppHandle } from '../apps/server/test/helpers/app.js';

// A property test over the HTTP surface (issue 11): >= 10,000 requests over methods, paths,
// headers, query strings and bodies (deep nesting, huge numbers, __proto__/constructor keys,
// invalid UTF-8). Whatever comes in: no 5xx (the app's scripts throw nothing), always a JSON
// error body for 4xx, the server keeps answering, no prototype of this process (the server runs
// in it) is polluted, and the canary objects are unchanged. fast-check prints the seed and the
// shrunk request on failure; SVC_FUZZ_SEED replays one.

const RUNS = Number(process.env.SVC_FUZZ_RUNS ?? 10_000);
const files = {
  'app.json': { passwordCost: 4, loginRateLimit: { max: 1_000_000, maxPerAddress: 1_000_000 } },
  'resources/users/config.json': { type: 'UserCollection', properties: { name: { type: 'string' } } },
  'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' }, n: { type: 'number' }, done: { type: 'boolean' }, tags: { type: 'array' }, meta: { type: 'object' } } },
  'resources/todos/validate.js': "if (this.title === 'reject') error('title', 'rejected');",
  'resources/todos/get.js': 'if (this.meta && this.meta.hidden) hide("meta");',
  'resources/nested/deep/config.json': { type: 'Collection', properties: { v: { type: 'string' } } },
};

let h: AppHandle;
let canary: Record<string, unknown>;
const protoKeysBefore = Object.getOwnPropertyNames(Object.prototype).sort();

beforeAll(async () => {
  h = await runApp(files, { env: 'production' });
  canary = (await h.request('POST', '/todos', { title: 'canary', n: 42, tags: ['a'], meta: { k: 1 } })).body as Record<string, unknown>;
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const key = fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'title', 'n', 'id', '$where', '$gt', '$inc', '$push', '$sort', '$limit', '$fields', '$skipEvents', '$or', '_method', 'q'), fc.string({ maxLength: 8 }));
const leaf = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER, 0, -0, true, false, null),
  fc.constantFrom('1e999', '99999999999999999999999999', 'NaN', '-Infinity'),
);
const { tree } = fc.letrec((tie) => ({
  tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('tree'), { maxLength: 4 }), fc.dictionary(key, tie('tree'), { maxKeys: 4 })),
}));
/** Nesting far past every depth limit, built as text. */
const deep = fc.integer({ min: 50, max: 5000 }).chain((n) => fc.constantFrom(`${'['.repeat(n)}${']'.repeat(n)}`, `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`, `{"title":${'['.repeat(n)}${']'.repeat(n)}}`));
const bodyText = fc.oneof(
  tree.map((v) => JSON.stringify(v) ?? 'null'),
  deep,
  fc.string({ maxLength: 200 }),
  fc.constantFrom('{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}', '{"title":"x","__proto__":{"isAdmin":true}}', '{', '{"a":1e999999}', 'title=x&n=5&__proto__[polluted]=1'),
);
const invalidUtf8 = fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xc3, 0x28, 0xff, ...bytes]), Buffer.from('"}')]));
const path = fc.oneof(
  fc.constantFrom('/todos', '/todos/count', '/users', '/users/login', '/users/logout', '/users/me', '/nested/deep', '/nested', '/', '/svc.js', '/nope', '/todos/../users', '/%2e%2e/%2e%2e/etc/passwd', '/todos/%00', '/todos/' + 'x'.repeat(3000)),
  fc.string({ maxLength: 30 }).map((s) => `/todos/${encodeURIComponent(s)}`),
  fc.string({ maxLength: 30 }).map((s) => `/${s.replace(/[?#]/g, '')}`),
);
const query = fc.oneof(
  fc.constant(''),
  tree.map((v) => `?${encodeURIComponent(JSON.stringify(v) ?? '')}`),
  deep.map((d) => `?${encodeURIComponent(d)}`),
  fc.dictionary(key, fc.string({ maxLength: 10 }), { maxKeys: 4 }).map((o) => `?${new URLSearchParams(o as Record<string, string>).toString()}`),
  fc.constantFrom('?{"title":{"$regex":"^(a+)+$"}}', '?{"$where":"sleep(1000)"}', '?q=%7B%22%24or%22%3A1%7D', '?%', '?title=%E0%A4%A', '?{"n":{"$gt":1e999}}', '?{"$limit":-1,"$skip":1e20}', '?{"$fields":{"password":1}}'),
);
const contentType = fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-8', 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x', 'application/json; charset=latin1');
const request = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
  path,
  query,
  contentType,
  body: fc.option(fc.oneof(bodyText.map((t) => Buffer.from(t)), invalidUtf8), { nil: undefined }),
  headers: fc.dictionary(fc.constantFrom('origin', 'cookie', 'svc-ssh-key', 'x-forwarded-proto', 'accept', 'content-length-x', 'authorization'), fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')), { maxKeys: 3 }),
});

describe('HTTP surface under arbitrary requests', () => {
  it(`${RUNS} requests: no 5xx, JSON errors, no pollution, canary intact`, async () => {
    const seed = process.env.SVC_FUZZ_SEED ? Number(process.env.SVC_FUZZ_SEED) : undefined;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = { ...r.headers };
        if (r.contentType) headers['content-type'] = r.contentType;
        const withBody = r.body !== undefined && r.method !== 'GET' && r.method !== 'HEAD';
        const res = await fetch(h.url + r.path + r.query, { method: r.method, headers, body: withBody ? r.body : undefined, redirect: 'manual' });
        const text = await res.text();
        if (res.status >= 500) throw new Error(`status ${res.status}: ${text.slice(0, 300)}`);
        // 431: Node's HTTP parser refuses headers (the URL included) over 16 KB before svc sees them.
        if (res.status >= 400 && r.method !== 'HEAD' && res.status !== 431) {
          const parsed = JSON.parse(text) as { status?: unknown };
          if (parsed.status !== res.status) throw new Error(`error body without its status: ${text.slice(0, 200)}`);
        }
        if (({} as Record<string, unknown>).polluted !== undefined || ({} as Record<string, unknown>).isAdmin !== undefined) throw new Error('Object.prototype polluted');
      }),
      { numRuns: RUNS, ...(seed !== undefined ? { seed } : {}), verbose: 1 },
    );
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(protoKeysBefore);
    const after = await h.request('GET', `/todos/${String(canary.id)}`);
    expect(after).toMatchObject({ status: 200, body: canary });
  }, 600_000);
});
