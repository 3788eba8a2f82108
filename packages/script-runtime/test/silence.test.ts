import { spawn } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { progressAvailable, readProgress } from '../src/internal/process-progress.js';
import { COLD_START_CPU_MS, judgeSilence, SILENCE_GRACE_MS, STILL_MS } from '../src/internal/silence.js';
import type { SilenceFacts } from '../src/internal/silence.js';

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

// Processes that hang are in hung-processes.test.ts, the machine saturated by other processes in
// reliability/busy-machine.test.ts (one file at a time: it would starve the tests beside it).
describe.skipIf(!progressAvailable())('process progress (Linux /proc)', () => {
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
