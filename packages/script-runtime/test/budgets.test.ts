import { describe, expect, test } from 'vitest';
import { CallbackError, limitRepeats, RunBudget, ScriptBusyError, ScriptRuntimeError, ScriptTimeoutError } from '@svc/script-runtime';
import { deferred, setup } from './helpers.js';

const spin = (ms: number) => `var t0 = Date.now(); while (Date.now() - t0 < ${ms}) {}`;

describe('the pool watches its processes', () => {
  // Without static plans: this.x = 1 and such must reach a script process here.
  test('a stopped script process: its runs fail with "script process ended" within the time limit plus grace; a new process serves the next runs', async () => {
    const { runtime, exec } = setup({ isolates: 1, timeoutMs: 300, staticPlans: false });
    await exec('this.warm = true;');
    const [pid] = runtime.processIds();
    expect(pid).toBeGreaterThan(0);
    process.kill(pid as number, 'SIGSTOP');
    try {
      await expect(exec('this.x = 1;')).rejects.toThrow(/script process ended: it stopped answering/);
    } finally {
      // Killed by the pool already; continuing a dead process is harmless.
      try {
        process.kill(pid as number, 'SIGCONT');
      } catch {
        // gone
      }
    }
    expect((await exec('this.y = 2;')).thisObj).toEqual({ y: 2 });
    expect(runtime.processIds()).not.toContain(pid);
  }, 20_000);

  test('a process killed from outside is reported as "script process ended", not as the memory limit', async () => {
    const { runtime, exec } = setup({ isolates: 1, timeoutMs: 5000, staticPlans: false });
    await exec('this.warm = true;');
    const [pid] = runtime.processIds();
    const running = exec(spin(3000));
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid as number, 'SIGKILL');
    const err = await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ScriptRuntimeError);
    expect((err as Error).message).toMatch(/script process ended \(.*SIGKILL/);
    expect((await exec('this.ok = true;')).thisObj).toEqual({ ok: true });
  }, 20_000);
});

describe('request budgets', () => {
  test('runs of one budget share its CPU time: once spent, the run in flight fails and later ones are refused', async () => {
    const { runtime } = setup({ isolates: 1, timeoutMs: 1000 });
    const script = runtime.compile(`for (var i = 0; i < 50; i++) { ${spin(50)} await ping(); }`, 'spin.js');
    const budget = new RunBudget({ cpuMs: 300, wallMs: 60_000 });
    const run = runtime.run(script, { thisObj: {}, locals: {}, host: { ping: () => 1 }, budget });
    await expect(run).rejects.toThrow(ScriptTimeoutError);
    await expect(run).rejects.toThrow(/CPU budget of 300 ms/);
    expect(budget.spent).toBeGreaterThan(300);
    await expect(runtime.run(runtime.compile('this.a = 1;', 'a.js'), { thisObj: {}, locals: {}, budget })).rejects.toThrow(/CPU budget/);
  }, 20_000);

  test('a cancelled budget drops its waiting runs and fails its run in flight; other runs go on', async () => {
    const { runtime } = setup({ isolates: 1, timeoutMs: 2000 });
    const gate = deferred();
    const budget = new RunBudget({ cpuMs: 60_000, wallMs: 60_000, client: 'a' });
    const waiting = runtime.run(runtime.compile('await wait(); this.after = true;', 'w.js'), { thisObj: {}, locals: {}, host: { wait: () => gate.promise }, budget });
    const other = runtime.run(runtime.compile('this.other = true;', 'o.js'), { thisObj: {}, locals: {} });
    expect((await other).thisObj).toEqual({ other: true });
    budget.cancel('the client went away');
    await expect(waiting).rejects.toThrow(/the client went away/);
    gate.resolve(1);
    expect((await runtime.run(runtime.compile('this.next = true;', 'n.js'), { thisObj: {}, locals: {} })).thisObj).toEqual({ next: true });
  });

  test('a run queued behind one whose client went away runs once a process is free (it waited for an unrelated event before)', async () => {
    const { runtime } = setup({ isolates: 1, timeoutMs: 5000 });
    // Not measured yet, so costly: one at a time in the one process; B and C wait in one queue.
    const script = runtime.compile(spin(100), 'slow.js');
    const budget = (): RunBudget => new RunBudget({ cpuMs: 60_000, wallMs: 60_000, client: 'c' });
    const gone = budget();
    const first = runtime.run(script, { thisObj: {}, locals: {}, budget: budget() });
    const dropped = runtime.run(script, { thisObj: {}, locals: {}, budget: gone }).then(() => 'ran', (e: unknown) => e);
    const last = runtime.run(script, { thisObj: {}, locals: {}, budget: budget() });
    // The client of the second goes away as the first finishes: before the pool next sends, and
    // with nothing else in flight that would wake it up.
    await first.then(() => gone.cancel('the client went away'));
    expect(await dropped).toBeInstanceOf(ScriptTimeoutError);
    // Before the fix, the last run waited for some other event (a new request): here, for ever.
    const stalled = new Promise((r) => setTimeout(() => r('stalled'), 15_000).unref());
    expect(await Promise.race([last.then(() => 'ran'), stalled])).toBe('ran');
  }, 30_000);

  test('past the queue limit a run is refused with ScriptBusyError', async () => {
    const { runtime } = setup({ isolates: 1, timeoutMs: 2000, queueLimit: 2 });
    const script = runtime.compile(spin(100), 'slow.js');
    const runs = Array.from({ length: 6 }, () => runtime.run(script, { thisObj: {}, locals: {} }).then(() => 'ok', (e: unknown) => e));
    const outcomes = await Promise.all(runs);
    expect(outcomes.some((o) => o instanceof ScriptBusyError)).toBe(true);
    expect(outcomes.filter((o) => o === 'ok').length).toBeGreaterThan(0);
  });

  test('a CallbackError of a host function reaches the callback as its error; the promise resolves with the value', async () => {
    const { exec } = setup();
    const result = await exec(
      `var self = this; var got = await call(function (r, err) { self.r = r; self.err = err; }); this.got = got;`,
      { host: { call: () => new CallbackError('Recursive call to GET /x detected') } },
    );
    expect(result.thisObj).toEqual({ r: null, err: 'Recursive call to GET /x detected', got: null });
  });
});

describe('limitRepeats', () => {
  test('a line repeated is logged at most `max` times per window, then how many were dropped', async () => {
    const lines: string[] = [];
    const log = limitRepeats((line) => lines.push(line), { max: 3, windowMs: 200 });
    for (let i = 0; i < 20; i++) log('same');
    log('other');
    expect(lines).toEqual(['same', 'same', 'same', 'other']);
    for (let i = 0; i < 50 && lines.length < 5; i++) await new Promise((r) => setTimeout(r, 50));
    expect(lines[4]).toMatch(/^same \[repeated 17 more times within 0 s: not logged\]$/);
  });
});
