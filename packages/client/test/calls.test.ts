import { describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import { bodyCall, delCall, encodeQuery, execCall, getCall, joinPath, methodCall, sortArgs } from '../src/internal/calls.js';

const fn = (): void => {};

describe('call building (the spec client table)', () => {
  it.each([
    ['get()', [], '/todos', ''],
    ['get(fn)', [fn], '/todos', ''],
    ['get(id, fn)', ['abc', fn], '/todos/abc', ''],
    ['get(func, path)', ['f', 'p'], '/todos/f/p', ''],
    ['get(query)', [{ done: true, n: 3 }], '/todos', 'done=true&n=3'],
    ['get(func, path, query) with complex values as JSON', ['f', 7, { n: { $gt: 2 }, $sort: { t: 1 } }], '/todos/f/7', 'n=%7B%22%24gt%22%3A2%7D&%24sort=%7B%22t%22%3A1%7D'],
    ['get(query) drops undefined values', [{ a: undefined, b: 'x y' }], '/todos', 'b=x%20y'],
    ['get(query) with $expand and $total (issue 25)', [{ $expand: ['author', 'comments_via_post.author'], $total: true }], '/todos', '%24expand=%5B%22author%22%2C%22comments_via_post.author%22%5D&%24total=true'],
  ])('%s', (_name, args, path, query) => {
    expect(getCall('/todos', sortArgs(args))).toEqual({ method: 'GET', path, query });
  });

  it.each([
    ['post(body)', 'POST', [{ a: 1 }], false, '/r', '', { a: 1 }],
    ['post(path, body)', 'POST', ['p', { a: 1 }], false, '/r/p', '', { a: 1 }],
    ['post(path, query, body): query string', 'POST', ['p', { q: 1 }, { a: 1 }], false, '/r/p', 'q=1', { a: 1 }],
    ['put(path, query, body): query as q', 'PUT', ['p', { n: 1 }, { a: 1 }], false, '/r/p', 'q=%7B%22n%22%3A1%7D', { a: 1 }],
    ['collection put(object-with-id)', 'PUT', [{ id: 'x', a: 1 }], true, '/r/x', '', { id: 'x', a: 1 }],
    ['collection put(query-with-id, object)', 'PUT', [{ id: 'x', n: 2 }, { a: 1 }], true, '/r/x', 'q=%7B%22n%22%3A2%7D', { a: 1 }],
    ['collection put(id, object)', 'PUT', ['x', { a: 1 }], true, '/r/x', '', { a: 1 }],
    ['collection post(id, object)', 'POST', ['x', { a: 1 }], true, '/r/x', '', { a: 1 }],
    ['custom put(object-with-id) keeps the path', 'PUT', [{ id: 'x' }], false, '/r', '', { id: 'x' }],
  ])('%s', (_name, method, args, collection, path, query, body) => {
    expect(bodyCall(method as 'POST' | 'PUT', '/r', sortArgs(args), collection)).toEqual({ method, path, query, body });
  });

  it.each([
    ['del(id)', ['x'], true, '/r/x', ''],
    ['collection del(query-with-id)', [{ id: 'x' }], true, '/r/x', ''],
    ['collection del(query-with-id and more)', [{ id: 'x', done: true }], true, '/r/x', 'q=%7B%22done%22%3Atrue%7D'],
    ['del(path, query): q', ['p', { n: 1 }], false, '/r/p', 'q=%7B%22n%22%3A1%7D'],
  ])('%s', (_name, args, collection, path, query) => {
    expect(delCall('/r', sortArgs(args), collection)).toEqual({ method: 'DELETE', path, query });
  });

  it('exec(func, [path], [body]) posts to /<r>/<func>/<path>', () => {
    expect(execCall('/users', 'login', sortArgs([{ username: 'u' }]))).toEqual({ method: 'POST', path: '/users/login', body: { username: 'u' } });
    expect(execCall('/r', 'f', sortArgs(['p']))).toEqual({ method: 'POST', path: '/r/f/p' });
  });

  it("a custom type's method sends its HTTP method to /<r>/<func>/<path>", () => {
    expect(methodCall('/r', 'GET', 'count', sortArgs([{ a: 1 }]))).toEqual({ method: 'GET', path: '/r/count', query: 'a=1' });
    expect(methodCall('/r', 'POST', 'send', sortArgs(['p', { a: 1 }]))).toEqual({ method: 'POST', path: '/r/send/p', query: '', body: { a: 1 } });
  });

  it('paths: nested resources, the root, encoded segments', () => {
    expect(joinPath('/a/b', ['c d'])).toBe('/a/b/c%20d');
    expect(joinPath('/', [])).toBe('/');
    expect(joinPath('/', ['x'])).toBe('/x');
    expect(joinPath('/r', ['a/b'])).toBe('/r/a/b');
    expect(encodeQuery({ s: 'é&=' })).toBe('s=%C3%A9%26%3D');
  });
});

describe('resource names', () => {
  it("a resource named like the client's API does not hide it; svc('<name>') reaches it", () => {
    const svc = createClient('http://127.0.0.1:1', { resources: [{ path: '/on', kind: 'collection' }, { path: '/add-follower', kind: 'custom' }] });
    expect(typeof svc.on).toBe('function');
    expect(Object.keys(svc('on')).sort()).toEqual(['del', 'exec', 'get', 'post', 'put']);
    expect(Object.keys(svc).sort()).toEqual(['addfollower', 'ajax', 'close', 'off', 'offline', 'on', 'once', 'setBaseUrl', 'socketReady']);
  });
});
