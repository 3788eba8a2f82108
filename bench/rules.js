// Access rules (issue 24): what an owner rule costs against the same request without one.
//
//   node bench/rules.js [--count 100000] [--rounds 5] [--duration 5] [--warmup 2] [--connections 50] [--no-write]
//
// One app, two collections holding the same `count` objects (owner spread over 1,000 users, an
// index on `owner`), written straight into the embedded store's data files:
//   - `open`: no rule; the list asks for the explicit filter `?owner=<me>`, the GET by id is open.
//   - `ruled`: `"list"` and `"read": {"owner": "@me.id"}`; the list is plain `GET /ruled`.
// The logged-in user owns 1/1,000 of each (100 objects at 100,000), so both lists answer the
// same 100 objects (same bytes but the collection name). svc (production) pinned to core 0 serves
// both; autocannon on core 1 (lib/load.js) measures the two variants of a scenario in turn, order
// swapped every round (AB, BA, ...), with the user's session cookie on every request. Ratios are
// medians of the same-round ratios (rule / no rule, req/s and server CPU µs per request). Results
// go to bench/results/rules-<date>.json and the "rules" section of bench/RESULTS.md.
// Everything started is stopped by PID; the temporary folder is removed.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { parseArgs } from './lib/args.js';
import { freePort, pinning, pinSelf, spawnNode, stop, stopAll, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { machine } from './lib/machine.js';
import { runLoad } from './lib/load.js';
import { request, closeAgent } from './lib/http.js';
import { median } from './lib/stats.js';

const args = parseArgs(process.argv.slice(2), { count: 'number', rounds: 'number', duration: 'number', warmup: 'number', connections: 'number', 'no-write': 'boolean' });
const count = args.count ?? 100_000;
const rounds = args.rounds ?? 5;
const duration = args.duration ?? 5;
const warmup = args.warmup ?? 2;
const connections = args.connections ?? 50;
const repo = fileURLToPath(new URL('..', import.meta.url));
const svcBin = join(repo, 'apps/server/bin/svc.js');
const log = (line) => process.stderr.write(`${line}\n`);
const OWNERS = 1000;

for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => stopAll().finally(() => process.exit(130)));
const mach = machine();
const pin = pinning();
if (pin) pinSelf(pin.load);

const props = { title: { type: 'string' }, done: { type: 'boolean' }, owner: { type: 'string', index: true } };
const ownerRule = { owner: '@me.id' };

function writeConfigs(dir) {
  const put = (name, config) => {
    mkdirSync(join(dir, 'resources', name), { recursive: true });
    writeFileSync(join(dir, 'resources', name, 'config.json'), JSON.stringify(config));
  };
  put('users', { type: 'UserCollection', properties: {}, passwordCost: 4 });
  put('open', { type: 'Collection', properties: props });
  put('ruled', { type: 'Collection', properties: props, rules: { list: ownerRule, read: ownerRule } });
}

