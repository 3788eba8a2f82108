// Feathers 5 peer of bench/peers.js --scenario hook (the shared harness's feathers/server.mjs,
// memory store only):
//   node feathers-todos.mjs <port> [--hook]
// A Koa app (the Feathers 5 default) with the REST transport and one memory service at /todos.
// A before-find hook coerces `done` to a boolean (what a generated app's query schema would do);
// --hook adds the trivial after hook on get and find: seen = true on every returned object.
// Copied next to a node_modules link to the harness's Feathers install by bench/peers.js.
import { feathers } from '@feathersjs/feathers';
import { koa, rest, bodyParser, errorHandler } from '@feathersjs/koa';
import { MemoryService } from '@feathersjs/memory';

const port = Number(process.argv[2]);
const hook = process.argv.includes('--hook');

const app = koa(feathers());
app.use(errorHandler());
app.use(bodyParser());
app.configure(rest());
app.use('todos', new MemoryService({ id: 'id', startId: 1, paginate: false, multi: false }));

const coerce = async (context) => {
  const q = context.params.query;
  if (q && typeof q.done === 'string') q.done = q.done === 'true';
};
const seen = async (context) => {
  const r = context.result;
  if (Array.isArray(r)) for (const o of r) o.seen = true;
  else if (r) r.seen = true;
};
app.service('todos').hooks({
  before: { find: [coerce] },
  after: hook ? { get: [seen], find: [seen] } : {},
});

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
