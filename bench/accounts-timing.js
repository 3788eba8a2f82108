#!/usr/bin/env node
// Issue 27: does the time of POST /users/requestPasswordReset (and /requestCode) tell whether a user
// has the address? Issue 38: and of a wrong login by email (POST /users/login {email, password}),
// and by username? One svc process (embedded store), users seeded, then rounds of requests for
// known and unknown addresses interleaved one by one on one keep-alive connection; medians per
// round and the median of the same-round ratios unknown / known. The mails go to a closed port
// (they are sent after the answer; a failed send is logged). Numbers go to bench/RESULTS.md by hand.
//
// A pause of --gap ms after each request lets the mail sent after a known address's answer be
// done before the next request (--gap 0 measures that overlap too).
//
// The logins use passwordCost 4 (the app's, ~1 ms of bcrypt; 10 in production makes any lookup
// difference smaller still) and login limits high enough never to refuse.
//
//   node bench/accounts-timing.js [--rounds 5] [--requests 300] [--users 200] [--gap 5] [--routes requestPasswordReset,requestCode,login,loginUsername]
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from './lib/args.js';
import { freePort, spawnNode, stop, waitListening, SVC_NODE_FLAGS } from './lib/procs.js';
import { median } from './lib/stats.js';
import { repoRoot } from './variants.js';

const args = {
  rounds: 5,
  requests: 300,
  users: 200,
  gap: 5,
  routes: 'requestPasswordReset,requestCode,login,loginUsername',
  ...parseArgs(process.argv.slice(2), { rounds: 'number', requests: 'number', users: 'number', gap: 'number', routes: 'string' }),
};
/** Each measured request: its path, its body for a known or unknown address n, the status both answer. */
const ROUTES = {
  requestPasswordReset: { path: '/users/requestPasswordReset', body: (email) => ({ email }), status: 202 },
  requestCode: { path: '/users/requestCode', body: (email) => ({ email }), status: 202 },
  login: { path: '/users/login', body: (email) => ({ email, password: 'wrong' }), status: 401 },
  loginUsername: { path: '/users/login', body: (email) => ({ username: email.replace('@example.com', ''), password: 'wrong' }), status: 401 },
};
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-accounts-'));
mkdirSync(join(dir, 'resources', 'users'), { recursive: true });
writeFileSync(join(dir, 'app.json'), JSON.stringify({ passwordCost: 4, loginRateLimit: { max: 1_000_000_000, maxPerAddress: 1_000_000_000 } }));
const closedPort = await freePort();
writeFileSync(
  join(dir, 'resources', 'users', 'config.json'),
  JSON.stringify({
    type: 'UserCollection',
    properties: { email: { type: 'string', unique: true } },
    auth: { reset: {}, codes: {}, mail: { smtp: { host: '127.0.0.1', port: closedPort }, from: 'bench@example.com', limits: { perRecipient: 1_000_000, perClient: 1_000_000 } } },
  }),
);

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
let port;
function post(path, body) {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

port = await freePort();
const child = spawnNode([...SVC_NODE_FLAGS, join(repoRoot, 'apps/server/bin/svc.js'), dir, '--port', String(port), '--env', 'development', '--log-format', 'json']);
// The server's own time per request (access log, 0.1 ms steps), in the order the requests were sent.
const serverMs = [];
let pendingText = '';
child.stderr.on('data', (chunk) => {
  pendingText += chunk.toString('utf8');
  const lines = pendingText.split('\n');
  pendingText = lines.pop() ?? '';
  for (const line of lines) {
    if (!line.includes('/request') && !line.includes('/login')) continue;
    try {
      const entry = JSON.parse(line);
      if (typeof entry.ms === 'number' && typeof entry.path === 'string' && (entry.path.startsWith('/users/request') || entry.path === '/users/login')) serverMs.push(entry.ms);
    } catch {
      // not an access line
    }
  }
});
const serverTimes = async (count) => {
  while (serverMs.length < count) await new Promise((resolve) => setTimeout(resolve, 20));
  return serverMs.splice(0, count);
};
try {
  await waitListening(child);
  for (let i = 0; i < args.users; i++) {
    const { status } = await post('/users', { username: `user${i}`, password: 'pw', email: `user${i}@example.com` });
    if (status !== 200) throw new Error(`seeding answered ${status}`);
  }
  const results = {};
  for (const route of args.routes.split(',')) {
    const spec = ROUTES[route];
    if (spec === undefined) throw new Error(`unknown route ${route} (${Object.keys(ROUTES).join(', ')})`);
    const rounds = [];
    for (let r = 0; r < args.rounds; r++) {
      const known = [];
      const unknown = [];
      const kinds = [];
      for (let i = 0; i < args.requests; i++) {
        // Alternate which goes first, so that neither always follows the other.
        const order = i % 2 === 0 ? ['known', 'unknown'] : ['unknown', 'known'];
        for (const kind of order) {
          // Both cycle over as many addresses: a code request replaces the address's previous code either way.
          const n = (r * args.requests + i) % args.users;
          const email = kind === 'known' ? `user${n}@example.com` : `nobody${n}@example.com`;
          const { status, ms } = await post(spec.path, spec.body(email));
          if (status !== spec.status) throw new Error(`${route} answered ${status}`);
          (kind === 'known' ? known : unknown).push(ms);
          kinds.push(kind);
          if (args.gap > 0) await new Promise((resolve) => setTimeout(resolve, args.gap));
        }
      }
      const times = await serverTimes(kinds.length);
      const serverKnown = times.filter((_, i) => kinds[i] === 'known');
      const serverUnknown = times.filter((_, i) => kinds[i] === 'unknown');
      rounds.push({ known: median(known), unknown: median(unknown), ratio: median(unknown) / median(known), serverKnown: median(serverKnown), serverUnknown: median(serverUnknown) });
    }
    results[route] = {
      knownMs: median(rounds.map((x) => x.known)),
      unknownMs: median(rounds.map((x) => x.unknown)),
      ratio: median(rounds.map((x) => x.ratio)),
      perRound: rounds.map((x) => Number(x.ratio.toFixed(3))),
      serverKnownMs: median(rounds.map((x) => x.serverKnown)),
      serverUnknownMs: median(rounds.map((x) => x.serverUnknown)),
    };
  }
  console.log(JSON.stringify({ date: new Date().toISOString(), rounds: args.rounds, requests: args.requests, users: args.users, gapMs: args.gap, results }, null, 2));
} finally {
  agent.destroy();
  await stop(child);
  rmSync(dir, { recursive: true, force: true });
}
