// The benchmark table. One row per scenario: a request, the variants (see variants.js) measured
// side by side for it, and the reference variant the ratios are taken against.
//
// Fields:
//   id         short name for --only and the results file
//   suite      group in RESULTS.md ('http' now; later e.g. 'scripts' with event-script apps as
//              extra variants, 'realtime' with its own driver)
//   driver     load generator in lib/drivers/ ('http': autocannon, 50 connections, no pipelining)
//   title      what the table shows
//   method, path(state), body, headers   the request; state = { ids } of the seeded server
//   seed       number of todos POSTed to a stateful variant before measuring
//   variants   variant ids in their base order (the harness rotates the order every round)
//   reference  the variant the ratios divide by (the ceiling: same bytes, no work)
//   compare    optional extra [variant, against] pairs: their same-round req/s and CPU ratios, and
//              the difference in CPU µs per request (what an event script adds, say)
//   check(res, state)   sanity check of one response before measuring: a message when wrong
//
// The harness seeds a stateful variant through POST /todos with {"title":"todo NNNN","done":bool,"n":k}
// (k: 0..999, each once, in a shuffled order).

const SEED = 1000;
// `n` (indexed in the bench apps) is what the filtered, sorted list sorts by (the peers' scenario b).
const seedBody = (i) => JSON.stringify({ title: `todo ${String(i).padStart(4, '0')}`, done: i % 2 === 0, n: (i * 7919) % SEED });

const parse = (res) => {
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch {
    return undefined;
  }
};

export const seed = { count: SEED, path: '/todos', body: seedBody };

const getOne = {
  method: 'GET',
  path: (state) => `/todos/${state.ids[Math.floor(state.ids.length / 2)]}`,
  seed: SEED,
  check: (res, state) => {
    const obj = parse(res);
    const id = state.ids[Math.floor(state.ids.length / 2)];
    if (!obj || obj.id !== id) return `expected the todo ${id}, got ${res.body.toString('utf8').slice(0, 200)}`;
    return undefined;
  },
};
const getAll = {
  method: 'GET',
  path: () => '/todos',
  seed: SEED,
  check: (res) => {
    const list = parse(res);
    if (!Array.isArray(list) || list.length !== SEED) {
      return `expected an array of ${SEED} todos, got ${Array.isArray(list) ? `${list.length} items` : res.body.toString('utf8').slice(0, 200)}`;
    }
    return undefined;
  },
};

// With BENCH_OTHER=<a built checkout of another commit> (variants.js), each scenario also runs that
// build's svc variants, compared with this checkout's in the same rounds (the 5% regression check
// of issue 39: `BENCH_OTHER=/tmp/svc-b68f22b node bench/run.js`). Without it they are skipped.
const OTHER_PAIRS = [['svc', 'svc-other'], ['svc-get', 'svc-get-other'], ['svc-get-isolate', 'svc-get-isolate-other'], ['svc-get-dyn', 'svc-get-dyn-other']];

/**
 * A scenario's request headers, with the session cookie unless the scenario is `noCookie` (each
 * request a new visitor: an API client without a cookie jar, a first visit).
 */
export const headersOf = (scenario, cookie) => ({ ...(scenario.headers ?? {}), ...(cookie && !scenario.noCookie ? { cookie } : {}) });

