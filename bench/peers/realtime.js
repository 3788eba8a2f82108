// bench/peers.js --scenario realtime: svc live queries beside PocketBase realtime subscriptions.
//
// `subscribers` users in each server; posts are readable by their author only (svc: list/read
// rule {"author": "@me.id"}; PocketBase: list/view rule `author = @request.auth.id`). Each user
// has one subscriber (svc: a socket with the user's session and the live query {} on /posts;
// PocketBase: an SSE connection subscribed to `posts/*` with the user's token), so each write
// reaches exactly one subscriber after the server checked it against every subscriber's rule
// (PocketBase) or against the few subscriptions its owner can affect (svc's index). A window:
// `rate` writes a second for `seconds` s (HTTP POSTs, owners in turn) to `posts`, or the same
// writes to `others` (the same collection, nobody subscribed): the difference in server CPU is
// what delivering costs. Windows alternate (variants rotated, targets swapped every round); the
// server's CPU is read from /proc over the window, until every write was delivered or `drainMs`.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnNode, cpuSeconds, freePort } from '../lib/procs.js';
import { request } from '../lib/http.js';
import { median, rotate } from '../lib/stats.js';
import * as PB from './pocketbase.js';
import { writeApp, startSvc, stopSvc, call } from './svc.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** The median, Infinity included (a latency of an event never delivered). */
function medianOf(values) {
  const v = values.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}
/** A latency in µs as ms text; an event never delivered (within the drain) is "not delivered". */
const ms = (us) => (us === null || us === undefined ? '-' : Number.isFinite(us) ? `${(us / 1000).toLocaleString('en-US', { maximumFractionDigits: 2 })} ms` : 'not delivered');

