// Baseline for the MongoDB path: node:http doing by hand, with the official driver, the queries
// svc sends for the todos routes, against the same database, so that the difference in the node
// process's CPU per request is svc's own cost over the raw driver:
//   GET /todos/<id>   findOne({_id})
//   GET /todos?{...}  find(filter).sort(...).limit(...) for {"done":..., "$sort":{...}, "$limit":n}
// Objects are answered as svc answers them (`_id` as `id`, first). Sessions as in hand-written.js.
//
//   node bench/servers/hand-mongo.js --port <p> --db <mongodb url with database>
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { parseArgs, exitOnSignals } from '../lib/args.js';

const args = parseArgs(process.argv.slice(2), { port: 'number', db: 'string' });
const client = new MongoClient(args.db, { ignoreUndefined: true });
await client.connect();
const todos = client.db().collection('todos');
const sessions = new Map();

const toDoc = (raw) => {
  const out = { id: raw._id };
  for (const key in raw) if (key !== '_id') out[key] = raw[key];
  return out;
};

function send(res, status, headers, value) {
  const body = JSON.stringify(value);
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = Buffer.byteLength(body);
  res.writeHead(status, headers);
  res.end(body);
}

const server = http.createServer(async (req, res) => {
  const headers = {};
  const sid = /(?:^|;\s*)sid=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
  if (sid === undefined || !sessions.has(sid)) {
    const id = randomBytes(64).toString('hex');
    sessions.set(id, { id });
    headers['set-cookie'] = `sid=${id}; Path=/; HttpOnly`;
  }
  try {
    const q = req.url.indexOf('?');
    const parts = (q === -1 ? req.url : req.url.slice(0, q)).split('/').filter(Boolean);
    if (parts[0] !== 'todos' || req.method !== 'GET') return send(res, 404, headers, { status: 404 });
    if (parts.length === 2) {
      const raw = await todos.findOne({ _id: parts[1] });
      return raw ? send(res, 200, headers, toDoc(raw)) : send(res, 404, headers, { status: 404 });
    }
    const { $sort, $limit, ...where } = q === -1 ? {} : JSON.parse(decodeURIComponent(req.url.slice(q + 1)));
    let cursor = todos.find(where);
    if ($sort) cursor = cursor.sort($sort);
    if ($limit) cursor = cursor.limit($limit);
    return send(res, 200, headers, (await cursor.toArray()).map(toDoc));
  } catch (err) {
    return send(res, 500, headers, { status: 500, message: String(err) });
  }
});

server.listen(args.port ?? 0, '127.0.0.1', () => process.stdout.write(`listening on port ${server.address().port}\n`));
exitOnSignals(server);
process.on('exit', () => void client.close());
