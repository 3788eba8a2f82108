// PocketBase for bench/peers.js: the benchmark binary of ../shared/peers (PocketBase v0.36.8 with
// a tiny main), started pinned like every server here, set up through its own Web API (superuser,
// collections, rules, indexes) and filled in bulk straight into its SQLite file while it is stopped.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { spawnProgram, stop } from '../lib/procs.js';
import { request } from '../lib/http.js';

export const PB_BIN = process.env.PB_BIN ?? '/tmp/peers/bin/pocketbase-bench';
const ADMIN = { identity: 'admin@bench.local', password: 'bench-admin-pw-1' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function havePocketBase() {
  return existsSync(PB_BIN);
}

/** A PocketBase record id: 15 of [a-z0-9], as its own generator makes them. */
export function pbId() {
  const abc = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(15);
  let id = '';
  for (const b of bytes) id += abc[b % abc.length];
  return id;
}

/**
 * Starts `pocketbase-bench serve` on `port` with its data in `dir`, pinned to `core`.
 * `--dev=false`: the binary lives under /tmp, which PocketBase takes for `go run` and then turns
 * dev mode on (every SQL statement printed); request logs off (logs.maxDays = 0, the harness's
 * fair variant).
 */
export async function startPocketBase({ dir, port, core }) {
  const dataDir = join(dir, 'pb_data');
  const made = spawnSync(PB_BIN, ['superuser', 'upsert', ADMIN.identity, ADMIN.password, `--dir=${dataDir}`, '--dev=false'], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`pocketbase superuser upsert: ${made.stderr || made.stdout}`);
  const child = spawnProgram(PB_BIN, ['serve', `--http=127.0.0.1:${port}`, `--dir=${dataDir}`, '--dev=false'], { core, env: { PB_NO_REQUEST_LOGS: '1' } });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pocketbase exited at start: ${child.tail.join('\n')}`);
    try {
      const res = await request(port, { path: '/api/health', timeoutMs: 1000 });
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`pocketbase not ready in 30 s: ${child.tail.join('\n')}`);
    await sleep(100);
  }
  const pb = { child, port, dir, dbFile: join(dataDir, 'data.db') };
  pb.admin = (await api(pb, 'POST', '/api/collections/_superusers/auth-with-password', { body: ADMIN })).token;
  return pb;
}

export async function stopPocketBase(pb) {
  await stop(pb.child, 10_000);
}

/** One JSON request to PocketBase; throws on a non-2xx answer. `token`: an auth token (defaults to none). */
export async function api(pb, method, path, { body, token } = {}) {
  const headers = { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: token } : {}) };
  const res = await request(pb.port, { method, path, headers, body: body ? JSON.stringify(body) : undefined });
  const text = res.body.toString('utf8');
  if (res.status < 200 || res.status >= 300) throw new Error(`pocketbase ${method} ${path}: ${res.status} ${text.slice(0, 400)}`);
  return text ? JSON.parse(text) : undefined;
}

/** Creates a collection as the superuser (fields, rules, indexes as the Web API takes them). */
export function createCollection(pb, definition) {
  return api(pb, 'POST', '/api/collections', { body: definition, token: pb.admin });
}

/** Creates a user of the `users` auth collection through the API; answers its id. */
export async function createUser(pb, email, password) {
  const user = await api(pb, 'POST', '/api/collections/users/records', { body: { email, password, passwordConfirm: password } });
  return user.id;
}

/** A user's auth token by password (one bcrypt check). */
export async function login(pb, email, password) {
  return (await api(pb, 'POST', '/api/collections/users/auth-with-password', { body: { identity: email, password } })).token;
}

/** A user's auth token without a password check (the superuser's impersonate endpoint). */
export async function impersonate(pb, userId) {
  return (await api(pb, 'POST', `/api/collections/users/impersonate/${userId}`, { body: { duration: 3600 }, token: pb.admin })).token;
}

/**
 * Inserts rows straight into PocketBase's SQLite file (PocketBase must be stopped): one
 * transaction, a prepared INSERT. `rows` yields arrays in `columns` order.
 */
export async function bulkInsert(dbFile, table, columns, rows) {
  const { DatabaseSync } = await import('node:sqlite');
  const db = new DatabaseSync(dbFile);
  try {
    const insert = db.prepare(`INSERT INTO \`${table}\` (${columns.map((c) => `\`${c}\``).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
    db.exec('BEGIN');
    let n = 0;
    for (const row of rows) {
      insert.run(...row);
      n++;
    }
    db.exec('COMMIT');
    return n;
  } finally {
    db.close();
  }
}

/** Runs one SQL query on PocketBase's file (stopped): the rows. */
export async function query(dbFile, sql, ...params) {
  const { DatabaseSync } = await import('node:sqlite');
  const db = new DatabaseSync(dbFile);
  try {
    return db.prepare(sql).all(...params);
  } finally {
    db.close();
  }
}
