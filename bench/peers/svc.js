// svc for bench/peers.js: an app folder written from a description, the server started pinned
// (production, embedded store), users signed up and logged in, objects written in bulk straight
// into the embedded store's files (while it is stopped), as bench/rules.js does.
import { createWriteStream, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, spawnNode, stop, waitListening } from '../lib/procs.js';
import { request } from '../lib/http.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));

/** Writes `dir/app.json` and `dir/resources/<name>/config.json` (and `files`: {"name/get.js": text}). */
export function writeApp(dir, { appJson = {}, resources, files = {} }) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'app.json'), JSON.stringify(appJson));
  for (const [name, config] of Object.entries(resources)) {
    mkdirSync(join(dir, 'resources', name), { recursive: true });
    writeFileSync(join(dir, 'resources', name, 'config.json'), JSON.stringify(config));
  }
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, 'resources', file), text);
}

let defaultCheckout = repo;
/** The checkout's svc predates the embedded engine (b68f22b and before): its store reads the files writeObjects writes, as they are. */
let beforeEngine = false;

/** Every svc of this run from another built checkout (bench/peers.js --svc-checkout: an earlier release beside the same peers). */
export function useCheckout(dir) {
  defaultCheckout = dir;
  beforeEngine = !existsSync(join(dir, 'packages/core/src/store/embedded'));
}

/**
 * `nodeFlags`: more flags for node (bench/peers.js --profile: `--cpu-prof --cpu-prof-dir=<dir>`);
 * `checkout`: another built checkout of svc to run (bench/peers.js --svc-at), useCheckout's by default.
 */
export async function startSvc(dir, core, nodeFlags = [], checkout = defaultCheckout) {
  const port = await freePort();
  const child = spawnNode(['--no-node-snapshot', ...nodeFlags, join(checkout, 'apps/server/bin/svc.js'), dir, '--port', String(port), '--host', '127.0.0.1', '--env', 'production'], { core, env: { NODE_ENV: 'production' }, cwd: checkout });
  await waitListening(child, 600_000);
  return { child, port };
}

export const stopSvc = (svc) => stop(svc.child);

/** One JSON request; throws on a non-2xx answer. Answers { body, cookies }. */
export async function call(port, method, path, { body, cookie } = {}) {
  const headers = { ...(body ? { 'content-type': 'application/json' } : {}), ...(cookie ? { cookie } : {}) };
  const res = await request(port, { method, path, headers, body: body ? JSON.stringify(body) : undefined });
  const text = res.body.toString('utf8');
  if (res.status < 200 || res.status >= 300) throw new Error(`svc ${method} ${path}: ${res.status} ${text.slice(0, 400)}`);
  return { body: text ? JSON.parse(text) : undefined, cookies: res.cookies };
}

/** Logs `username` in: the session cookie to send. */
export async function loginCookie(port, username, password) {
  const { cookies } = await call(port, 'POST', '/users/login', { body: { username, password } });
  return cookies.join('; ');
}

/**
 * app.json for the set-up starts of an app whose objects are then written by writeObjects: the old
 * files store, whose line format writeObjects writes (the embedded engine refuses to start beside
 * data files it did not convert). Once the objects are written, `engineConverts(dir, appJson)`
 * puts the app's own app.json back: the next start converts every file (users, sessions and the
 * written objects) into the engine's database, the default store the benchmark measures.
 */
export const filesFirst = (appJson) => (beforeEngine ? appJson : { ...appJson, embeddedStore: { ...appJson.embeddedStore, engine: 'files' } });

/** app.json back as the app's own after filesFirst: the next start converts the data files to the engine. */
export function engineConverts(dir, appJson) {
  writeFileSync(join(dir, 'app.json'), JSON.stringify(appJson));
}

/** Writes objects in the old embedded store's line format to `data/<collection>.db` (svc stopped; see filesFirst). */
export async function writeObjects(dir, collection, objects) {
  mkdirSync(join(dir, 'data'), { recursive: true });
  const out = createWriteStream(join(dir, `data/${collection}.db`));
  let seq = 0;
  for (const o of objects) {
    seq++;
    const { id, ...rest } = o;
    if (!out.write(`${JSON.stringify({ _id: id, ...rest, __svcSeq: seq })}\n`)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  return seq;
}
