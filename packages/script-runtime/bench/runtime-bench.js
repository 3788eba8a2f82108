// Micro-benchmark of @svc/script-runtime. Not part of the tests.
//   pnpm --filter @svc/script-runtime build
//   node --no-node-snapshot packages/script-runtime/bench/runtime-bench.js
// Prints wall µs and process CPU µs (all threads) per run, next to raw
// isolated-vm baselines measured in the same process, so the ratios are what to read.
import ivm from 'isolated-vm';
import { createScriptRuntime } from '@svc/script-runtime';

const TRIVIAL = 'this.seen = true;';
const ON_GET = "if (!isMe(this.owner)) hide('secret'); if (this.done) this.label = 'done: ' + this.title;";

function measure(label, runs, body) {
  return async () => {
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await body();
    const wallUs = Number(process.hrtime.bigint() - t0) / 1e3 / runs;
    const cpu = process.cpuUsage(cpu0);
    const cpuUs = (cpu.user + cpu.system) / runs;
    return { label, wallUs, cpuUs };
  };
}

/** Runs a case `rounds` times; returns the median round (the machines are shared and noisy). */
async function median(rounds, make) {
  const results = [];
  for (let i = 0; i < rounds; i++) results.push(await make());
  results.sort((a, b) => a.wallUs - b.wallUs);
  return { ...results[Math.floor(rounds / 2)], minUs: results[0].wallUs };
}

const todos = Array.from({ length: 1000 }, (_, i) => ({ id: `t${i}`, title: `todo ${i}`, done: i % 2 === 0, owner: i % 3 ? 'u1' : 'u2', secret: 'x' }));
const locals = { me: { id: 'u1', username: 'ann' }, query: {}, internal: false, isRoot: false };

const rt = createScriptRuntime({ timeoutMs: 1000 });
const trivial = rt.compile(TRIVIAL, 'bench/trivial.js');
const onGet = rt.compile(ON_GET, 'bench/get.js');
const withHost = rt.compile("emit('todos:create', this);", 'bench/emit.js');
const host = { emit: () => undefined };
const N = 5000;

// Raw isolated-vm baselines on a reused context: one JSON string in, one out.
const iso = new ivm.Isolate({ memoryLimit: 64 });
const ctx = iso.createContextSync();
const raw = ctx.evalSync('(function (j) { const o = JSON.parse(j); o.seen = true; return JSON.stringify(o); })', { reference: true });
const rawAsync = ctx.evalSync('(function (j) { const o = JSON.parse(j); o.seen = true; return Promise.resolve(JSON.stringify(o)); })', { reference: true });
const one = JSON.stringify({ thisObj: todos[0], locals });

const cases = [
  measure('raw ivm: new context per call', 500, async () => {
    for (let i = 0; i < 500; i++) {
      const c = await iso.createContext();
      c.evalSync('1');
      c.release();
    }
  }),
  measure('raw ivm: reused context, applySync', N, async () => {
    for (let i = 0; i < N; i++) raw.applySync(undefined, [one]);
  }),
  measure('raw ivm: reused context, applySync + timeout', N, async () => {
    for (let i = 0; i < N; i++) raw.applySync(undefined, [one], { timeout: 1000 });
  }),
  measure('raw ivm: reused context, async apply (promise)', N, async () => {
    for (let i = 0; i < N; i++) await rawAsync.apply(undefined, [one], { result: { promise: true, copy: true } });
  }),
  measure('run(): trivial script, sequential', N, async () => {
    for (let i = 0; i < N; i++) await rt.run(trivial, { thisObj: todos[i % 1000], locals });
  }),
  measure('run(): trivial script, 100 in flight', N, async () => {
    for (let i = 0; i < N; i += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, k) => rt.run(trivial, { thisObj: todos[(i + k) % 1000], locals })));
    }
  }),
  measure('run(): On Get script (isMe, hide)', N, async () => {
    for (let i = 0; i < N; i++) await rt.run(onGet, { thisObj: todos[i % 1000], locals });
  }),
  measure('run(): one host call (emit), sequential', 2000, async () => {
    for (let i = 0; i < 2000; i++) await rt.run(withHost, { thisObj: todos[i % 1000], locals, host });
  }),
  measure('runBatch(): On Get over 1,000 objects, per object', 20 * 1000, async () => {
    for (let i = 0; i < 20; i++) await rt.runBatch(onGet, todos.map((thisObj) => ({ thisObj, locals })));
  }),
  measure('run() x1,000 in flight, same On Get, per object', 5 * 1000, async () => {
    for (let i = 0; i < 5; i++) await Promise.all(todos.map((thisObj) => rt.run(onGet, { thisObj, locals })));
  }),
];

console.log(`node ${process.version}, ${new Date().toISOString()}`);
console.log(`${'case (median of 7 rounds)'.padEnd(56)} ${'wall µs'.padStart(9)} ${'cpu µs'.padStart(9)} ${'min µs'.padStart(9)}`);
for (const make of cases) {
  await make(); // warm-up
  const r = await median(7, make);
  const cell = (n) => n.toFixed(1).padStart(9);
  console.log(`${r.label.padEnd(56)} ${cell(r.wallUs)} ${cell(r.cpuUs)} ${cell(r.minUs)}`);
}
rt.dispose();
iso.dispose();
