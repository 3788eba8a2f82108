#!/usr/bin/env node
// Issue 24: a rule costs far less than the script it replaces. GET /todos/<id> by its owner, on
//   rule    bench/app-owner-rule:   config.json "read": {"owner": "@me.id"} (no script)
//   script  bench/app-owner-script: the same check in On Get (get.js:
//           `if (!me || this.owner !== me.id) cancel('not found', 404);`)
//   open    bench/app-owner-open:   no check at all (the floor: what the same request costs without one)
// All are svc in production on the embedded store, with a users collection; the harness signs a
// user up, logs in (the measured requests carry that session's cookie) and seeds 1,000 todos owned
// by that user. Then windows as pair.js (each server alone on the server core at full load, one
// right after the other, the order rotated every window): per window each server's req/s and CPU
// µs per request; the answers are medians of the per-window ratios (aim of the issue: rule >= 3x
// the script's req/s).
//
//   node bench/owner-rule.js [--windows 9] [--duration 3] [--connections 50] [--no-build]
//
// Only loopback; every process started is stopped by PID at the end, on error and on signals.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './lib/args.js';
import { freePort, pinning, pinSelf, spawnNode, stop, stopAll, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { runLoad } from './lib/load.js';
import { closeAgent, request, seed } from './lib/http.js';
import { max, median, min } from './lib/stats.js';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const svcBin = join(repoRoot, 'apps/server/bin/svc.js');
const opts = parseArgs(process.argv.slice(2), { windows: 'number', duration: 'number', connections: 'number', build: 'boolean' });
const windows = Math.max(1, Math.floor(opts.windows ?? 9));
const duration = opts.duration ?? 3;
const connections = Math.max(1, Math.floor(opts.connections ?? 50));
const SEED = 1000;
const VARIANTS = [
  { id: 'rule', app: 'bench/app-owner-rule', title: 'owner rule (config.json)', checks: true },
  { id: 'script', app: 'bench/app-owner-script', title: 'the same check in On Get', checks: true },
  { id: 'open', app: 'bench/app-owner-open', title: 'no check', checks: false },
];
const log = (m) => process.stderr.write(`${m}\n`);
const pin = pinning();
if (pin) pinSelf(pin.load);
const tmpRoot = mkdtempSync(join(tmpdir(), 'svc-owner-rule-'));
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    stopAll().finally(() => {
      rmSync(tmpRoot, { recursive: true, force: true });
      process.exit(sig === 'SIGINT' ? 130 : 143);
    });
  });
}

const json = (res) => JSON.parse(res.body.toString('utf8'));

/** Starts one variant, signs its user up and in, seeds todos owned by that user. */
async function start(variant) {
  const appDir = join(tmpRoot, variant.id);
  cpSync(join(repoRoot, variant.app), appDir, { recursive: true });
  const port = await freePort();
  const child = spawnNode([...SVC_NODE_FLAGS, svcBin, appDir, '--port', String(port), '--env', 'production'], { core: pin?.server, env: { NODE_ENV: 'production' }, cwd: repoRoot });
  await waitListening(child);
  const headers = { 'content-type': 'application/json' };
  const credentials = JSON.stringify({ username: 'owner', password: 'bench-owner-pw' });
  const user = await request(port, { method: 'POST', path: '/users', headers, body: credentials });
  if (user.status !== 200) throw new Error(`${variant.id}: sign-up answered ${user.status}: ${user.body}`);
  const login = await request(port, { method: 'POST', path: '/users/login', headers, body: credentials });
  if (login.status !== 200) throw new Error(`${variant.id}: login answered ${login.status}: ${login.body}`);
  const cookie = login.cookies.join('; ');
  const uid = json(user).id;
  const ids = await seed(port, { count: SEED, path: '/todos', body: (i) => JSON.stringify({ title: `todo ${i}`, done: i % 2 === 0, n: i, owner: uid }) }, cookie);
  const target = ids[Math.floor(ids.length / 2)];
  // The owner gets it; a visitor does not (the rule, or the script, is in the way).
  const mine = await request(port, { path: `/todos/${target}`, headers: { cookie } });
  if (mine.status !== 200 || json(mine).id !== target) throw new Error(`${variant.id}: the owner's GET answered ${mine.status}: ${mine.body}`);
  const visitor = await request(port, { path: `/todos/${target}` });
  if (visitor.status !== (variant.checks ? 404 : 200)) throw new Error(`${variant.id}: a visitor's GET answered ${visitor.status}: the check is ${variant.checks ? 'not on' : 'on'}`);
  return { ...variant, child, port, cookie, path: `/todos/${target}` };
}

