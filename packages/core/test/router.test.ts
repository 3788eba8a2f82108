import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Resource } from '../src/resource.js';
import { Router } from '../src/router.js';

// The router's one-lookup path (every resource one segment deep) must answer what the walk from
// the whole path back to its first segment answers. The same resources plus a nested one that no
// generated path reaches make a router that walks: both must match every path alike.

const resource = (path: string): Resource => ({ path }) as unknown as Resource;
const flat = ['/todos', '/users', '/a b', '/Ünï'].map(resource);
const shown = (router: Router, path: string) => {
  const m = router.match(path);
  return m === undefined ? undefined : { path: m.resource.path, rest: m.rest, parts: m.parts };
};

describe('Router.match', () => {
  const oneSegment = new Router(flat);
  const walking = new Router([...flat, resource('/zz/nested')]);

  it('answers the same with one lookup as by walking the path', () => {
    const segment = fc.constantFrom('todos', 'Todos', 'users', 'a b', 'Ünï', '', 'x', 'a%20b', '%E0%A4%A', '..', 'todos.json', 'me');
    const path = fc.tuple(fc.constantFrom('/', '', '//', 'http://h/'), fc.array(segment, { maxLength: 5 }), fc.constantFrom('', '/', '//')).map(([lead, segments, tail]) => `${lead}${segments.join('/')}${tail}`);
    fc.assert(
      fc.property(path, (p) => {
        expect(shown(oneSegment, p)).toEqual(shown(walking, p));
      }),
      { numRuns: 3000 },
    );
  });

  it("splits the rest into its decoded non-empty segments, as split('/') and decodeURIComponent do", () => {
    const segment = fc.oneof(fc.constantFrom('', 'x', 'a%20b', '%E0%A4%A', '%2F', '..', '7f23a5e5431fad05', 'Ünï'), fc.string({ maxLength: 20 }));
    const rest = fc.tuple(fc.array(segment, { maxLength: 4 }), fc.constantFrom('', '/')).map(([segments, tail]) => `/${segments.join('/')}${tail}`);
    const plain = (r: string): string[] | undefined => {
      try {
        return r
          .split('/')
          .filter((s) => s !== '')
          .map((s) => decodeURIComponent(s));
      } catch {
        return undefined;
      }
    };
    fc.assert(
      fc.property(rest, (r) => {
        const m = oneSegment.match(`/todos${r}`);
        expect(m === undefined ? undefined : m.parts).toEqual(plain(r));
      }),
      { numRuns: 3000 },
    );
  });

  it('examples: the rest, its parts decoded, a malformed encoding, case', () => {
    expect(shown(oneSegment, '/todos')).toEqual({ path: '/todos', rest: '/', parts: [] });
    expect(shown(oneSegment, '/todos/')).toEqual({ path: '/todos', rest: '/', parts: [] });
    expect(shown(oneSegment, '/todos/a%20b/c/')).toEqual({ path: '/todos', rest: '/a%20b/c/', parts: ['a b', 'c'] });
    expect(shown(oneSegment, '/todos/%E0%A4%A')).toBeUndefined();
    expect(shown(oneSegment, '/Todos/1')).toBeUndefined();
    expect(shown(oneSegment, '/')).toBeUndefined();
    expect(shown(walking, '/zz/nested/1')).toEqual({ path: '/zz/nested', rest: '/1', parts: ['1'] });
    // A resource at / owns / alone (the walk stops before it), so it does not take the one-lookup path.
    const withRoot = new Router([resource('/'), ...flat]);
    expect(shown(withRoot, '/')).toEqual({ path: '/', rest: '/', parts: [] });
    expect(shown(withRoot, '/other/1')).toBeUndefined();
    expect(shown(withRoot, '/todos/1')).toEqual({ path: '/todos', rest: '/1', parts: ['1'] });
  });
});
