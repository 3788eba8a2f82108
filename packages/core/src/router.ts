import type { Resource } from './resource.js';

/** A request path resolved to its resource. */
export interface RouteMatch {
  resource: Resource;
  /** The path within the resource, '/' or '/abc/def'. */
  rest: string;
  /** `rest` split into decoded segments. */
  parts: string[];
}

/**
 * Finds the resource owning a path: the longest resource path that is a prefix by whole segments.
 * Paths match case-sensitively, as Deployd's router did: `/Apps/x.html` is public/Apps/x.html, not
 * the collection `apps`, and `/USERS/me` reaches no resource at all (so no guard keyed on a path's
 * spelling can be gone around by changing its case).
 */
export class Router {
  private readonly byExactPath = new Map<string, Resource>();
  /** By case-folded path: resources differing in case only are refused (rooms and folders fold case). */
  private readonly byFoldedPath = new Map<string, Resource>();
  /**
   * Whether every resource's path is one segment ('/todos', not '/api/todos' nor '/'): then the
   * first segment alone decides, and match() looks it up once instead of walking the path back.
   */
  private readonly oneSegment: boolean;

  constructor(resources: readonly Resource[]) {
    for (const resource of resources) {
      const path = normalise(resource.path);
      const folded = path.toLowerCase();
      const other = this.byFoldedPath.get(folded);
      if (other !== undefined) throw new Error(normalise(other.path) === path ? `two resources at ${path}` : `two resources at ${normalise(other.path)} and ${path} (paths differing in case only)`);
      this.byExactPath.set(path, resource);
      this.byFoldedPath.set(folded, resource);
    }
    this.oneSegment = [...this.byExactPath.keys()].every((path) => path.length > 1 && path.indexOf('/', 1) === -1);
  }

  /** The resource at a stored path (a session's user collection), in any case: at most one can match. */
  byPath(path: string): Resource | undefined {
    return this.byFoldedPath.get(normalise(path).toLowerCase());
  }

  /** The match, or undefined when no resource owns the path (or its encoding is malformed). */
  match(pathname: string): RouteMatch | undefined {
    if (this.oneSegment) {
      // The walk below would end at the first segment too: no other prefix can name a resource.
      const slash = pathname.indexOf('/', 1);
      const resource = this.byExactPath.get(slash === -1 ? pathname : pathname.slice(0, slash));
      if (resource === undefined) return undefined;
      const rest = slash === -1 ? '/' : pathname.slice(slash);
      const parts = splitParts(rest);
      return parts === undefined ? undefined : { resource, rest, parts };
    }
    // Walk from the whole path towards its first segment: nested resources win over parents.
    let candidate = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
    for (;;) {
      const resource = this.byExactPath.get(candidate);
      if (resource !== undefined) {
        const rest = pathname.slice(candidate.length) || '/';
        const parts = splitParts(rest);
        return parts === undefined ? undefined : { resource, rest, parts };
      }
      const slash = candidate.lastIndexOf('/');
      if (slash <= 0) return undefined;
      candidate = candidate.slice(0, slash);
    }
  }
}

function normalise(path: string): string {
  const withSlash = path.startsWith('/') ? path : `/${path}`;
  return withSlash.length > 1 && withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash;
}

function splitParts(rest: string): string[] | undefined {
  // One segment without escapes (`/<id>`: a GET by id): sliced, not split (String.split goes
  // through V8's runtime and makes an array of two; ~0.2 µs a request).
  if (rest.length > 1 && rest.indexOf('/', 1) === -1 && !rest.includes('%')) return [rest.slice(1)];
  const parts: string[] = [];
  for (const segment of rest.split('/')) {
    if (segment === '') continue;
    if (!segment.includes('%')) {
      parts.push(segment);
      continue;
    }
    try {
      parts.push(decodeURIComponent(segment));
    } catch {
      return undefined;
    }
  }
  return parts;
}
