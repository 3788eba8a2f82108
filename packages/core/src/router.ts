import type { Resource } from './resource.js';

/** A request path resolved to its resource. */
export interface RouteMatch {
  resource: Resource;
  /** The path within the resource, '/' or '/abc/def'. */
  rest: string;
  /** `rest` split into decoded segments. */
  parts: string[];
}

/** Finds the resource owning a path: the longest resource path that is a prefix by whole segments. */
export class Router {
  private readonly byExactPath = new Map<string, Resource>();

  constructor(resources: readonly Resource[]) {
    for (const resource of resources) {
      const path = normalise(resource.path);
      if (this.byExactPath.has(path)) throw new Error(`two resources at ${path}`);
      this.byExactPath.set(path, resource);
    }
  }

  byPath(path: string): Resource | undefined {
    return this.byExactPath.get(normalise(path));
  }

  /** The match, or undefined when no resource owns the path (or its encoding is malformed). */
  match(pathname: string): RouteMatch | undefined {
    // Walk from the whole path towards its first segment: nested resources win over parents.
    let candidate = pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname;
    for (;;) {
      const resource = this.byExactPath.get(candidate.toLowerCase());
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
  return (withSlash.length > 1 && withSlash.endsWith('/') ? withSlash.slice(0, -1) : withSlash).toLowerCase();
}

function splitParts(rest: string): string[] | undefined {
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
