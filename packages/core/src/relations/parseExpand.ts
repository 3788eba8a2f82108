import { SvcError } from '../errors.js';
import { isPlainObject } from '../query/parseQueryString.js';
import { MAX_EXPANDED_RELATIONS } from './relationSettings.js';

/** One relation to expand: the options of its read and the relations to expand in what it reads. */
export interface ExpandNode {
  fields?: Record<string, unknown>;
  sort?: Record<string, unknown>;
  /** Per object: at most this many related objects (many relations and back-relations). */
  limit?: number;
  children: Map<string, ExpandNode>;
}

/**
 * Reads `$expand` in its three forms: `"author,comments_via_post.author"` (the query-string form),
 * `["author", "comments_via_post.author"]`, and `{"author": {"$fields": {...}, "$limit": 5,
 * "$sort": {...}, "$expand": {...}}}` (or `true`). Refuses more levels than `maxDepth` and more
 * relations than {@link MAX_EXPANDED_RELATIONS}, so that no query asks for exponential work.
 */
export function parseExpand(value: unknown, maxDepth: number): Map<string, ExpandNode> {
  const root = new Map<string, ExpandNode>();
  const count = { n: 0 };
  if (typeof value === 'string') {
    for (const path of value.split(',')) addPath(root, path.trim(), maxDepth, count);
  } else if (Array.isArray(value)) {
    for (const path of value) {
      if (typeof path !== 'string') throw invalid('$expand must list relation names (strings)');
      addPath(root, path.trim(), maxDepth, count);
    }
  } else if (isPlainObject(value)) {
    addObject(root, value, 1, maxDepth, count);
  } else {
    throw invalid('$expand must be a list of relation names or an object');
  }
  return root;
}

function addPath(root: Map<string, ExpandNode>, path: string, maxDepth: number, count: { n: number }): void {
  if (path === '') return;
  const names = path.split('.');
  if (names.length > maxDepth) throw invalid(`$expand: ${path} goes ${names.length} levels deep; at most ${maxDepth}`);
  let level = root;
  for (const name of names) {
    checkName(name);
    let node = level.get(name);
    if (node === undefined) {
      node = { children: new Map() };
      level.set(name, node);
      if (++count.n > MAX_EXPANDED_RELATIONS) throw invalid(`$expand names more than ${MAX_EXPANDED_RELATIONS} relations`);
    }
    level = node.children;
  }
}

function addObject(level: Map<string, ExpandNode>, value: Record<string, unknown>, depth: number, maxDepth: number, count: { n: number }): void {
  for (const name of Object.keys(value)) {
    if (depth > maxDepth) throw invalid(`$expand: ${name} is more than ${maxDepth} levels deep`);
    checkName(name);
    if (++count.n > MAX_EXPANDED_RELATIONS) throw invalid(`$expand names more than ${MAX_EXPANDED_RELATIONS} relations`);
    const options = value[name];
    const node: ExpandNode = { children: new Map() };
    level.set(name, node);
    if (options === true || options === 1) continue;
    if (!isPlainObject(options)) throw invalid(`$expand: ${name} must be true or an object of $fields, $sort, $limit and $expand`);
    for (const key of Object.keys(options)) {
      const option = options[key];
      switch (key) {
        case '$fields':
        case '$sort':
          if (!isPlainObject(option)) throw invalid(`$expand: ${name}.${key} must be an object`);
          node[key === '$fields' ? 'fields' : 'sort'] = option;
          break;
        case '$limit':
          if (typeof option !== 'number' || !Number.isSafeInteger(option) || option < 0) throw invalid(`$expand: ${name}.$limit must be a non-negative integer`);
          node.limit = option;
          break;
        case '$expand':
          if (!isPlainObject(option)) throw invalid(`$expand: ${name}.$expand must be an object`);
          addObject(node.children, option, depth + 1, maxDepth, count);
          break;
        default:
          throw invalid(`$expand: ${name} has an unknown option ${key}`);
      }
    }
  }
}

function checkName(name: string): void {
  if (!/^[A-Za-z0-9_-]+$/.test(name)) throw invalid(`$expand: ${JSON.stringify(name)} is no relation name`);
}

function invalid(message: string): SvcError {
  return new SvcError('INVALID_QUERY', message);
}