export const scenarios = [
  {
    id: 'get-one',
    suite: 'http',
    driver: 'http',
    title: 'GET /todos/<id>',
    method: 'GET',
    path: (state) => `/todos/${state.ids[Math.floor(state.ids.length / 2)]}`,
    seed: SEED,
    variants: ['bare', 'hand', 'svc', 'svc-other'],
    reference: 'bare',
    // Issue 14's aims are against the hand-written floor: its ratio is printed too.
    compare: [['svc', 'hand'], ['svc', 'svc-other']],
    check: (res, state) => {
      const obj = parse(res);
      const id = state.ids[Math.floor(state.ids.length / 2)];
      if (!obj || obj.id !== id) return `expected the todo ${id}, got ${res.body.toString('utf8').slice(0, 200)}`;
      return undefined;
    },
  },
  {
    // The same GET without a cookie: each request a new visitor, answered with a new session id
    // in Set-Cookie (an API client without a cookie jar, a first visit).
    id: 'get-one-new-visitor',
    suite: 'http',
    driver: 'http',
    title: 'GET /todos/<id>, no cookie (a new visitor each time)',
    method: 'GET',
    noCookie: true,
    path: (state) => `/todos/${state.ids[Math.floor(state.ids.length / 2)]}`,
    seed: SEED,
    variants: ['bare', 'svc', 'svc-other'],
    reference: 'bare',
    compare: [['svc', 'svc-other']],
    check: (res, state) => {
      const obj = parse(res);
      const id = state.ids[Math.floor(state.ids.length / 2)];
      // (bare node:http answers the captured bytes without a cookie: only the body is checked.)
      if (!obj || obj.id !== id) return `expected the todo ${id}, got ${res.body.toString('utf8').slice(0, 200)}`;
      return undefined;
    },
  },
  {
    id: 'get-all',
    suite: 'http',
    driver: 'http',
    title: 'GET /todos (1,000 objects)',
    method: 'GET',
    path: () => '/todos',
    seed: SEED,
    variants: ['bare', 'hand', 'svc', 'svc-other'],
    reference: 'bare',
    // Issue 14's aims are against the hand-written floor: its ratio is printed too.
    compare: [['svc', 'hand'], ['svc', 'svc-other']],
    check: (res) => {
      const list = parse(res);
      if (!Array.isArray(list) || list.length !== SEED) {
        return `expected an array of ${SEED} todos, got ${Array.isArray(list) ? `${list.length} items` : res.body.toString('utf8').slice(0, 200)}`;
      }
      return undefined;
    },
  },
  {
    id: 'post',
    suite: 'http',
    driver: 'http',
    title: 'POST /todos',
    method: 'POST',
    path: () => '/todos',
    body: '{"title":"x","done":false}',
    headers: { 'content-type': 'application/json' },
    seed: SEED,
    variants: ['bare', 'hand', 'svc', 'svc-other'],
    reference: 'bare',
    // Issue 14's aims are against the hand-written floor: its ratio is printed too.
    compare: [['svc', 'hand'], ['svc', 'svc-other']],
    check: (res) => {
      const obj = parse(res);
      if (!obj || obj.title !== 'x' || obj.done !== false || typeof obj.id !== 'string') {
        return `expected the created todo, got ${res.body.toString('utf8').slice(0, 200)}`;
      }
      return undefined;
    },
  },
  // Issue 14: a page of a filtered, sorted list (the peers' scenario b): svc's indexed sort beside
  // the hand-written server filtering and sorting its in-memory array for each request (the
  // ceiling an in-memory adapter such as Feathers' approaches).
  {
    id: 'get-filter-sort',
    suite: 'http',
    driver: 'http',
    title: 'GET /todos done=false, sort n, limit 100',
    method: 'GET',
    path: () => `/todos?${encodeURIComponent(JSON.stringify({ done: false, $sort: { n: 1 }, $limit: 100 }))}`,
    seed: SEED,
    variants: ['bare', 'hand', 'svc', 'svc-other'],
    reference: 'bare',
    compare: [['svc', 'hand'], ['svc', 'svc-other']],
    check: (res) => {
      const list = parse(res);
      if (!Array.isArray(list) || list.length !== 100) return `expected 100 todos, got ${res.body.toString('utf8').slice(0, 200)}`;
      for (let i = 0; i < list.length; i++) {
        if (list[i].done !== false) return `todo ${i} is done`;
        if (i > 0 && list[i - 1].n > list[i].n) return `not sorted by n at ${i}`;
      }
      return undefined;
    },
  },
  // Event scripts (issue 4): the same GETs with a trivial On Get, beside svc without a script and
  // the bare server (svc's bytes, without "seen").
  {
    id: 'get-one-script',
    suite: 'scripts',
    driver: 'http',
    title: 'GET /todos/<id>, trivial On Get',
    ...getOne,
    variants: ['bare', 'svc', 'svc-get', 'svc-get-isolate', 'svc-get-dyn', 'svc-other', 'svc-get-other', 'svc-get-isolate-other', 'svc-get-dyn-other'],
    reference: 'bare',
    compare: [['svc-get', 'svc'], ['svc-get-isolate', 'svc'], ['svc-get-dyn', 'svc'], ...OTHER_PAIRS],
  },
  {
    id: 'get-all-script',
    suite: 'scripts',
    driver: 'http',
    title: 'GET /todos (1,000 objects), trivial On Get',
    ...getAll,
    variants: ['bare', 'svc', 'svc-get', 'svc-get-isolate', 'svc-get-dyn', 'svc-other', 'svc-get-other', 'svc-get-isolate-other', 'svc-get-dyn-other'],
    reference: 'bare',
    compare: [['svc-get', 'svc'], ['svc-get-isolate', 'svc'], ['svc-get-dyn', 'svc'], ...OTHER_PAIRS],
  },
];
