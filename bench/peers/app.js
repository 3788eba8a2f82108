// bench/peers.js --scenario app: issue 39's realistic app workload, svc beside PocketBase and
// Feathers 5. 1,000 users, each owning 10 projects of 10 todos (10,000 projects, 100,000 todos),
// the same data in the three; every request logged in, as a random user: 70% list my todos
// {done: false}, newest first, 20 of them, project expanded; 10% GET one of mine; 15% update one
// of mine; 5% create one in one of my projects. The rules are the same: a user lists, reads,
// updates and creates only their own todos (and only in their own projects), and expanding a
// project reads it through the projects' own owner rule.
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { freePort, spawnNode, waitListening, stop } from '../lib/procs.js';
import { request } from '../lib/http.js';
import { median } from '../lib/stats.js';
import * as PB from './pocketbase.js';
import { writeApp, startSvc, stopSvc, call, writeObjects, filesFirst, engineConverts } from './svc.js';

const USERS = 1000;
const PROJECTS_PER_USER = 10;
const TODOS_PER_PROJECT = 10;
/** Requests drawn per server for the load generator (each picks one at random per request). */
const MIX_SIZE = 20_000;
const PASSWORD = 'bench-pw-123';

/** The same data for every server, with each server's own ids. */
function dataset(makeId) {
  const users = [];
  const projects = [];
  const todos = [];
  for (let u = 0; u < USERS; u++) {
    const user = { id: makeId(), name: `user${u}`, projects: [], todos: [] };
    users.push(user);
    for (let p = 0; p < PROJECTS_PER_USER; p++) {
      const project = { id: makeId(), name: `project ${u}-${p}`, owner: user.id };
      projects.push(project);
      user.projects.push(project.id);
      for (let t = 0; t < TODOS_PER_PROJECT; t++) {
        const n = p * TODOS_PER_PROJECT + t;
        const todo = { id: makeId(), title: `todo ${u}-${n}`, done: n % 3 === 0, n, owner: user.id, project: project.id };
        todos.push(todo);
        user.todos.push(todo.id);
      }
    }
  }
  return { users, projects, todos };
}

