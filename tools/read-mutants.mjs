#!/usr/bin/env node
// Issue 39's mutation check of the read side's differential suites: each predicate that lets a
// shortcut answer is weakened in turn (made to let it answer where it should not), and
// apps/server/test/fast-paths-differential.test.ts (the generated table, slow) or
// fast-paths-cases.test.ts (the cases the table misses, quick) must then fail. A mutant they do not
// catch is a predicate they do not test (or one that changes no answer: say why in MUTANTS).
//
//   node tools/read-mutants.mjs [--only a1,a2] [--list] [--no-baseline] [--all]
//
// Run it in a copy of the checkout (it edits the sources and puts them back after each mutant):
//   cp -a . /tmp/read-mutants && cd /tmp/read-mutants && node tools/read-mutants.mjs
// It runs the embedded store only (shortcuts that read kept texts exist there), so the suite's
// MongoDB half is skipped by leaving SVC_TEST_MONGODB_URL out of the environment.
import { readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { stripVTControlCharacters } from 'node:util';
import { MUTANTS } from './read-mutants.list.mjs';

const args = process.argv.slice(2);
const only = args.includes('--only') ? new Set(args[args.indexOf('--only') + 1].split(',')) : undefined;
const chosen = MUTANTS.filter((m) => only === undefined || only.has(m.id));

// Every mutant must apply to exactly one place and change it: a list that no longer matches the
// code fails at once, naming every mutant that does not apply (none is skipped or passed silently).
const stale = [];
for (const m of chosen) {
  const text = readFileSync(m.file, 'utf8');
  const count = text.split(m.from).length - 1;
  if (count !== 1) stale.push(`${m.id}: ${m.file} holds ${count} copies of ${JSON.stringify(m.from)}`);
  else if (m.from === m.to) stale.push(`${m.id}: the mutant changes nothing`);
}
if (stale.length > 0) {
  console.error(`${stale.length} of ${chosen.length} mutants do not apply to the code (fix their patterns in tools/read-mutants.list.mjs):\n${stale.join('\n')}`);
  process.exit(2);
}
if (args.includes('--list')) {
  for (const m of chosen) console.log(`${m.id}\t${m.what}`);
  process.exit(0);
}

const env = { ...process.env };
delete env.SVC_TEST_MONGODB_URL;
delete env.CI;
// A caught mutant fails at its first differing answer: the run stops there (--bail), so only an
// uncaught one costs the whole suite.
// Both files in one run (the quick one beside the slow one, in another worker).
const SUITES = ['apps/server/test/fast-paths-cases.test.ts', 'apps/server/test/fast-paths-differential.test.ts'];
const suite = () => spawnSync('pnpm', ['vitest', 'run', '--bail=1', ...SUITES], { env, encoding: 'utf8', maxBuffer: 64 << 20 });
// The suite must pass on the code as it is: a failing suite would "catch" every mutant.
if (!args.includes('--no-baseline')) {
  const started = Date.now();
  const base = suite();
  if (base.status !== 0) {
    console.error(`the suite fails without any mutant: fix it first\n${base.stdout.slice(-4000)}`);
    process.exit(2);
  }
  console.log(`baseline\tpasses\t${Math.round((Date.now() - started) / 1000)} s`);
}
const results = [];
const run = args.includes('--all') || only !== undefined ? chosen : chosen.filter((m) => !m.equivalent);
for (const m of chosen.filter((m) => !run.includes(m))) console.log(`${m.id}\tequivalent, not run (--all runs it)\t${m.what}`);
for (const m of run) {
  const original = readFileSync(m.file, 'utf8');
  writeFileSync(m.file, original.replace(m.from, m.to));
  const started = Date.now();
  try {
    const run = suite();
    const caught = run.status !== 0;
    // vitest tells failures on stderr, in colour.
    const out = stripVTControlCharacters(`${run.stdout}\n${run.stderr}`);
    const first = caught ? (/(\w+ (?:GET|HEAD|DELETE) [^\n]*): (?:first|second) fast answer/.exec(out)?.[1] ?? /FAIL .*?(fast-paths-cases[^\n]*)/.exec(out)?.[1] ?? /Error[^\n]*/.exec(out)?.[0] ?? '(failed)') : '';
    results.push({ id: m.id, caught, seconds: Math.round((Date.now() - started) / 1000), first, what: m.what });
    console.log(`${m.id}\t${caught ? 'caught' : 'NOT CAUGHT'}\t${Math.round((Date.now() - started) / 1000)} s\t${m.what}${first ? `\n\t\tby ${first}` : ''}`);
  } finally {
    writeFileSync(m.file, original);
  }
}
const missed = results.filter((r) => !r.caught);
console.log(`\n${results.length - missed.length} of ${results.length} mutants caught${missed.length ? `; not caught: ${missed.map((r) => r.id).join(', ')}` : ''}`);
process.exit(missed.length === 0 ? 0 : 1);
