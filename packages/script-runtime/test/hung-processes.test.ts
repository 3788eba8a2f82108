import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { ScriptTimeoutError } from '@svc/script-runtime';
import { CompiledScript } from '../src/internal/compiled-script.js';
import { progressAvailable } from '../src/internal/process-progress.js';
import { ScriptPool } from '../src/internal/script-pool.js';

// Issue 38 item 7: the pool judges a silent script process by its own progress (silence.test.ts);
// a process that truly hangs, busy or asleep with work waiting, is still found and replaced. The
// hung processes are a fixture of their own (fixtures/hung-script-host.mjs) run as the pool's
// script processes. In vitest.slow.ts: one spins a CPU for seconds.

describe.skipIf(!progressAvailable())('hung script processes (Linux /proc)', () => {
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
});
