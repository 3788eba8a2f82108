/**
 * The app and the generated table of requests of the read-side differential suite
 * (fast-paths-differential.test.ts): every kind of caller, rule, hidden property, On Get and query
 * option a GET meets, crossed, so that each shortcut of the read side meets requests it must
 * answer and requests it must leave to the plain path.
 */

const config = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'Collection', properties, ...extra });

/**
 * Properties every collection of objects has: an owner and a relation to a project. Only `privy`
 * (and users) have a private property: a shortcut is taken only where nothing is hidden.
 */
const COMMON = {
  title: { type: 'string' },
  n: { type: 'number' },
  done: { type: 'boolean' },
  owner: { type: 'string' },
  tags: { type: 'array' },
  project: { type: 'relation', collection: '/projects', onDelete: 'setNull' },
  label: { type: 'relation', collection: '/labels', onDelete: 'setNull' },
  marks: { type: 'relation', collection: '/labels', many: true, onDelete: 'setNull' },
};

/** Collection name -> what it is there to exercise. */
export const COLLECTIONS = {
  // No rule on reads, no script: the stored texts answer (A, D, G, H, I). delete: root only,
  // so that a DELETE the plain path refuses is one a shortcut taking it for a GET would answer.
  todos: 'open, no script',
  privy: 'a private property',
  owned: 'owner rules on list and read',
  notices: 'a read rule that lets anonymous visitors in and keeps a blocked user out',
  ruled: 'property read rules: one per object, one for nobody',
  marked: 'constant On Get (hide, constant values)',
  markedPrivy: 'constant On Get and a private property',
  personal: 'On Get reading me and query',
  heavy: 'On Get the static plans do not model (isolate)',
  named: 'On Get naming the properties it reads (columns)',
  cancels: 'On Get cancelling some objects',
  guarded: 'On BeforeRequest',
  projects: 'relation target with an owner rule, relation to users, back-relation',
  labels: 'relation target open to all',
  users: 'UserCollection: password hash, private property',
  members: 'UserCollection without a private property: the password hash alone',
  localGet: 'On Get a static plan answers, reading a variable of the request',
  ownedMarked: 'owner rules and a constant On Get',
} as const;

export type CollectionName = keyof typeof COLLECTIONS;

