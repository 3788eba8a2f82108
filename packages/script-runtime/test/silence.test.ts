import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { RunBudget, ScriptTimeoutError } from '@svc/script-runtime';
import type { RunInput, Script, ScriptRuntime } from '@svc/script-runtime';
import { CompiledScript } from '../src/internal/compiled-script.js';
import { progressAvailable, readProgress } from '../src/internal/process-progress.js';
import { ScriptPool } from '../src/internal/script-pool.js';
import { COLD_START_CPU_MS, judgeSilence, SILENCE_GRACE_MS, STILL_MS } from '../src/internal/silence.js';
import type { SilenceFacts } from '../src/internal/silence.js';
import { setup } from './helpers.js';

// Issue 38 item 7: at load 8-12 on 2 cores a healthy script process was killed as silent ("it
// stopped answering for 3083 ms (time limit 1000 ms)"). A process that owes an answer is judged
// by its own progress, not by the wall clock a busy machine stretches.

const LIMITS = { timeoutMs: 1000, modules: 0 };
const PAST = LIMITS.timeoutMs + SILENCE_GRACE_MS + 1;

describe('judgeSilence', () => {
  const facts = (silentMs: number, progress: SilenceFacts['progress'], cold = false): SilenceFacts => ({ silentMs, cold, progress });
  test.each<[string, SilenceFacts, RegExp | undefined]>([
    ['within the wall-clock limit, whatever it does', facts(LIMITS.timeoutMs + SILENCE_GRACE_MS, { state: 'stopped', cpuMs: 99_999, stillMs: 99_999 }), undefined],
    ['waiting for a CPU, for a minute, having used little', facts(60_000, { state: 'runnable', cpuMs: 50, stillMs: 0 }), undefined],
    ['waiting for a CPU, having used more than any answer takes', facts(60_000, { state: 'runnable', cpuMs: PAST, stillMs: 0 }), /while it used 3001 ms of CPU time/],
    ['asleep, having used more than any answer takes', facts(PAST, { state: 'asleep', cpuMs: PAST, stillMs: 0 }), /CPU time/],
    ['new, using CPU time to start', facts(60_000, { state: 'runnable', cpuMs: PAST + COLD_START_CPU_MS - 1, stillMs: 0 }, true), undefined],
    ['new, past its start allowance too', facts(60_000, { state: 'runnable', cpuMs: PAST + COLD_START_CPU_MS, stillMs: 0 }, true), /CPU time/],
    ['stopped (SIGSTOP)', facts(PAST, { state: 'stopped', cpuMs: 0, stillMs: 0 }), /it was stopped/],
    ['asleep with work waiting, still for a while', facts(PAST, { state: 'asleep', cpuMs: 10, stillMs: STILL_MS }), /asleep with work waiting/],
    ['asleep at one look only', facts(PAST, { state: 'asleep', cpuMs: 10, stillMs: STILL_MS - 1 }), undefined],
    ['gone (its exit settles its jobs)', facts(60_000, { state: 'gone', cpuMs: 0, stillMs: 60_000 }), undefined],
    ['no /proc: the wall clock', facts(PAST, undefined), /stopped answering for 3001 ms/],
    ['no /proc, new: a longer wall clock', facts(PAST, undefined, true), undefined],
  ])('%s', (_, given, expected) => {
    const why = judgeSilence(given, LIMITS);
    if (expected === undefined) expect(why).toBeUndefined();
    else expect(why).toMatch(expected);
  });

  test('modules add their load time to the CPU allowance', () => {
    const given = facts(60_000, { state: 'runnable', cpuMs: PAST + 5 * LIMITS.timeoutMs - 1, stillMs: 0 });
    expect(judgeSilence(given, { ...LIMITS, modules: 1 })).toBeUndefined();
    expect(judgeSilence(given, LIMITS)).toMatch(/CPU time/);
  });
});

/**
 * `n` processes that keep a CPU busy for `ms` and then end by themselves (bounded even if the test
 * dies); `stop()` kills each by its PID.
 */
