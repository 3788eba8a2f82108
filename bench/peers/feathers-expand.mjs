// Feathers 5 peer of bench/peers.js --scenario expand (adapted from ../shared/peers/feathers/server.mjs):
//   node feathers-expand.mjs <port>
// A Koa app (the Feathers 5 default) with the REST transport and two memory services, /authors
// and /posts. `GET /posts?$expand=author` runs a populate hook: after find, the page's distinct
// author ids are fetched in ONE authors.find({id: {$in: [...]}}) and each post gets its author
// object (feathers-hooks-common's populate done in a batch, the fair version of a join; a
// per-post `get` would be slower). The server file is copied next to a node_modules link to
// the harness's Feathers install (/tmp/peers/feathers/node_modules) by bench/peers.js.
import { feathers } from '@feathersjs/feathers';
import { koa, rest, bodyParser, errorHandler } from '@feathersjs/koa';
import { MemoryService } from '@feathersjs/memory';

const port = Number(process.argv[2]);
const app = koa(feathers());
app.use(errorHandler());
app.use(bodyParser());
app.configure(rest());
app.use('authors', new MemoryService({ id: 'id', startId: 1, paginate: false, multi: false }));
app.use('posts', new MemoryService({ id: 'id', startId: 1, paginate: false, multi: false }));

/** Takes `$expand` off the query (the adapter refuses unknown `$` parameters) into params. */
const takeExpand = async (context) => {
  const q = context.params.query;
  if (q && q.$expand !== undefined) {
    context.params.expand = String(q.$expand).split(',');
    const { $expand: _expand, ...rest } = q;
    context.params.query = rest;
  }
  if (q && typeof q.author === 'string' && /^\d+$/.test(q.author)) q.author = Number(q.author);
};

/** The batched populate: one authors.find for the whole page. */
const populateAuthor = async (context) => {
  if (!context.params.expand?.includes('author')) return;
  const posts = Array.isArray(context.result) ? context.result : [context.result];
  const ids = [...new Set(posts.map((p) => p.author))];
  const authors = await context.app.service('authors').find({ query: { id: { $in: ids } }, paginate: false });
  const byId = new Map(authors.map((a) => [a.id, a]));
  for (const p of posts) p.author = byId.get(p.author) ?? null;
};

app.service('posts').hooks({
  before: { find: [takeExpand], get: [takeExpand] },
  after: { find: [populateAuthor], get: [populateAuthor] },
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