/** The app folder of the suite. */
export function differentialApp(): Record<string, string | object> {
  return {
    'app.json': { bodyLimit: 4096, publicCount: ['todos', 'owned', 'ruled'], scripts: { isolates: 1, timeoutMs: 60_000, requestWallMs: 120_000, requestCpuMs: 120_000 } },
    'resources/users/config.json': {
      type: 'UserCollection',
      properties: { name: { type: 'string' }, role: { type: 'string' }, diary: { type: 'string', private: true } },
    },
    'resources/members/config.json': { type: 'UserCollection', properties: { name: { type: 'string' } } },
    'resources/localGet/config.json': config(COMMON),
    // A static plan that is not constant: answered at once it would not see `isRoot` (a script process never runs it).
    'resources/localGet/get.js': "if (isRoot === false) hide('title');\n",
    'resources/ownedMarked/config.json': config(COMMON, { rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' } } }),
    'resources/ownedMarked/get.js': 'this.seen = true;\n',
    'resources/projects/config.json': config(
      { name: { type: 'string' }, owner: { type: 'string' }, lead: { type: 'relation', collection: '/users', onDelete: 'setNull' } },
      { rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' } } },
    ),
    'resources/labels/config.json': config({ text: { type: 'string' } }),
    'resources/todos/config.json': config(COMMON, { rules: { delete: false } }),
    'resources/privy/config.json': config({ ...COMMON, secret: { type: 'string', private: true } }),
    'resources/owned/config.json': config(COMMON, { rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' }, update: { owner: '@me.id' }, delete: { owner: '@me.id' } } }),
    'resources/notices/config.json': config(COMMON, { rules: { list: { $nor: [{ '@me.role': 'blocked' }] }, read: { $nor: [{ '@me.role': 'blocked' }] } } }),
    'resources/ruled/config.json': config({ ...COMMON, score: { type: 'number', read: { owner: '@me.id' } }, note: { type: 'string', read: false } }),
    'resources/marked/config.json': config(COMMON),
    'resources/marked/get.js': "this.seen = true;\nthis.label = 'fixed';\nhide('tags');\n",
    // The same with a private property: never answered at once.
    'resources/markedPrivy/config.json': config({ ...COMMON, secret: { type: 'string', private: true } }),
    'resources/markedPrivy/get.js': "this.seen = true;\nhide('tags');\n",
    'resources/personal/config.json': config(COMMON),
    'resources/personal/get.js': 'if (me) this.viewer = me.name;\nif (query.flag) this.flag = query.flag;\nthis.rootFlag = isRoot;\n',
    'resources/heavy/config.json': config(COMMON),
    'resources/heavy/get.js': 'var count = 0;\nfor (var key in this) count++;\nthis.keys = count;\n',
    'resources/named/config.json': config(COMMON),
    'resources/named/get.js': "this.upper = typeof this.title === 'string' ? this.title.toUpperCase() : null;\ndelete this.n;\n",
    'resources/cancels/config.json': config(COMMON),
    'resources/cancels/get.js': "if (this.n > 3) cancel('too big', 403);\nthis.ok = true;\n",
    'resources/guarded/config.json': config(COMMON),
    'resources/guarded/beforerequest.js': "if (event === 'GET' && !me) cancel('log in first', 401);\nif (query.deny) cancel('denied', 403);\n",
    // Internal requests: GET /via/<collection>[/<id>]?<query> asks svc.<collection>.get the same.
    'resources/via/config.json': { type: 'Event' },
    'resources/via/get.js':
      'var api = svc[parts[0]];\nvar args = parts.slice(1);\nargs.push(query);\napi.get.apply(api, args).then(function (r) { setResult({ ok: r }); }, function (e) { setResult({ failed: e }); });\n',
  };
}

/**
 * Who sends a request: anonymous (a returning visitor's signed id), a new visitor (no cookie, no
 * token: a new id each time, in Set-Cookie), two users (one blocked by `notices`), root, or a
 * script (internal).
 */
export type Caller = 'anon' | 'new' | 'ann' | 'bob' | 'root' | 'internal';
export const CALLERS: readonly Caller[] = ['anon', 'new', 'ann', 'bob', 'root', 'internal'];

/** One request of the table. */
export interface TableRequest {
  caller: Caller;
  method: string;
  path: string;
  body?: string;
  /** Headers beside the caller's own (a conditional GET, a root key sent with a visitor's cookie). */
  headers?: Record<string, string>;
}

/** The ids the table names, by label (filled once the seeds are written). */
export type Ids = Record<string, string>;

const q = (query: Record<string, unknown>): string => `?${encodeURIComponent(JSON.stringify(query))}`;

/** Queries of a list, each on every list collection, for every caller. */
function listQueries(name: CollectionName): string[] {
  const out = [
    '',
    q({ done: false }),
    q({ $sort: { n: -1 } }),
    q({ $sort: { n: 1 }, $limit: 2, $skip: 1 }),
    q({ $skip: 2 }),
    q({ $fields: { title: 1, n: 1 } }),
    q({ $fields: { tags: 0 } }),
    q({ $total: true, $limit: 2 }),
    q({ done: false, $sort: { n: 1 }, $limit: 20, $expand: ['project'] }),
    q({ $expand: ['project'] }),
    q({ $expand: { project: { $expand: { lead: true } } } }),
    q({ $expand: { project: { $fields: { name: 1 } } } }),
    q({ $expand: ['label'] }),
    q({ $expand: ['label', 'project'] }),
    q({ $expand: ['marks'] }),
    // The same list expanded with other options per level (a kept answer is one per list and key).
    q({ $expand: { marks: { $limit: 1 } } }),
    q({ $expand: { marks: { $sort: { text: -1 } } } }),
    q({ done: false, $sort: { n: -1 }, $limit: 3, $expand: ['label'] }),
    q({ 'project.name': 'alpha' }),
    '?flag=yes',
    '?deny=1',
    q({ $skipEvents: true }),
    q({ n: { $gt: 1 }, $sort: { title: -1 } }),
  ];
  if (name === 'privy' || name === 'markedPrivy') out.push(q({ $fields: { secret: 0 } }), q({ secret: 'ann-secret' }), q({ $sort: { secret: 1 } }));
  if (name === 'ruled') out.push(q({ $sort: { score: 1 } }), q({ score: { $gt: 0 } }), q({ $fields: { note: 1 } }));
  if (name === 'projects') out.push(q({ $expand: ['lead'] }), q({ $expand: { todos_via_project: { $sort: { n: 1 }, $limit: 2 } } }), q({ $expand: { todos_via_project: { $sort: { n: 1 }, $limit: 1 } } }), q({ $expand: { todos_via_project: { $expand: ['project'] } } }));
  if (name === 'users') out.push(q({ $fields: { diary: 1 } }), q({ password: 'x' }), q({ $sort: { name: 1 } }));
  return out;
}

/** Requests of one object, for the given id label. */
function objectQueries(name: CollectionName): string[] {
  const out = ['', q({ $fields: { title: 1 } }), q({ $fields: { secret: 1, note: 1, score: 1 } }), q({ $expand: ['project'] }), q({ $expand: { project: { $expand: ['lead'] } } }), '?flag=yes', q({ $skipEvents: true })];
  if (name === 'projects') out.push(q({ $expand: ['lead', 'todos_via_project'] }));
  return out;
}

/** The labels of the objects of a collection the table asks for by id (`missing` names none). */
export function idLabels(name: CollectionName): string[] {
  if (name === 'users') return ['ann', 'bob', 'missing'];
  if (name === 'members') return ['member', 'missing'];
  if (name === 'projects') return ['alpha', 'beta', 'missing'];
  if (name === 'labels') return ['red', 'blue', 'missing'];
  return [`${name}:ann`, `${name}:bob`, `${name}:none`, `${name}:big`, 'missing'];
}

/** What a kept answer may have gone stale on after writes: the lists and objects as they are, and expanded. */
const AFTER_WRITES_LIST = new Set(['', q({ done: false }), q({ $expand: ['project'] }), q({ $expand: ['label'] }), q({ $expand: ['marks'] }), q({ $expand: ['label', 'project'] }), q({ $expand: { project: { $expand: { lead: true } } } }), q({ done: false, $sort: { n: 1 }, $limit: 20, $expand: ['project'] }), q({ $total: true, $limit: 2 })]);

/**
 * The table: every caller, every collection, lists, objects, counts, and the odd requests around
 * them (`full`); after writes (`full` false), the requests whose answers a shortcut may keep.
 * Scripts' own requests (internal) never get texts: a few of theirs suffice.
 */
export function requestTable(ids: Ids, full = true): TableRequest[] {
  const out: TableRequest[] = [];
  for (const caller of CALLERS) {
    for (const name of Object.keys(COLLECTIONS) as CollectionName[]) {
      const at = (path: string): string => (caller === 'internal' ? `/via${path}` : path);
      const few = !full || caller === 'internal';
      // A new visitor reads as anonymous: the lists kept after writes suffice for it (its objects get every option).
      for (const query of listQueries(name)) if ((!few && caller !== 'new') || AFTER_WRITES_LIST.has(query)) out.push({ caller, method: 'GET', path: at(`/${name}${query}`) });
      idLabels(name).forEach((label, i) => {
        const id = ids[label] ?? 'no-such-object';
        // Every option on the first two objects; the others by themselves and expanded.
        for (const query of i < 2 && !few ? objectQueries(name) : ['', q({ $expand: ['project'] })]) out.push({ caller, method: 'GET', path: at(`/${name}/${id}${query}`) });
        if (few || caller === 'bob' || (i > 0 && label !== 'missing')) return;
        // What the server's answer at once must leave alone: HEAD, a longer path, a body.
        out.push({ caller, method: 'HEAD', path: `/${name}/${id}` });
        out.push({ caller, method: 'GET', path: `/${name}/${id}/more` });
        out.push({ caller, method: 'GET', path: `/${name}/${id}`, body: 'x'.repeat(5000) });
        out.push({ caller, method: 'GET', path: `/${name}/${id}`, body: '{}' });
        // A conditional GET (a 304 when the object exists), and a visitor's cookie with a root key.
        out.push({ caller, method: 'GET', path: `/${name}/${id}`, headers: { 'if-none-match': '*' } });
        // (The new visitor's: a root key alone, as the CLI and scripts send it.)
        if (caller === 'anon' || caller === 'new') out.push({ caller, method: 'GET', path: `/${name}/${id}`, headers: { 'svc-ssh-key': 'development' } });
      });
      if (few) continue;
      out.push({ caller, method: 'GET', path: `/${name}/count` });
      out.push({ caller, method: 'GET', path: `/${name}/count${q({ done: false })}` });
    }
    if (caller === 'internal' || !full) continue;
    out.push({ caller, method: 'GET', path: '/users/me' }, { caller, method: 'GET', path: `/users/me${q({ $fields: { diary: 1 } })}` });
    // Writes every server refuses (a shortcut taking them for a GET would answer the object).
    if (caller !== 'root') out.push({ caller, method: 'DELETE', path: `/todos/${ids['todos:bob'] ?? 'no-such-object'}` });
    if (caller === 'anon' || caller === 'ann') out.push({ caller, method: 'DELETE', path: `/owned/${ids['owned:bob'] ?? 'no-such-object'}` });
  }
  return out;
}

/** The four things a row of the table varies, each a value of its own: who, where, which object, what is asked. */
export interface RowDimensions {
  caller: Caller;
  collection: string;
  /** `list`, `count`, `me`, or which object by id: its place in idLabels (`object 0`...) or `missing`. */
  target: string;
  /** The rest: method, what follows the id, the query, a body, extra headers. */
  option: string;
}

/** Says what a row varies (see RowDimensions); ids are the labels' ids the table was made with. */
export function rowDimensions(row: TableRequest, ids: Ids): RowDimensions {
  const labelOf = new Map(Object.entries(ids).map(([label, id]) => [id, label]));
  const full = row.caller === 'internal' ? row.path.slice('/via'.length) : row.path;
  const at = full.indexOf('?');
  const [, collection = '', second, ...rest] = (at === -1 ? full : full.slice(0, at)).split('/');
  let target = 'list';
  if (second === 'count' || second === 'me') target = second;
  else if (second !== undefined) {
    const place = idLabels(collection as CollectionName).indexOf(labelOf.get(second) ?? 'missing');
    target = labelOf.has(second) ? `object ${place}` : 'missing';
  }
  const option = `${row.method} ${rest.map((part) => `/${part}`).join('')}${at === -1 ? '' : full.slice(at)}${row.body === undefined ? '' : ` body ${row.body.length}`}${row.headers === undefined ? '' : ` ${JSON.stringify(row.headers)}`}`;
  return { caller: row.caller, collection, target, option };
}

const DIMENSIONS = ['caller', 'collection', 'target', 'option'] as const;

/** Every pair of values of two dimensions that the rows have, as `dimension=value|dimension=value` strings. */
export function valuePairs(rows: readonly TableRequest[], ids: Ids): Set<string> {
  const pairs = new Set<string>();
  for (const row of rows) {
    const d = rowDimensions(row, ids);
    DIMENSIONS.forEach((a, i) => {
      for (const b of DIMENSIONS.slice(i + 1)) pairs.add(`${a}=${d[a]}|${b}=${d[b]}`);
    });
  }
  return pairs;
}

/**
 * A deterministic part of a table that still has every pair of values of any two dimensions the
 * whole table has (RowDimensions: caller x collection, caller x option, collection x option,
 * target x each...), so also every value of each: each request (collection, object, option) once,
 * from one of the callers that send it in turn (the collection's place plus the request's place in
 * it, so that one option meets each caller along the collections and one collection each caller
 * along its options), then, for any pair still missing, the first row of the table that has it.
 */
export function pairwiseSubset(table: readonly TableRequest[], ids: Ids): TableRequest[] {
  const requests = new Map<string, TableRequest[]>();
  for (const row of table) {
    const d = rowDimensions(row, ids);
    const key = `${d.collection} ${d.target} ${d.option}`;
    const callers = requests.get(key);
    if (callers === undefined) requests.set(key, [row]);
    else callers.push(row);
  }
  const names = Object.keys(COLLECTIONS);
  const nth = new Map<string, number>();
  const chosen = new Set<TableRequest>();
  for (const rows of requests.values()) {
    const collection = rowDimensions(rows[0] as TableRequest, ids).collection;
    const i = nth.get(collection) ?? 0;
    nth.set(collection, i + 1);
    chosen.add(rows[(names.indexOf(collection) + i) % rows.length] as TableRequest);
  }
  const have = valuePairs([...chosen], ids);
  for (const row of table) {
    if (chosen.has(row)) continue;
    const pairs = valuePairs([row], ids);
    if ([...pairs].every((pair) => have.has(pair))) continue;
    chosen.add(row);
    for (const pair of pairs) have.add(pair);
  }
  return table.filter((row) => chosen.has(row));
}
