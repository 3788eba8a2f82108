import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { ScriptTimeoutError } from '@svc/script-runtime';
import { CompiledScript } from '../src/internal/compiled-script.js';
import { progressAvailable, readProgress } from '../src/internal/process-progress.js';
import { ScriptPool } from '../src/internal/script-pool.js';
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

// The tests with the machine saturated by other processes are in reliability/busy-machine.test.ts
// (one file at a time there: here they would starve the script processes of every test beside).
describe.skipIf(!progressAvailable())('the pool judges silent processes (Linux /proc)', () => {
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