function saturate(n: number, ms: number): { over: Promise<void>; stop(): void } {
  const hogs = Array.from({ length: n }, () => spawn(process.execPath, ['-e', `const end = Date.now() + ${ms}; while (Date.now() < end);`], { stdio: 'ignore' }));
  const over = Promise.all(hogs.map((hog) => new Promise<void>((resolve) => (hog.exitCode !== null ? resolve() : hog.once('exit', () => resolve()))))).then(() => undefined);
  return {
    over,
    stop() {
      for (const hog of hogs) {
        if (hog.exitCode !== null || hog.signalCode !== null || hog.pid === undefined) continue;
        try {
          process.kill(hog.pid, 'SIGKILL');
        } catch {
          // ended meanwhile
        }
      }
    },
  };
}

const SCRIPT = 'var n = 0; for (var i = 0; i < 1000; i++) n += i; this.n = n;';
const compiled = new WeakMap<ScriptRuntime, Script>();
/** A run of a cheap, healthy script (compiled once per runtime). */
function run(runtime: ScriptRuntime, input: Partial<RunInput> = {}) {
  let script = compiled.get(runtime);
  if (script === undefined) compiled.set(runtime, (script = runtime.compile(SCRIPT, 'healthy/get.js')));
  return runtime.run(script, { thisObj: {}, locals: {}, ...input });
}

