// Feathers 5 peer of bench/peers.js --scenario app (the realistic app workload of issue 39):
//   node feathers-app.mjs <port> <seed.json> <tokens.json> <db file>
// A Koa app (the Feathers 5 default) with the REST transport, JWT authentication
// (@feathersjs/authentication, the local strategy for logins) and three services, users, projects
// and todos, on SQLite through @feathersjs/knex (better-sqlite3), with an index on each owner:
// the memory adapter scans every object per find, hopeless at 100,000 todos, where an app would
// use a database. Seeded from <seed.json> at start. Every request must carry a user's JWT;
// hooks do what svc's owner rules do: a user finds, gets, patches and creates only their own todos
// (the query is restricted to `owner: user.id`; a create takes `owner` from the user and must name
// one of the user's projects), and `$expand=project` populates each todo's project in one batched
// find restricted to the user's projects (feathers-hooks-common's populate, batched). An access
// token per user (createAccessToken, no password check) is written to <tokens.json> before it
// listens. The server file is copied next to a node_modules link by bench/peers.js.
import { readFileSync, writeFileSync } from 'node:fs';
import { feathers } from '@feathersjs/feathers';
import { koa, rest, bodyParser, errorHandler } from '@feathersjs/koa';
import { KnexService } from '@feathersjs/knex';
import knex from 'knex';
import { randomBytes } from 'node:crypto';
import { AuthenticationService, JWTStrategy, authenticate } from '@feathersjs/authentication';
import { LocalStrategy } from '@feathersjs/authentication-local';
import { BadRequest, NotFound } from '@feathersjs/errors';

const [port, seedFile, tokensFile, dbFile] = [Number(process.argv[2]), process.argv[3], process.argv[4], process.argv[5]];
const db = knex({ client: 'better-sqlite3', connection: { filename: dbFile }, useNullAsDefault: true });
await db.schema.createTable('users', (t) => {
  t.string('id').primary();
  t.string('email').unique();
  t.string('name');
});
await db.schema.createTable('projects', (t) => {
  t.string('id').primary();
  t.string('name');
  t.string('owner').index();
});
await db.schema.createTable('todos', (t) => {
  t.string('id').primary();
  t.string('title');
  t.boolean('done');
  t.integer('n');
  t.string('owner').index();
  t.string('project');
});
const app = koa(feathers());
app.set('authentication', {
  secret: 'bench-secret-of-the-feathers-peer-0123456789',
  entity: 'user',
  service: 'users',
  authStrategies: ['jwt', 'local'],
  jwtOptions: { header: { typ: 'access' }, audience: 'https://bench.local', issuer: 'feathers', algorithm: 'HS256', expiresIn: '1d' },
  local: { usernameField: 'email', passwordField: 'password' },
});
app.use(errorHandler());
app.use(bodyParser());
app.configure(rest());
const auth = new AuthenticationService(app);
auth.register('jwt', new JWTStrategy());
auth.register('local', new LocalStrategy());
app.use('authentication', auth);
for (const name of ['users', 'projects', 'todos']) app.use(name, new KnexService({ Model: db, name, id: 'id', paginate: false, multi: false }));

/** External calls only see what the user owns: the owner rule, as a query restriction. */
const ownOnly = async (context) => {
  if (!context.params.provider) return;
  const q = { ...(context.params.query ?? {}) };
  if (q.$expand !== undefined) {
    context.params.expand = String(q.$expand).split(',');
    delete q.$expand;
  }
  if (q.done === 'false' || q.done === 'true') q.done = q.done === 'true';
  q.owner = context.params.user.id;
  context.params.query = q;
};

/** A create belongs to its author, in one of the author's projects. */
const ownedCreate = async (context) => {
  const user = context.params.user;
  const data = context.data ?? {};
  if (typeof data.title !== 'string' || typeof data.project !== 'string') throw new BadRequest('title and project are required');
  await context.app.service('projects').get(data.project, { query: { owner: user.id } }).catch(() => {
    throw new BadRequest('project: not one of yours');
  });
  context.data = { id: randomBytes(8).toString('hex'), title: data.title, done: data.done === true, n: Number(data.n) || 0, project: data.project, owner: user.id };
};

/** A patch may not move a todo to another owner, nor to a project of someone else. */
const ownedPatch = async (context) => {
  const { owner: _owner, id: _id, ...rest } = context.data ?? {};
  if (rest.project !== undefined) await context.app.service('projects').get(rest.project, { query: { owner: context.params.user.id } });
  context.data = rest;
};

/** SQLite answers booleans as 0 and 1: a converter, as a schema resolver would be. */
const booleans = async (context) => {
  for (const t of Array.isArray(context.result) ? context.result : [context.result]) if (t && t.done !== undefined) t.done = t.done === 1 || t.done === true;
};

/** $expand=project: the page's projects in one find (restricted to the user's), put on each todo. */
const populateProject = async (context) => {
  if (!context.params.expand?.includes('project')) return;
  const todos = Array.isArray(context.result) ? context.result : [context.result];
  const ids = [...new Set(todos.map((t) => t.project))];
  const projects = await context.app.service('projects').find({ query: { id: { $in: ids }, owner: context.params.user.id }, paginate: false });
  const byId = new Map(projects.map((p) => [p.id, p]));
  for (const t of todos) t.project = byId.get(t.project) ?? null;
};

app.service('users').hooks({ before: { all: [authenticate('jwt')] } });
app.service('projects').hooks({ before: { all: [authenticate('jwt'), ownOnly] } });
app.service('todos').hooks({
  before: { all: [authenticate('jwt'), ownOnly], create: [ownedCreate], patch: [ownedPatch], update: [() => { throw new NotFound('use PATCH'); }], remove: [] },
  after: { all: [booleans], find: [populateProject], get: [populateProject] },
});

// The seed: written straight into the tables (as the other servers' are bulk-loaded).
const seed = JSON.parse(readFileSync(seedFile, 'utf8'));
for (const [name, rows] of Object.entries(seed)) await db.batchInsert(name, rows, 500);
const tokens = {};
for (const user of seed.users) tokens[user.id] = await auth.createAccessToken({ sub: user.id });
writeFileSync(tokensFile, JSON.stringify(tokens));

const server = await app.listen(port, '127.0.0.1');
// Koa's listen returns before the socket is bound: say "listening" once it is.
if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
console.log(`listening on port ${port}`);
const stop = () => {
  server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
