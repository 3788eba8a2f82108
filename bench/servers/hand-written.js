// Baseline "floor for the work": node:http doing by hand what svc does for the todos routes, on an
// in-memory store: parse the Cookie header, look the session up (create one, with Set-Cookie, when
// the request has no valid sid, as svc does), route, then
//   GET  /todos/<id>  Map lookup + JSON.stringify
//   GET  /todos       JSON.stringify of every object
//   GET  /todos?{"done":false,"$sort":{"n":1},"$limit":100}   the in-memory array filtered by
//                     equality, sorted by one property and cut, then JSON.stringify (the ceiling of
//                     an in-memory adapter such as Feathers')
//   POST /todos       read + JSON.parse the body, check property types, new id (pooled CSPRNG bytes),
//                     insert in the Map
//
//   node bench/servers/hand-written.js --port <p>
import http from 'node:http';
import { randomBytes, randomFillSync } from 'node:crypto';
import { parseArgs, exitOnSignals } from '../lib/args.js';

const args = parseArgs(process.argv.slice(2), { port: 'number' });

// Object ids from a pool of CSPRNG bytes refilled 4 KiB at a time, as svc makes them (a CSPRNG
// call per id costs more than the rest of a POST on some machines; the floor should not pay it).
const pool = Buffer.allocUnsafeSlow(4096);
let poolAt = pool.length;
function newId() {
  if (poolAt + 8 > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const id = pool.toString('hex', poolAt, poolAt + 8);
  poolAt += 8;
  return id;
}

const sessions = new Map();
const todos = new Map();
const MAX_BODY = 1024 * 1024;

function parseCookies(header) {
  const out = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const name = part.slice(0, eq).trim();
    if (name && !(name in out)) out[name] = decodeURIComponent(part.slice(eq + 1).trim());
  }
  return out;
}

function send(res, status, headers, value) {
  const body = JSON.stringify(value);
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = Buffer.byteLength(body);
  res.writeHead(status, headers);
  res.end(body);
}

function readJson(req, done) {
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size <= MAX_BODY) chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > MAX_BODY) return done(new Error('body too large'));
    try {
      done(null, JSON.parse(Buffer.concat(chunks).toString('utf8')));
    } catch (err) {
      done(err);
    }
  });
}

/** A query as one JSON object: equality on properties, $sort on one property, $limit. */
function list(search) {
  const { $sort, $limit, ...where } = JSON.parse(search);
  const keys = Object.keys(where);
  let out = [...todos.values()].filter((t) => keys.every((k) => t[k] === where[k]));
  const [field, dir] = Object.entries($sort ?? {})[0] ?? [];
  if (field !== undefined) out.sort((a, b) => (a[field] < b[field] ? -dir : a[field] > b[field] ? dir : 0));
  if ($limit !== undefined) out = out.slice(0, $limit);
  return out;
}

const server = http.createServer((req, res) => {
  const headers = {};
  const sid = parseCookies(req.headers.cookie).sid;
  let session = sid === undefined ? undefined : sessions.get(sid);
  if (!session) {
    const id = randomBytes(64).toString('hex');
    session = { id, createdAt: Date.now() };
    sessions.set(id, session);
    headers['set-cookie'] = `sid=${id}; Path=/; HttpOnly`;
  }

  const q = req.url.indexOf('?');
  const path = q === -1 ? req.url : req.url.slice(0, q);
  const parts = path.split('/').filter(Boolean);
  if (parts[0] !== 'todos' || parts.length > 2) return send(res, 404, headers, { status: 404, message: 'not found' });

  if (req.method === 'GET') {
    if (parts.length === 1 && q !== -1) return send(res, 200, headers, list(decodeURIComponent(req.url.slice(q + 1))));
    if (parts.length === 1) return send(res, 200, headers, [...todos.values()]);
    const todo = todos.get(parts[1]);
    return todo ? send(res, 200, headers, todo) : send(res, 404, headers, { status: 404, message: 'not found' });
  }

  if (req.method === 'POST' && parts.length === 1) {
    return readJson(req, (err, body) => {
      if (err || body === null || typeof body !== 'object' || Array.isArray(body)) {
        return send(res, 400, headers, { status: 400, message: 'body must be a JSON object' });
      }
      const errors = {};
      if (body.title !== undefined && typeof body.title !== 'string') errors.title = 'must be a string';
      if (body.done !== undefined && typeof body.done !== 'boolean') errors.done = 'must be a boolean';
      if (body.n !== undefined && typeof body.n !== 'number') errors.n = 'must be a number';
      if (Object.keys(errors).length) return send(res, 400, headers, { status: 400, errors });
      const todo = {};
      if (body.title !== undefined) todo.title = body.title;
      if (body.done !== undefined) todo.done = body.done;
      if (body.n !== undefined) todo.n = body.n;
      todo.id = newId();
      todos.set(todo.id, todo);
      return send(res, 200, headers, todo);
    });
  }

  return send(res, 405, headers, { status: 405, message: 'method not allowed' });
});

server.listen(args.port ?? 0, '127.0.0.1', () => {
  process.stdout.write(`listening on port ${server.address().port}\n`);
});
exitOnSignals(server);