describe.skipIf(!progressAvailable())('the pool on a busy machine (Linux /proc)', () => {
  test('saturated by other processes: no healthy script process is killed, a new one may start, a stopped one is still found', async () => {
    const warm = setup({ isolates: 2, timeoutMs: 1000, staticPlans: false });
    const stoppable = setup({ isolates: 1, timeoutMs: 1000, staticPlans: false });
    await Promise.all([run(warm.runtime), run(warm.runtime), run(stoppable.runtime)]);
    const pids = warm.runtime.processIds();
    const [stopped] = stoppable.runtime.processIds() as [number];
    // Four busy processes per core at normal priority: script processes (the lowest) get almost no CPU.
    const hogs = saturate(4 * availableParallelism(), 12_000);
    let over = false;
    void hogs.over.then(() => (over = true));
    const outcomes: PromiseSettledResult<unknown>[] = [];
    try {
      // A process stopped meanwhile (SIGSTOP): found by its state, while the machine is saturated.
      process.kill(stopped, 'SIGSTOP');
      const stoppedRun = run(stoppable.runtime).then(
        () => 'answered',
        (err: Error) => err,
      );
      // A process started meanwhile (a cold start on a saturated machine).
      const cold = setup({ isolates: 1, timeoutMs: 1000, staticPlans: false });
      const coldRun = run(cold.runtime);
      // Each run with a request's budget: the CPU time a starved call did not use is not charged.
      const budget = () => new RunBudget({ cpuMs: 300, wallMs: 120_000 });
      while (!over) outcomes.push(...(await Promise.allSettled(Array.from({ length: 8 }, () => run(warm.runtime, { budget: budget() })))));
      outcomes.push(...(await Promise.allSettled([coldRun])));
      const stoppedOutcome = await stoppedRun;
      expect(stoppedOutcome).toBeInstanceOf(ScriptTimeoutError);
      expect((stoppedOutcome as Error).message).toMatch(/^script process ended: it stopped answering for \d+ ms: it was stopped/);
      expect(cold.lines.filter((line) => line.includes('killed'))).toEqual([]);
    } finally {
      hogs.stop();
      try {
        process.kill(stopped, 'SIGCONT');
      } catch {
        // killed by the pool already
      }
    }
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(8);
    expect(warm.lines.filter((line) => line.includes('killed'))).toEqual([]);
    expect(warm.runtime.processIds()).toEqual(pids);
  }, 120_000);

  test('a run the machine stopped in the middle is charged the CPU time it used, not the time it waited', async () => {
    const { runtime } = setup({ isolates: 1, timeoutMs: 20_000, staticPlans: false });
    await run(runtime);
    const [pid] = runtime.processIds() as [number];
    // About a second of CPU (more on a slow machine), in one call.
    const script = runtime.compile('var n = 0, t = Date.now(); while (Date.now() - t < 1000) n++; this.n = n;', 'long/get.js');
    const cpu0 = readProgress(pid)?.cpuMs ?? 0;
    const running = runtime.run(script, { thisObj: {}, locals: {}, budget: new RunBudget({ cpuMs: 5000, wallMs: 120_000 }) });
    await expect.poll(() => (readProgress(pid)?.cpuMs ?? 0) - cpu0, { timeout: 30_000, interval: 20 }).toBeGreaterThan(50);
    // Stopped for 6 s in the middle of the call: the clock says 7 s or more, the CPU about 1.
    process.kill(pid, 'SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, 6000));
    process.kill(pid, 'SIGCONT');
    expect((await running).thisObj.n).toBeGreaterThan(0);
  }, 120_000);

  test('a call the clock stopped while the machine kept its process from running blames no script: the run goes again', async () => {
    const { runtime, lines } = setup({ isolates: 1, timeoutMs: 300, staticPlans: false });
    await run(runtime);
    const [pid] = runtime.processIds() as [number];
    // A tenth of a second of CPU or so, in one call, counted in iterations (not by the clock).
    const script = runtime.compile('var n = 0; for (var i = 0; i < 5e7; i++) n += i % 7; this.n = n;', 'steady/get.js');
    const cpu0 = readProgress(pid)?.cpuMs ?? 0;
    const running = runtime.run(script, { thisObj: {}, locals: {} });
    await expect.poll(() => (readProgress(pid)?.cpuMs ?? 0) - cpu0, { timeout: 30_000, interval: 5 }).toBeGreaterThan(10);
    // The machine saturated in the middle of the call: it gets almost no CPU until the time
    // limit, stretched at most ten times, has passed by the clock.
    const hogs = saturate(4 * availableParallelism(), 6000);
    try {
      expect((await running).thisObj.n).toBeGreaterThan(0);
    } finally {
      hogs.stop();
    }
    expect(lines.join('\n')).toMatch(/stopped by the wall clock after the machine kept its script process from running.*1 job\(s\) were in it and run again/);
  }, 120_000);

  const HUNG_HOST = fileURLToPath(new URL('./fixtures/hung-script-host.mjs', import.meta.url));
  const hungPool = (mode: 'busy' | 'asleep', lines: string[]) =>
    new ScriptPool({ size: 1, memoryLimitMb: 64, timeoutMs: 300, queueLimit: 10, log: (line) => lines.push(line), modules: [], entry: { file: HUNG_HOST, execArgv: [], args: [mode] } });

  test.each(['busy', 'asleep'] as const)('a process %s with work waiting, never answering, is killed and its job fails', async (mode) => {
    const lines: string[] = [];
    const pool = hungPool(mode, lines);
    try {
      const script = new CompiledScript(1, 'hung/get.js', 'this.x = 1;', {});
      const err = await pool.submit(script, 1, '[]', []).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ScriptTimeoutError);
      expect((err as Error).message).toMatch(mode === 'busy' ? /^script process ended: it stopped answering while it used \d+ ms of CPU time \(time limit 300 ms\)$/ : /asleep with work waiting/);
      expect(lines.join('\n')).toMatch(/had work and it stopped answering.*killed and replaced; 1 job/);
    } finally {
      pool.dispose();
    }
  }, 120_000);

  test('readProgress: a running, a stopped and an ended process', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const pid = child.pid as number;
    try {
      expect(readProgress(process.pid)?.state).toBe('runnable');
      process.kill(pid, 'SIGSTOP');
      await expect.poll(() => readProgress(pid)?.state).toBe('stopped');
      process.kill(pid, 'SIGCONT');
      await expect.poll(() => readProgress(pid)?.state).not.toBe('stopped');
    } finally {
      child.kill('SIGKILL');
    }
    await new Promise((resolve) => child.once('exit', resolve));
    expect(readProgress(pid)?.state).toBe('gone');
  });
});