/** A deterministic generator (mulberry32): every server gets the same sequence of operations. */
function random(seed) {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let x = Math.imul(t ^ (t >>> 15), 1 | t);
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The mix, the same operations for every server (same users, same objects by position): `make`
 * turns an operation into that server's request { method, path, headers, body }.
 */
function mix(data, credentials, make) {
  const next = random(39);
  const out = [];
  for (let i = 0; i < MIX_SIZE; i++) {
    const u = Math.floor(next() * USERS);
    const user = data.users[u];
    const r = next();
    const todo = user.todos[Math.floor(next() * user.todos.length)];
    const project = user.projects[Math.floor(next() * user.projects.length)];
    const op = r < 0.7 ? { kind: 'list' } : r < 0.8 ? { kind: 'get', todo } : r < 0.95 ? { kind: 'update', todo, done: next() < 0.5 } : { kind: 'create', project, n: 1000 + i };
    out.push(make(op, user, credentials[u]));
  }
  return out;
}

const json = (body) => JSON.stringify(body);
const q = (query) => `?${encodeURIComponent(JSON.stringify(query))}`;
const LIST_QUERY = { done: false, $sort: { n: -1 }, $limit: 20, $expand: ['project'] };

/**
 * svc: users signed up through its API (bcrypt cost 4), projects and todos written into its store.
 * `plain`: the same app with every read shortcut off (app.json `fastPaths: false`), as `svc-plain`.
 * `at`: another built checkout of svc (`--svc-at`), named `svc-at-<its folder's name>`.
 */
async function setupSvc({ work, pin, svcFlags, plain = false, at }) {
  const name = at !== undefined ? `svc-at-${basename(at)}` : plain ? 'svc-plain' : 'svc';
  const dir = join(work, name);
  const start = () => startSvc(dir, pin?.server, svcFlags, at);
  const owner = { type: 'string', index: true };
  const appJson = { passwordCost: 4, log: { access: true }, ...(plain ? { fastPaths: false } : {}) };
  writeApp(dir, {
    appJson: filesFirst(appJson),
    resources: {
      users: { type: 'UserCollection', properties: { name: { type: 'string' } } },
      projects: { type: 'Collection', properties: { name: { type: 'string' }, owner }, rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' }, create: { owner: '@me.id' }, update: false, delete: false } },
      todos: {
        type: 'Collection',
        properties: { title: { type: 'string' }, done: { type: 'boolean' }, n: { type: 'number' }, owner, project: { type: 'relation', collection: '/projects' } },
        rules: { list: { owner: '@me.id' }, read: { owner: '@me.id' }, create: { owner: '@me.id' }, update: { owner: '@me.id', '@new.owner': '@me.id' }, delete: { owner: '@me.id' } },
      },
    },
  });
  let svc = await start();
  const ids = [];
  for (let u = 0; u < USERS; u++) ids.push((await call(svc.port, 'POST', '/users', { body: { username: `user${u}`, password: PASSWORD, name: `user${u}` } })).body.id);
  const data = dataset(() => randomBytes(8).toString('hex'));
  // The users' own ids (made by svc) in place of the dataset's.
  const byDataset = new Map(data.users.map((user, u) => [user.id, ids[u]]));
  data.users.forEach((user, u) => (user.id = ids[u]));
  for (const p of data.projects) p.owner = byDataset.get(p.owner);
  for (const t of data.todos) t.owner = byDataset.get(t.owner);
  await stopSvc(svc);
  await writeObjects(dir, 'projects', data.projects.map(({ id, name, owner: o }) => ({ id, name, owner: o })));
  await writeObjects(dir, 'todos', data.todos.map(({ id, title, done, n, owner: o, project }) => ({ id, title, done, n, owner: o, project })));
  engineConverts(dir, appJson);
  svc = await start();
  const cookies = [];
  for (let u = 0; u < USERS; u++) cookies.push((await call(svc.port, 'POST', '/users/login', { body: { username: `user${u}`, password: PASSWORD } })).cookies.map((c) => c.split(';')[0]).join('; '));
  const make = (op, user, cookie) => {
    const headers = { cookie };
    if (op.kind === 'list') return { method: 'GET', path: `/todos${q(LIST_QUERY)}`, headers };
    if (op.kind === 'get') return { method: 'GET', path: `/todos/${op.todo}`, headers };
    const body = op.kind === 'update' ? json({ done: op.done, title: `updated ${op.todo}` }) : json({ title: `new ${op.n}`, done: false, n: op.n, owner: user.id, project: op.project });
    return { method: op.kind === 'update' ? 'PUT' : 'POST', path: op.kind === 'update' ? `/todos/${op.todo}` : '/todos', headers: { ...headers, 'content-type': 'application/json' }, body };
  };
  return { name, server: svc, pid: svc.child.pid, port: svc.port, data, credentials: cookies, make };
}

/** PocketBase: the same collections and rules through its API, rows written into its SQLite file. */
async function setupPocketBase({ work, pin }) {
  const dir = join(work, 'pb');
  const pb0 = await PB.startPocketBase({ dir, port: await freePort(), core: pin?.server });
  // The benchmark binary makes a public `todos` at start (../shared/peers/pocketbase/main.go): ours replaces it.
  await PB.api(pb0, 'DELETE', '/api/collections/todos', { token: pb0.admin });
  const projects = await PB.createCollection(pb0, {
    name: 'projects',
    type: 'base',
    listRule: 'owner = @request.auth.id',
    viewRule: 'owner = @request.auth.id',
    fields: [{ name: 'name', type: 'text' }, { name: 'owner', type: 'relation', collectionId: '_pb_users_auth_', maxSelect: 1 }],
    indexes: ['CREATE INDEX `idx_projects_owner` ON `projects` (`owner`)'],
  });
  await PB.createCollection(pb0, {
    name: 'todos',
    type: 'base',
    listRule: 'owner = @request.auth.id',
    viewRule: 'owner = @request.auth.id',
    createRule: 'owner = @request.auth.id && project.owner = @request.auth.id',
    updateRule: 'owner = @request.auth.id && (@request.body.owner:isset = false || @request.body.owner = @request.auth.id)',
    fields: [
      { name: 'title', type: 'text' },
      { name: 'done', type: 'bool' },
      { name: 'n', type: 'number' },
      { name: 'owner', type: 'relation', collectionId: '_pb_users_auth_', maxSelect: 1 },
      { name: 'project', type: 'relation', collectionId: projects.id, maxSelect: 1 },
    ],
    indexes: ['CREATE INDEX `idx_todos_owner` ON `todos` (`owner`)'],
  });
  // One user through the API (its password hash), the others as copies of its row with their own ids.
  const first = await PB.createUser(pb0, 'user0@bench.local', PASSWORD);
  await PB.stopPocketBase(pb0);
  const [row] = await PB.query(pb0.dbFile, 'SELECT * FROM users WHERE id = ?', first);
  const data = dataset(() => PB.pbId());
  data.users[0].id = first;
  for (const p of data.projects.slice(0, PROJECTS_PER_USER)) p.owner = first;
  for (const t of data.todos.slice(0, PROJECTS_PER_USER * TODOS_PER_PROJECT)) t.owner = first;
  const columns = Object.keys(row);
  await PB.bulkInsert(pb0.dbFile, 'users', columns, (function* () {
    for (let u = 1; u < USERS; u++) yield columns.map((c) => (c === 'id' ? data.users[u].id : c === 'email' ? `user${u}@bench.local` : c === 'tokenKey' ? randomBytes(25).toString('hex') : row[c]));
  })());
  await PB.bulkInsert(pb0.dbFile, 'projects', ['id', 'name', 'owner'], data.projects.map((p) => [p.id, p.name, p.owner]));
  await PB.bulkInsert(pb0.dbFile, 'todos', ['id', 'title', 'done', 'n', 'owner', 'project'], data.todos.map((t) => [t.id, t.title, t.done ? 1 : 0, t.n, t.owner, t.project]));
  const pb = await PB.startPocketBase({ dir, port: await freePort(), core: pin?.server });
  const tokens = [];
  for (const user of data.users) tokens.push(await PB.impersonate(pb, user.id));
  const list = `/api/collections/todos/records?filter=${encodeURIComponent('done = false')}&sort=-n&perPage=20&skipTotal=1&expand=project`;
  const make = (op, user, token) => {
    const headers = { authorization: token };
    if (op.kind === 'list') return { method: 'GET', path: list, headers };
    if (op.kind === 'get') return { method: 'GET', path: `/api/collections/todos/records/${op.todo}`, headers };
    const body = op.kind === 'update' ? json({ done: op.done, title: `updated ${op.todo}` }) : json({ title: `new ${op.n}`, done: false, n: op.n, owner: user.id, project: op.project });
    return { method: op.kind === 'update' ? 'PATCH' : 'POST', path: op.kind === 'update' ? `/api/collections/todos/records/${op.todo}` : '/api/collections/todos/records', headers: { ...headers, 'content-type': 'application/json' }, body };
  };
  return { name: 'pocketbase', server: pb, pid: pb.child.pid, port: pb.port, data, credentials: tokens, make, pb };
}

/** Feathers 5: the server seeds its memory services from a file and writes a JWT per user. */
async function setupFeathers({ work, pin, feathersModules }) {
  if (!existsSync(join(feathersModules, '@feathersjs/authentication-local')) || !existsSync(join(feathersModules, 'better-sqlite3'))) {
    throw new Error(`Feathers 5 with @feathersjs/authentication(-local), @feathersjs/knex and better-sqlite3 is not installed at ${feathersModules} (bench/peers/README.md; or --feathers-auth-modules <dir>)`);
  }
  const dir = join(work, 'feathers-app');
  mkdirSync(dir, { recursive: true });
  copyFileSync(fileURLToPath(new URL('./feathers-app.mjs', import.meta.url)), join(dir, 'server.mjs'));
  symlinkSync(feathersModules, join(dir, 'node_modules'));
  const data = dataset(() => randomBytes(8).toString('hex'));
  const seed = join(dir, 'seed.json');
  writeFileSync(seed, JSON.stringify({
    users: data.users.map((u) => ({ id: u.id, email: `${u.name}@bench.local`, name: u.name })),
    projects: data.projects.map(({ id, name, owner }) => ({ id, name, owner })),
    todos: data.todos.map(({ id, title, done, n, owner, project }) => ({ id, title, done, n, owner, project })),
  }));
  const tokensFile = join(dir, 'tokens.json');
  const port = await freePort();
  const child = spawnNode([join(dir, 'server.mjs'), String(port), seed, tokensFile, join(dir, 'data.db')], { core: pin?.server, env: { NODE_ENV: 'production' }, cwd: dir });
  await waitListening(child, 120_000);
  const byUser = JSON.parse(readFileSync(tokensFile, 'utf8'));
  const tokens = data.users.map((u) => `Bearer ${byUser[u.id]}`);
  const list = `/todos?done=false&${encodeURIComponent('$sort[n]')}=-1&${encodeURIComponent('$limit')}=20&${encodeURIComponent('$expand')}=project`;
  const make = (op, user, token) => {
    const headers = { authorization: token };
    if (op.kind === 'list') return { method: 'GET', path: list, headers };
    if (op.kind === 'get') return { method: 'GET', path: `/todos/${op.todo}`, headers };
    const body = op.kind === 'update' ? json({ done: op.done, title: `updated ${op.todo}` }) : json({ title: `new ${op.n}`, done: false, n: op.n, project: op.project });
    return { method: op.kind === 'update' ? 'PATCH' : 'POST', path: op.kind === 'update' ? `/todos/${op.todo}` : '/todos', headers: { ...headers, 'content-type': 'application/json' }, body };
  };
  return { name: 'feathers', server: { child, port }, pid: child.pid, port, data, credentials: tokens, make };
}

/** One request of `make`'s kind, answered: status and parsed body. */
async function send(port, r) {
  const res = await request(port, { method: r.method, path: r.path, headers: r.headers, body: r.body });
  const text = res.body.toString('utf8');
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/**
 * The same answers before timing, for user 0: the list (their 20 newest open todos, each with its
 * project's name), one of their todos by id, another user's (404, or 403 where that is the
 * server's answer), an update and a create; the lists' titles equal across the servers.
 */
async function check(x, log) {
  const user = x.data.users[0];
  const other = x.data.users[1];
  const token = x.credentials[0];
  const listed = await send(x.port, x.make({ kind: 'list' }, user, token));
  const items = Array.isArray(listed.body) ? listed.body : listed.body?.items;
  if (listed.status !== 200 || items?.length !== 20) throw new Error(`${x.name} list: ${listed.status} ${JSON.stringify(listed.body).slice(0, 300)}`);
  const titles = [];
  for (const t of items) {
    const project = t.expand?.project ?? t.project;
    if (t.done !== false || t.owner !== user.id || !project?.name?.startsWith('project 0-')) throw new Error(`${x.name} list: ${JSON.stringify(t).slice(0, 300)}`);
    titles.push(t.title);
  }
  const mine = await send(x.port, x.make({ kind: 'get', todo: user.todos[5] }, user, token));
  if (mine.status !== 200 || mine.body.title !== 'todo 0-5') throw new Error(`${x.name} get: ${mine.status} ${JSON.stringify(mine.body).slice(0, 200)}`);
  const theirs = await send(x.port, x.make({ kind: 'get', todo: other.todos[5] }, user, token));
  if (theirs.status !== 404) throw new Error(`${x.name}: another user's todo answered ${theirs.status}`);
  const updated = await send(x.port, x.make({ kind: 'update', todo: user.todos[6], done: true }, user, token));
  if (updated.status !== 200 || updated.body.done !== true) throw new Error(`${x.name} update: ${updated.status} ${JSON.stringify(updated.body).slice(0, 200)}`);
  const foreign = await send(x.port, x.make({ kind: 'update', todo: other.todos[6], done: true }, user, token));
  if (foreign.status < 400) throw new Error(`${x.name}: another user's todo updated (${foreign.status})`);
  const made = await send(x.port, x.make({ kind: 'create', project: user.projects[0], n: 999 }, user, token));
  if (made.status !== 200 && made.status !== 201) throw new Error(`${x.name} create: ${made.status} ${JSON.stringify(made.body).slice(0, 200)}`);
  const elsewhere = await send(x.port, x.make({ kind: 'create', project: other.projects[0], n: 998 }, user, token));
  if (elsewhere.status < 400) throw new Error(`${x.name}: created a todo in another user's project (${elsewhere.status})`);
  log(`   ${x.name}: checked the list (20 of user 0's open todos, newest first, project expanded), get, update, create, and another user's todo and project refused`);
  return titles;
}

/**
 * The scenario: the three servers set up, checked alike, then measured on the same mix. `svcPlain`:
 * a fourth, svc with its read shortcuts off, in the same rounds (what the shortcuts and their
 * caches gain on this workload: issue 39's 3% rule). `svcAt`: more svc servers, each from another
 * built checkout (a cache taken out by a patch: docs/contributing/caches.md's Gain column).
 * `svcOnly`: no PocketBase and Feathers (svc's variants against each other).
 */
export async function appScenario({ work, pin, log, fmt, svcFlags, feathersModules, measureHttp, command, svcPlain = false, svcAt = [], svcOnly = false }) {
  log(`-- ${fmt(USERS)} users, ${fmt(USERS * PROJECTS_PER_USER)} projects, ${fmt(USERS * PROJECTS_PER_USER * TODOS_PER_PROJECT)} todos in each server`);
  const servers = [await setupSvc({ work, pin, svcFlags })];
  if (!svcOnly) servers.push(await setupPocketBase({ work, pin }), await setupFeathers({ work, pin, feathersModules }));
  if (svcPlain) servers.push(await setupSvc({ work, pin, svcFlags, plain: true }));
  for (const at of svcAt) servers.push(await setupSvc({ work, pin, svcFlags, at }));
  const lists = [];
  for (const x of servers) lists.push((await check(x, log)).join());
  if (new Set(lists).size !== 1) throw new Error(`the lists differ: ${lists.join(' / ')}`);
  const variants = {};
  for (const x of servers) {
    const file = join(work, `mix-${x.name}.json`);
    writeFileSync(file, JSON.stringify(mix(x.data, x.credentials, x.make)));
    variants[x.name] = {
      label: { svc: 'svc (owner rules, `$expand`)', 'svc-plain': 'svc, every read shortcut off (`fastPaths: false`)', pocketbase: 'PocketBase (same rules, `expand=project`)', feathers: 'Feathers 5 + knex/SQLite + JWT (owner hooks, batched populate)' }[x.name] ?? `svc built at ${x.name.slice('svc-at-'.length)}`,
      url: `http://127.0.0.1:${x.port}/`,
      requestsFile: file,
      headers: {},
      pid: x.pid,
    };
  }
  const results = await measureHttp({ app: { name: 'the app mix (70% list + expand, 10% get, 15% update, 5% create), logged in', variants } });
  for (const x of servers) {
    if (x.pb) await PB.stopPocketBase(x.pb);
    else await stop(x.server.child);
  }
  return {
    title: svcOnly ? "The realistic app workload (issue 39): logged-in users' own todos, svc against other builds of itself" : "Peers, the realistic app workload (issue 39): logged-in users' own todos, svc beside PocketBase and Feathers",
    command,
    setup: `${fmt(USERS)} users, each owning ${PROJECTS_PER_USER} projects of ${TODOS_PER_PROJECT} todos (title, done, n, owner, project), the same in each server; every request as one of the users, at random: 70% GET my todos \`{done: false}\` newest first (sort by n), 20, project expanded; 10% GET one of mine by id; 15% update one of mine (done, title); 5% create one in one of my projects. svc (production, embedded store, access log on): owner rules \`{"owner": "@me.id"}\` on list/read/update/create of todos and list/read of projects, \`project\` a relation, session cookies. PocketBase 0.36.8 (\`--dev=false\`, request logs off): the same list/view/update/create rules (\`owner = @request.auth.id\`, create also \`project.owner = @request.auth.id\`), \`expand=project\`, auth tokens. Feathers 5.0.50 (Koa, @feathersjs/knex on SQLite with better-sqlite3, an index on each owner, @feathersjs/authentication JWT): hooks restrict every query to the user's own objects, check the project on create, and populate the page's projects in one find. ${fmt(MIX_SIZE)} requests drawn once with a fixed seed (the same operations for every server), one at random per request. Checked before timing: each lists the same 20 todos for user 0 with their projects, answers get/update/create, and refuses another user's todo (404) and project.`,
    results,
  };
}

export function renderApp({ results }) {
  const r = results.app;
  const lines = ['| server | req/s | p50 ms | p99 ms | server CPU µs/req |', '|---|---:|---:|---:|---:|'];
  for (const v of Object.values(r.variants)) lines.push(`| ${v.label} | ${Math.round(v.rps).toLocaleString('en-US')} | ${v.p50.toFixed(2)} | ${v.p99.toFixed(2)} | ${Math.round(v.cpuUs)} |`);
  const pb = r.ratios.pocketbase;
  const fe = r.ratios.feathers;
  const plain = r.ratios['svc-plain'];
  const others = Object.keys(r.ratios).filter((v) => v.startsWith('svc-at-'));
  const without = (v, what) => `${what} (same rounds): req/s with it / without it ${r.ratios[v].rps.toFixed(3)}x; server CPU per request without it / with it ${(1 / r.ratios[v].cpu).toFixed(3)}x (above 1: it saves CPU). Per round, those two: ${r.ratios[v].perRound.map(([rps, cpu]) => `${rps.toFixed(3)} and ${(1 / cpu).toFixed(3)}`).join('; ')}.`;
  const peers = pb !== undefined && fe !== undefined;
  return {
    tables: [...lines, ...(peers ? ['', `Per round (svc / PocketBase, svc / Feathers, req/s): ${r.rounds.map((g) => `${(g.svc.rps / g.pocketbase.rps).toFixed(2)}, ${(g.svc.rps / g.feathers.rps).toFixed(2)}`).join(' / ')}`] : [])],
    aims: [
      ...(plain ? [without('svc-plain', 'The read shortcuts on this workload (`fastPaths: false` turns them off)')] : []),
      ...others.map((v) => without(v, `svc against the checkout ${v.slice('svc-at-'.length)}`)),
      ...(peers ? [`Issue 39: svc >= 2x PocketBase's req/s: ${pb.rps.toFixed(2)}x (${(1 / pb.cpu).toFixed(2)}x less server CPU per request): **${pb.rps >= 2 ? 'met' : 'not met'}**; svc >= 1.3x Feathers': ${fe.rps.toFixed(2)}x (${(1 / fe.cpu).toFixed(2)}x less CPU per request): **${fe.rps >= 1.3 ? 'met' : 'not met'}** (medians of the same-round ratios; CPU per request: median over rounds ${median(r.rounds.map((g) => g.svc.cpuUs)).toFixed(0)} µs svc).`] : []),
    ],
  };
}
