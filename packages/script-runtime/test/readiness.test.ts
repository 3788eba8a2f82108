import { describe, expect, test } from 'vitest';
import { setup } from './helpers.js';

// Issue 23 (2): /readyz asks whether scripts can run, without running one.

/** Waits (bounded) until the runtime has a script process other than `pid`. */
async function replaced(runtime: ReturnType<typeof setup>['runtime'], pid: number | undefined): Promise<number | undefined> {
  for (let i = 0; i < 150; i++) {
    const [next] = runtime.processIds();
    if (next !== undefined && next !== pid) return next;
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

describe('script runtime readiness', () => {
  // Without static plans: the warm-up runs must start a script process.
  test('ready before any run, while processes run, and after one is replaced', async () => {
    const { runtime, exec } = setup({ isolates: 1, staticPlans: false });
    expect(runtime.ready()).toBe(true);
    await exec('this.warm = true;');
    expect(runtime.ready()).toBe(true);
    const [pid] = runtime.processIds();
    process.kill(pid as number, 'SIGKILL');
    expect(await replaced(runtime, pid)).toBeDefined();
    expect(runtime.ready()).toBe(true);
  }, 20_000);

  test('not ready once a process that keeps dying is held back from restarting; not ready once disposed', async () => {
    const { runtime, exec } = setup({ isolates: 1, staticPlans: false });
    await exec('this.warm = true;');
    let pid = runtime.processIds()[0];
    // The pool starts a slot's process 20 times a minute at most: the 20th death leaves it empty.
    let kills = 0;
    while (pid !== undefined && kills < 25) {
      expect(runtime.ready()).toBe(true);
      process.kill(pid, 'SIGKILL');
      kills++;
      pid = await replaced(runtime, pid);
    }
    expect(kills).toBe(20);
    expect(runtime.ready()).toBe(false);
    expect(runtime.processIds()).toEqual([]);
    runtime.dispose();
    expect(runtime.ready()).toBe(false);
  }, 30_000);
});
