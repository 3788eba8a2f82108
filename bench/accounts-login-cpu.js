#!/usr/bin/env node
// Issue 38: does a wrong login cost the server more CPU for an account that exists than for one
// that does not (by email, and by username)? One svc in this process (the built dist, embedded
// store, passwordCost 4, login limits out of the way, no access log), 200 users seeded, then rounds
// of 300 pairs of wrong logins for a known and an unknown account, interleaved one by one (which
// goes first alternates); the process's CPU time (user + system, bcrypt's thread included) around
// each request. Medians per round; the ratio is the median of the same-round ratios unknown /
// known. CPU time moves far less with the machine's load than wall time (accounts-timing.js).
// The modes run twice, in turn: the first is warm-up for the JIT.
//
//   node --no-node-snapshot bench/accounts-login-cpu.js [--rounds 7] [--requests 300]   (after pnpm build)
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from './lib/args.js';
import { median } from './lib/stats.js';
import { repoRoot } from './variants.js';

const args = { rounds: 7, requests: 300, ...parseArgs(process.argv.slice(2), { rounds: 'number', requests: 'number' }) };
const { startApp } = await import(pathToFileURL(join(repoRoot, 'apps/server/dist/index.js')).href);
const { silentLogger } = await import(pathToFileURL(join(repoRoot, 'packages/core/dist/index.js')).href);
const USERS = 200;
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-login-cpu-'));
mkdirSync(join(dir, 'resources/users'), { recursive: true });
writeFileSync(join(dir, 'app.json'), JSON.stringify({ passwordCost: 4, loginRateLimit: { max: 1e9, maxPerAddress: 1e9 }, log: { access: false } }));
writeFileSync(
  join(dir, 'resources/users/config.json'),
  JSON.stringify({ type: 'UserCollection', properties: { email: { type: 'string', unique: true } }, auth: { reset: {}, mail: { smtp: { host: '127.0.0.1', port: 9 }, from: 'bench@example.com' } } }),
);
const app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', env: 'development', logger: silentLogger });
const post = async (path, body) => (await fetch(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).status;
try {
  for (let i = 0; i < USERS; i++) if ((await post('/users', { username: `user${i}`, password: 'pw', email: `user${i}@example.com` })) !== 200) throw new Error('seeding failed');
  const results = {};
  for (const [label, mode] of [['username (warm-up)', 'username'], ['email (warm-up)', 'email'], ['username', 'username'], ['email', 'email']]) {
    const rounds = [];
    for (let r = 0; r < args.rounds; r++) {
      const cpu = { known: [], unknown: [] };
      for (let i = 0; i < args.requests; i++) {
        for (const kind of i % 2 === 0 ? ['known', 'unknown'] : ['unknown', 'known']) {
          const n = (r * args.requests + i) % USERS;
          const name = kind === 'known' ? `user${n}` : `nobody${n}`;
          const body = mode === 'email' ? { email: `${name}@example.com`, password: 'wrong' } : { username: name, password: 'wrong' };
          const before = process.cpuUsage();
          const status = await post('/users/login', body);
          const used = process.cpuUsage(before);
          if (status !== 401) throw new Error(`login answered ${status}`);
          cpu[kind].push(used.user + used.system);
        }
      }
      rounds.push({ known: median(cpu.known), unknown: median(cpu.unknown), ratio: median(cpu.unknown) / median(cpu.known) });
    }
    results[label] = {
      knownCpuUs: median(rounds.map((x) => x.known)),
      unknownCpuUs: median(rounds.map((x) => x.unknown)),
      ratio: Number(median(rounds.map((x) => x.ratio)).toFixed(3)),
      perRound: rounds.map((x) => Number(x.ratio.toFixed(3))),
    };
  }
  console.log(JSON.stringify({ date: new Date().toISOString(), rounds: args.rounds, requests: args.requests, users: USERS, results }, null, 2));
} finally {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
}