/** The objects of one collection in the embedded store's line format; the user owns every 1,000th. */
async function writeData(dir, name, uid, ids) {
  const out = createWriteStream(join(dir, `data/${name}.db`));
  for (let i = 0; i < count; i++) {
    const owner = i % OWNERS === 0 ? uid : `user${i % OWNERS}`;
    const line = `{"_id":"${ids[i]}","title":"todo ${i}","done":${i % 2 === 0},"owner":"${owner}","__svcSeq":${i + 1}}\n`;
    if (!out.write(line)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
}

async function start(dir) {
  const port = await freePort();
  const child = spawnNode([...SVC_NODE_FLAGS, svcBin, dir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { NODE_ENV: 'production' }, cwd: repo });
  await waitListening(child, 600_000);
  return { child, port };
}

async function json(port, options) {
  const res = await request(port, options);
  if (res.status !== 200) throw new Error(`${options.method ?? 'GET'} ${options.path} answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
  return { body: JSON.parse(res.body.toString('utf8')), cookies: res.cookies };
}

const dir = mkdtempSync(join(tmpdir(), 'svc-rules-'));
const results = [];
try {
  writeConfigs(dir);
  // First start: sign the user up (its id owns the objects written next), then write the data.
  const first = await start(dir);
  const user = await json(first.port, { method: 'POST', path: '/users', body: JSON.stringify({ username: 'bench', password: 'bench-pw' }), headers: { 'content-type': 'application/json' } });
  await stop(first.child);
  const uid = user.body.id;
  log(`-- writing ${count.toLocaleString('en-US')} objects into open and ruled`);
  const hex = randomBytes(8 * count).toString('hex');
  const ids = Array.from({ length: count }, (_, i) => hex.slice(i * 16, i * 16 + 16));
  await writeData(dir, 'open', uid, ids);
  await writeData(dir, 'ruled', uid, ids);
  const server = await start(dir);
  const port = server.port;
  const login = await json(port, { method: 'POST', path: '/users/login', body: JSON.stringify({ username: 'bench', password: 'bench-pw' }), headers: { 'content-type': 'application/json' } });
  const cookie = login.cookies.join('; ');
  const mineId = ids[OWNERS * 7];
  const scenarios = [
    { id: 'list', name: `list of my objects among ${count.toLocaleString('en-US')} (index on owner)`, a: { label: 'explicit filter, no rule', path: `/open?owner=${uid}` }, b: { label: 'owner rule, no filter', path: '/ruled' } },
    { id: 'get', name: 'GET one of my objects by id', a: { label: 'no rule', path: `/open/${mineId}` }, b: { label: 'owner rule', path: `/ruled/${mineId}` } },
  ];
  // The same answers, checked once: the rule gives exactly what the explicit filter gives.
  for (const s of scenarios) {
    const a = await json(port, { path: s.a.path, headers: { cookie } });
    const b = await json(port, { path: s.b.path, headers: { cookie } });
    if (JSON.stringify(a.body) !== JSON.stringify(b.body)) throw new Error(`${s.id}: the two variants answer differently`);
    log(`   ${s.id}: ${Array.isArray(a.body) ? `${a.body.length} objects` : 'one object'}, same answer with and without the rule`);
  }
  const other = await request(port, { path: `/ruled/${ids[1]}`, headers: { cookie } });
  if (other.status !== 404) throw new Error(`another user's object answered ${other.status}, not 404`);
  for (const s of scenarios) {
    const perRound = [];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
      const got = {};
      for (const v of order) {
        got[v] = await runLoad({ url: `http://127.0.0.1:${port}${s[v].path}`, method: 'GET', headers: { cookie }, connections, warmup, duration, serverPid: server.child.pid, serverCore: pin?.server }, pin?.load);
        if (got[v].non2xx > 0 || got[v].errors > 0) throw new Error(`${s.id} ${v}: ${got[v].non2xx} non-2xx, ${got[v].errors} errors`);
      }
      perRound.push(got);
      log(`   ${s.id} round ${r + 1}: no rule ${Math.round(got.a.rps)} req/s ${got.a.cpuUsPerRequest.toFixed(1)} µs; rule ${Math.round(got.b.rps)} req/s ${got.b.cpuUsPerRequest.toFixed(1)} µs`);
    }
    const pick = (v, key) => median(perRound.map((g) => g[v][key]));
    results.push({
      ...s,
      a: { ...s.a, rps: pick('a', 'rps'), cpuUs: pick('a', 'cpuUsPerRequest'), p50Ms: median(perRound.map((g) => g.a.latencyMs.p50)) },
      b: { ...s.b, rps: pick('b', 'rps'), cpuUs: pick('b', 'cpuUsPerRequest'), p50Ms: median(perRound.map((g) => g.b.latencyMs.p50)) },
      rpsRatio: median(perRound.map((g) => g.a.rps / g.b.rps)),
      cpuRatio: median(perRound.map((g) => g.b.cpuUsPerRequest / g.a.cpuUsPerRequest)),
      rounds: perRound.map((g) => ({ a: { rps: g.a.rps, cpuUs: g.a.cpuUsPerRequest }, b: { rps: g.b.rps, cpuUs: g.b.cpuUsPerRequest } })),
    });
  }
  await stop(server.child);
} finally {
  closeAgent();
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}

const date = new Date().toISOString();
mkdirSync(join(repo, 'bench/results'), { recursive: true });
writeFileSync(join(repo, `bench/results/rules-${date.replace(/[:.]/g, '-')}.json`), JSON.stringify({ date, machine: mach, count, rounds, duration, warmup, connections, results }, null, 2));

const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const aims = { list: 1.2, get: 1.1 };
const section = [
  '<!-- bench:rules:begin -->',
  '## Access rules: an owner rule against the same request without it (issue 24)',
  '',
  `- Command: \`node bench/rules.js --count ${count} --rounds ${rounds} --duration ${duration}\`; ${date.slice(0, 19).replace('T', ' ')} UTC; ${mach.nproc} cores, Node ${process.version}; load average at start ${mach.loadavg?.join(' ') ?? '?'}`,
  `- One svc (production, embedded store) pinned to core 0 with two collections of the same ${fmt(count)} objects (owners spread over 1,000 users, an index on \`owner\`): \`open\` without rules, \`ruled\` with \`list\` and \`read\` \`{"owner": "@me.id"}\`. A logged-in user's requests (session cookie), autocannon on core 1, ${connections} connections, ${warmup} s warm-up + ${duration} s measured per variant, order swapped every round. Both variants answer the same objects (checked). Figures are medians over ${rounds} rounds; ratios are medians of the same-round ratios.`,
  '',
  '| scenario | variant | req/s | p50 ms | server CPU µs/req |',
  '|---|---|---:|---:|---:|',
  ...results.flatMap((r) => [
    `| ${r.name} | ${r.a.label} (\`${r.a.path.replace(/owner=[^&]+/, 'owner=<me>').replace(/\/[0-9a-f]{16}$/, '/<id>')}\`) | ${fmt(r.a.rps)} | ${r.a.p50Ms.toFixed(2)} | ${r.a.cpuUs.toFixed(1)} |`,
    `| ${r.name} | ${r.b.label} (\`${r.b.path.replace(/\/[0-9a-f]{16}$/, '/<id>')}\`) | ${fmt(r.b.rps)} | ${r.b.p50Ms.toFixed(2)} | ${r.b.cpuUs.toFixed(1)} |`,
  ]),
  '',
  '| scenario | aim | no rule / rule, req/s | rule / no rule, server CPU µs per request | per round (req/s ratio; CPU ratio) |',
  '|---|---:|---:|---:|---|',
  ...results.map(
    (r) =>
      `| ${r.name} | <= ${aims[r.id]}x | ${r.rpsRatio.toFixed(2)}x (${r.rpsRatio <= aims[r.id] ? 'met' : 'not met'}) | ${r.cpuRatio.toFixed(2)}x (${r.cpuRatio <= aims[r.id] ? 'met' : 'not met'}) | ${r.rounds.map((g) => `${(g.a.rps / g.b.rps).toFixed(2)}; ${(g.b.cpuUs / g.a.cpuUs).toFixed(2)}`).join(' / ')} |`,
  ),
  '',
  `With a load average above the machine's ${mach.nproc} cores (other processes on the server's core), req/s swing from one window to the next with what else runs; the server's CPU µs per request, measured over the same window, is then the figure to judge by.`,
  '<!-- bench:rules:end -->',
].join('\n');
if (!args['no-write']) {
  const file = join(repo, 'bench/RESULTS.md');
  const text = readFileSync(file, 'utf8');
  const re = /<!-- bench:rules:begin -->[\s\S]*?<!-- bench:rules:end -->/;
  writeFileSync(file, re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n${section}\n`);
}
process.stdout.write(`${section}\n`);