const loadOf = (srv, warmup) => ({
  url: `http://127.0.0.1:${srv.port}${srv.path}`,
  method: 'GET',
  headers: { cookie: srv.cookie },
  connections,
  warmup,
  duration,
  serverPid: srv.child.pid,
  serverCore: pin?.server,
});

if (opts.build !== false) execFileSync('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@svc/server...'], { cwd: repoRoot, stdio: 'inherit' });
const servers = [];
try {
  for (const variant of VARIANTS) servers.push(await start(variant));
  log(`GET /todos/<id> by its owner: ${VARIANTS.map((v) => v.id).join(' / ')}, ${windows} windows of ${duration} s, ${connections} connections, order rotated every window, server core ${pin?.server ?? '-'}`);
  const rps = VARIANTS.map(() => []);
  const cpu = VARIANTS.map(() => []);
  const ratios = { rps: [], cpu: [], ruleCost: [], scriptCost: [] };
  for (let w = 0; w < windows; w++) {
    const warmup = w === 0 ? 2 : 0.5;
    const results = [];
    for (let k = 0; k < servers.length; k++) {
      const i = (k + w) % servers.length;
      results[i] = await runLoad(loadOf(servers[i], warmup), pin?.load);
    }
    for (const r of results) if (r.non2xx || r.errors) throw new Error(`errors under load: ${JSON.stringify(r.statusCodes)} ${r.errors}`);
    results.forEach((r, i) => {
      rps[i].push(r.rps);
      cpu[i].push(r.cpuUsPerRequest);
    });
    const [rule, script, open] = results;
    ratios.rps.push(rule.rps / script.rps);
    ratios.cpu.push(script.cpuUsPerRequest / rule.cpuUsPerRequest);
    ratios.ruleCost.push(rule.cpuUsPerRequest - open.cpuUsPerRequest);
    ratios.scriptCost.push(script.cpuUsPerRequest - open.cpuUsPerRequest);
    log(`window ${w + 1}/${windows}: ${results.map((r, i) => `${VARIANTS[i].id} ${Math.round(r.rps)} req/s (${r.cpuUsPerRequest.toFixed(1)} µs/req)`).join(', ')}; rule/script ${(rule.rps / script.rps).toFixed(2)}x`);
  }
  const f = (xs) => `${median(xs).toFixed(2)}x (min ${min(xs).toFixed(2)}, max ${max(xs).toFixed(2)})`;
  process.stdout.write(
    `GET /todos/<id> by its owner (${SEED} todos, ${windows} windows of ${duration} s): ` +
      `req/s ${VARIANTS.map((v, i) => `${v.id} ${Math.round(median(rps[i]))}`).join(', ')}; CPU µs/req ${VARIANTS.map((v, i) => `${v.id} ${median(cpu[i]).toFixed(1)}`).join(', ')} (medians). ` +
      `rule/script req/s ${f(ratios.rps)}; script/rule CPU µs per request ${f(ratios.cpu)}; ` +
      `what the check adds to the open request, CPU µs: rule ${median(ratios.ruleCost).toFixed(1)}, script ${median(ratios.scriptCost).toFixed(1)}\n`,
  );
} finally {
  for (const srv of servers) await stop(srv.child);
  await stopAll();
  closeAgent();
  rmSync(tmpRoot, { recursive: true, force: true });
}