/** The clients' process on the load core, spoken to over IPC (as bench/live/run.js). */
function startClients(core) {
  const child = spawnNode([fileURLToPath(new URL('./realtime-clients.js', import.meta.url))], { core, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  const waiting = new Map();
  child.on('message', (msg) => {
    const w = waiting.get(msg.cmd);
    if (!w) return;
    waiting.delete(msg.cmd);
    if (msg.error) w.reject(new Error(`clients: ${msg.error}`));
    else w.resolve(msg.result);
  });
  child.exited.then(({ code }) => {
    for (const w of waiting.values()) w.reject(new Error(`the clients' process exited (${code}): ${child.tail.join('\n')}`));
  });
  const ask = (cmd, extra = {}) =>
    new Promise((resolve, reject) => {
      waiting.set(cmd, { resolve, reject });
      if (cmd !== 'ready') child.send({ cmd, ...extra });
    });
  return { child, ask, ready: ask('ready') };
}

/** Waits until the server's CPU use falls under 5% of a core (a backlog drained), at most `maxMs`. */
async function quiet(pid, maxMs) {
  const end = Date.now() + maxMs;
  for (;;) {
    const a = cpuSeconds(pid);
    await sleep(500);
    if (cpuSeconds(pid) - a < 0.025 || Date.now() > end) return;
  }
}

export async function runRealtime({ work, pin, args, log, fmt, loadavg, svcFlags = [] }) {
  const n = args.subscribers ?? 1000;
  const rate = args.rate ?? 1000;
  const seconds = args.seconds ?? 5;
  const rounds = args.rounds ?? 5;
  const drainMs = 20_000;
  const pw = 'bench-pw-123';
  const postsProps = { title: { type: 'string' }, author: { type: 'string', index: true } };
  const ownerRule = { author: '@me.id' };

  // svc: users (bcrypt cost 4 to sign 1,000 up quickly), posts with the owner rule, others the same.
  const svcDir = join(work, 'svc');
  writeApp(svcDir, {
    appJson: {
      passwordCost: 4,
      loginRateLimit: { max: 10, maxPerAddress: 1_000_000 },
      http: { maxConnectionsPerAddress: 0 },
      realtime: { maxSocketsPerAddress: 0, maxSockets: 0 },
    },
    resources: {
      users: { type: 'UserCollection', properties: {} },
      posts: { type: 'Collection', properties: postsProps, rules: { list: ownerRule, read: ownerRule } },
      others: { type: 'Collection', properties: postsProps, rules: { list: ownerRule, read: ownerRule } },
    },
  });
  const svc = await startSvc(svcDir, pin?.server, svcFlags);
  log(`-- svc: signing up and logging in ${n} users`);
  const svcUsers = [];
  for (let i = 0; i < n; i++) {
    const id = (await call(svc.port, 'POST', '/users', { body: { username: `u${i}`, password: pw } })).body.id;
    const login = await call(svc.port, 'POST', '/users/login', { body: { username: `u${i}`, password: pw } });
    svcUsers.push({ id, cookie: login.cookies.join('; ') });
  }
  const writerCookie = (await request(svc.port, { path: '/others' })).cookies.join('; ');

  // PocketBase: one user through the API (its row is the template of the others, written into
  // SQLite while stopped), tokens by impersonation (no bcrypt per user); posts/others with the rule.
  const pbDir = join(work, 'pb');
  const pbPort = await freePort();
  let pb = await PB.startPocketBase({ dir: pbDir, port: pbPort, core: pin?.server });
  const ruled = (name) => ({
    name, type: 'base', listRule: 'author = @request.auth.id', viewRule: 'author = @request.auth.id', createRule: '',
    fields: [{ name: 'title', type: 'text' }, { name: 'author', type: 'text' }],
    indexes: [`CREATE INDEX \`idx_${name}_author\` ON \`${name}\` (\`author\`)`],
  });
  await PB.createCollection(pb, ruled('posts'));
  await PB.createCollection(pb, ruled('others'));
  await PB.createUser(pb, 'u0@bench.local', pw);
  await PB.stopPocketBase(pb);
  const [template] = await PB.query(pb.dbFile, 'SELECT * FROM users LIMIT 1');
  const columns = Object.keys(template);
  const more = Array.from({ length: n - 1 }, (_, k) => ({ ...template, id: PB.pbId(), email: `u${k + 1}@bench.local`, tokenKey: `${PB.pbId()}${PB.pbId()}${PB.pbId()}` }));
  await PB.bulkInsert(pb.dbFile, 'users', columns, more.map((u) => columns.map((c) => u[c])));
  pb = await PB.startPocketBase({ dir: pbDir, port: pbPort, core: pin?.server });
  log(`-- PocketBase: ${n} user tokens`);
  const pbUsers = [];
  for (const u of [template, ...more]) pbUsers.push({ id: u.id, token: await PB.impersonate(pb, u.id) });

  const clients = startClients(pin?.load);
  await clients.ready;
  log(`-- connecting ${n} svc subscribers and ${n} PocketBase subscribers`);
  const t0 = Date.now();
  if ((await clients.ask('svc', { port: svc.port, users: svcUsers })) !== n) throw new Error('svc subscribers missing');
  if ((await clients.ask('pocketbase', { port: pb.port, users: pbUsers })) !== n) throw new Error('PocketBase subscribers missing');
  log(`   connected and subscribed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const variants = {
    svc: { label: 'svc live query (`svc:subscribe` {} on /posts, owner rule)', pid: svc.child.pid, port: svc.port, owners: svcUsers.map((u) => u.id), headers: { cookie: writerCookie }, path: { posts: '/posts', others: '/others' } },
    pocketbase: { label: 'PocketBase SSE (`posts/*`, view rule per event)', pid: pb.child.pid, port: pb.port, owners: pbUsers.map((u) => u.id), headers: {}, path: { posts: '/api/collections/posts/records', others: '/api/collections/others/records' } },
  };
  // Same content: a write by user 7 reaches user 7's subscriber and nobody else, in both.
  for (const [id, v] of Object.entries(variants)) {
    const got = await clients.ask('probe', { tag: `probe${id}`, port: v.port, path: v.path.posts, headers: v.headers, owner: v.owners[7] });
    if (got.status < 200 || got.status >= 300 || got.delivered !== 1 || got.wrongOwner !== 0) throw new Error(`${id}: a write by one user reached ${got.delivered} subscribers (${got.wrongOwner} of them not its owner), status ${got.status}`);
  }
  log('   checked: in both, a write reaches its owner\'s subscriber only');

  const perRound = [];
  let tag = 0;
  for (let r = 0; r < rounds; r++) {
    const got = {};
    for (const id of rotate(Object.keys(variants), r)) {
      const v = variants[id];
      got[id] = {};
      for (const target of r % 2 === 0 ? ['posts', 'others'] : ['others', 'posts']) {
        await quiet(v.pid, 30_000);
        const la = loadavg();
        const cpu0 = cpuSeconds(v.pid);
        const m = await clients.ask('paced', { tag: `t${tag++}`, port: v.port, path: v.path[target], headers: v.headers, owners: v.owners, rate, seconds, maxInFlight: 200, drainMs, expectDelivery: target === 'posts' });
        const cpuUs = (cpuSeconds(v.pid) - cpu0) * 1e6;
        if (m.failed > 0) throw new Error(`${id} ${target}: ${m.failed} writes failed`);
        if (m.wrongOwner > 0) throw new Error(`${id}: ${m.wrongOwner} events reached a subscriber who is not their owner`);
        got[id][target] = { ...m, cpuUs, loadavg: la };
        if (id === 'pocketbase' && target === 'posts' && m.delivered < m.ok) {
          // A backlog it could not deliver in the drain time: a fresh PocketBase for the next window.
          log(`   PocketBase left ${m.ok - m.delivered} events undelivered: restarting it and reconnecting its subscribers`);
          await PB.stopPocketBase(pb);
          pb = await PB.startPocketBase({ dir: pbDir, port: v.port, core: pin?.server });
          v.pid = pb.child.pid;
          if ((await clients.ask('pocketbase-again', { port: pb.port, users: pbUsers })) !== n) throw new Error('PocketBase subscribers missing');
        }
        log(`   r${r + 1} ${id.padEnd(10)} ${target.padEnd(6)} ${fmt(m.writesPerSecond)} writes/s (${m.ok} in ${m.sendSeconds.toFixed(1)} s), delivered ${m.delivered} (+${m.drainSeconds.toFixed(1)} s drain), p50 ${ms(m.latencyUs.p50)} p99 ${ms(m.latencyUs.p99)}, server ${fmt(cpuUs / m.ok)} µs CPU/write; load ${la.join(' ')}`);
      }
      const x = got[id];
      x.cpuPerDelivered = x.posts.delivered ? x.posts.cpuUs / x.posts.delivered : null;
      x.cpuPerWritePosts = x.posts.cpuUs / x.posts.ok;
      x.cpuPerWriteOthers = x.others.cpuUs / x.others.ok;
      x.deliveryCpu = x.posts.delivered ? (x.cpuPerWritePosts - x.cpuPerWriteOthers) * (x.posts.ok / x.posts.delivered) : null;
    }
    perRound.push(got);
  }
  await clients.ask('close').catch(() => {});
  await stopSvc(svc);
  await PB.stopPocketBase(pb);

  const ids = Object.keys(variants);
  const med = (id, f) => median(perRound.map((g) => f(g[id])));
  const summary = Object.fromEntries(ids.map((id) => [id, {
    label: variants[id].label,
    writesPerSecond: med(id, (x) => x.posts.writesPerSecond),
    writesPerSecondOthers: med(id, (x) => x.others.writesPerSecond),
    deliveredShare: med(id, (x) => x.posts.delivered / x.posts.ok),
    p50Ms: medianOf(perRound.map((g) => g[id].posts.latencyUs.p50 / 1000)),
    p99Ms: medianOf(perRound.map((g) => g[id].posts.latencyUs.p99 / 1000)),
    cpuPerWritePosts: med(id, (x) => x.cpuPerWritePosts),
    cpuPerWriteOthers: med(id, (x) => x.cpuPerWriteOthers),
    cpuPerDelivered: med(id, (x) => x.cpuPerDelivered),
    deliveryCpu: med(id, (x) => x.deliveryCpu),
    drainSeconds: med(id, (x) => x.posts.drainSeconds),
  }]));
  const ratio = (f) => medianOf(perRound.map((g) => f(g.pocketbase) / f(g.svc)));
  const ratios = {
    cpuPerDelivered: ratio((x) => x.cpuPerDelivered),
    deliveryCpu: ratio((x) => x.deliveryCpu),
    p50: ratio((x) => x.posts.latencyUs.p50),
    p99: ratio((x) => x.posts.latencyUs.p99),
  };
  return {
    title: `Peers, realtime (issue 26): ${fmt(rate)} writes/s to ${fmt(n)} subscribers, svc live queries beside PocketBase realtime`,
    command: `node bench/peers.js --scenario realtime --subscribers ${n} --rate ${rate} --seconds ${seconds} --rounds ${rounds}`,
    setup: `${fmt(n)} users in each server, each with one subscriber that may see only its own posts: svc (production, embedded store, Socket.IO over raw \`ws\` clients) \`posts\` with list/read rule \`{"author": "@me.id"}\` and one live query \`{}\` per socket (the rule makes it \`{author: <me>}\`, indexed); PocketBase 0.36.8 (\`--dev=false\`, request logs off) \`posts\` with list/view rule \`author = @request.auth.id\` (\`author\` a text field with an index) and one SSE connection per user subscribed to \`posts/*\` with the user's token (PocketBase checks the view rule for every subscriber on every event). The writer POSTs \`{title, author}\` anonymously (open create in both), owners in turn, paced to ${fmt(rate)}/s with at most 200 unanswered; \`others\` is the same collection that nobody subscribes to. Checked before timing: a write by one user reaches that user's subscriber and nobody else, in both; during the runs an event reaching a subscriber who is not its author stops the run.`,
    method: `${rounds} rounds; per round each server in turn (order rotated) gets a ${seconds} s window of writes to posts and one to others (order swapped every round); server CPU from /proc/<pid>/stat from the first write until every accepted write was delivered (at most ${drainMs / 1000} s more), after waiting for the server to be idle; latency from the POST being sent to the event arriving (writer and subscribers in one process, one clock); medians over the rounds, ratios medians of the same-round ratios`,
    results: { summary, ratios, rounds: perRound },
    params: { n, rate, seconds, drainMs },

  };
}

/** The tables and the aim's line of a saved realtime run. */
export function renderRealtime({ results, params }) {
  const { summary, ratios, rounds: perRound } = results;
  const { n, rate, seconds, drainMs } = params;
  const fmt = (x, d = 0) => (x == null ? '?' : x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }));
  const ratioText = (x) => (Number.isFinite(x) ? `${x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2)}x` : '-');
  const s = summary.svc;
  const p = summary.pocketbase;
  const tables = [
    `| ${fmt(n)} subscribers, ${fmt(rate)} writes/s for ${seconds} s | ${s.label} | ${p.label} | PocketBase / svc (median of same-round ratios) |`,
    '|---|---:|---:|---:|',
    `| writes/s achieved (to posts; to others) | ${fmt(s.writesPerSecond)}; ${fmt(s.writesPerSecondOthers)} | ${fmt(p.writesPerSecond)}; ${fmt(p.writesPerSecondOthers)} | |`,
    `| events delivered / writes | ${s.deliveredShare.toFixed(3)} | ${p.deliveredShare.toFixed(3)} | |`,
    `| delivery latency p50, write issued -> event received (queued writes included; undelivered = infinite) | ${ms(s.p50Ms * 1000)} | ${ms(p.p50Ms * 1000)} | ${ratioText(ratios.p50)} |`,
    `| delivery latency p99 | ${ms(s.p99Ms * 1000)} | ${ms(p.p99Ms * 1000)} | ${ratioText(ratios.p99)} |`,
    `| server CPU per write to posts (write + delivery) | ${fmt(s.cpuPerWritePosts)} µs | ${fmt(p.cpuPerWritePosts)} µs | |`,
    `| server CPU per write to others (nobody subscribed) | ${fmt(s.cpuPerWriteOthers)} µs | ${fmt(p.cpuPerWriteOthers)} µs | |`,
    `| **server CPU per delivered event, all in** | ${fmt(s.cpuPerDelivered)} µs | ${fmt(p.cpuPerDelivered)} µs | ${ratioText(ratios.cpuPerDelivered)} |`,
    `| **server CPU per delivered event, delivery only** (posts minus others) | ${fmt(s.deliveryCpu)} µs | ${fmt(p.deliveryCpu)} µs | ${ratioText(ratios.deliveryCpu)} |`,
    '',
    `Per round (PocketBase / svc, CPU per delivered event all in; delivery only): ${perRound.map((g) => `${(g.pocketbase.cpuPerDelivered / g.svc.cpuPerDelivered).toFixed(2)}; ${(g.pocketbase.deliveryCpu / g.svc.deliveryCpu).toFixed(2)}`).join(' / ')}`,
  ];
  const lowRate = rate < 100;
  const aims = [
    ...(lowRate
      ? [`At ${fmt(rate)} writes/s, a rate PocketBase ${p.writesPerSecond >= rate * 0.9 ? 'keeps up with' : 'still cannot keep up with'} here: delivery latency p50 ${ms(s.p50Ms * 1000)} (svc) vs ${ms(p.p50Ms * 1000)} (PocketBase), p99 ${ms(s.p99Ms * 1000)} vs ${ms(p.p99Ms * 1000)} (${fmt(rate * seconds)} events a window: the p99 is close to the maximum). The CPU figures at this rate are a few 10 ms ticks of /proc a window plus what the idle subscribers cost (Socket.IO pings, SSE keep-alives): read the CPU per event in the ${'1,000'} writes/s section, not here.`]
      : []),
    `${lowRate ? 'The figures of the 1,000 writes/s section, at this rate:' : 'Issue 26 asks for'} the CPU per delivered event at ${fmt(rate)} writes/s with ${fmt(n)} subscribers, compared with PocketBase's realtime subscriptions: svc ${fmt(s.cpuPerDelivered)} µs all in (${fmt(s.deliveryCpu)} µs for the delivery alone), PocketBase ${fmt(p.cpuPerDelivered)} µs (${fmt(p.deliveryCpu)} µs): PocketBase / svc **${ratioText(ratios.cpuPerDelivered)}** all in, ${ratioText(ratios.deliveryCpu)} for the delivery. Delivery latency p50 ${ms(s.p50Ms * 1000)} (svc) vs ${ms(p.p50Ms * 1000)} (PocketBase), p99 ${ms(s.p99Ms * 1000)} vs ${ms(p.p99Ms * 1000)}; svc took ${fmt(s.writesPerSecond)} writes/s and delivered ${(s.deliveredShare * 100).toFixed(1)}% of them, PocketBase took ${fmt(p.writesPerSecond)} writes/s of the ${fmt(rate)} offered (a create answers once its broadcast has checked every subscriber${p.writesPerSecond < rate * 0.9 ? ', so the writes queue: its latency is mostly that queue' : '; it kept up'}) and delivered ${(p.deliveredShare * 100).toFixed(1)}% of what it took within the window and ${drainMs / 1000} s after it.`,
    `Why: PocketBase checks the view rule of every subscriber of \`posts/*\` on every write (one SQL query per subscriber: ${fmt(n)} per write here), so its cost per event grows with the number of subscribers; svc's live queries are indexed by the equality their filter requires (the rule turns \`{}\` into \`{author: <me>}\`), so a write is matched against its owner's subscription only, then shown through \`showTo\` once. Both subscribers ask for the same thing (every post they may see); a PocketBase subscription's \`filter\` option would add a second query per subscriber, not spare the first (apis/realtime.go, \`realtimeCanAccessRecord\`).`,
  ];
  return { tables, aims };
}
