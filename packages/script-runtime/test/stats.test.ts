import { expect, test } from 'vitest';
import { ScriptBusyError, ScriptTimeoutError } from '@svc/script-runtime';
import { setup } from './helpers.js';

const spin = (ms: number) => `var t0 = Date.now(); while (Date.now() - t0 < ${ms}) {}`;

test('stats() counts runs, timeouts, refusals and the runs waiting now', async () => {
  const { runtime } = setup({ isolates: 1, timeoutMs: 300, queueLimit: 2 });
  expect(runtime.stats()).toEqual({ runs: 0, timeouts: 0, busy: 0, planned: 0, queued: 0 });
  const ok = runtime.compile('this.ok = true;', 'ok.js');
  await runtime.run(ok, { thisObj: {}, locals: {} });
  await runtime.runBatch(ok, [{ thisObj: {}, locals: {} }, { thisObj: {}, locals: {} }]);
  // this.ok = true is a static plan: answered without a script process.
  expect(runtime.stats()).toMatchObject({ runs: 2, timeouts: 0, planned: 2 });

  await expect(runtime.run(runtime.compile('while (true) {}', 'loop.js'), { thisObj: {}, locals: {} })).rejects.toBeInstanceOf(ScriptTimeoutError);
  expect(runtime.stats()).toMatchObject({ runs: 3, timeouts: 1, busy: 0 });

  // Past the queue limit runs are refused at once: each refusal is counted.
  const slow = runtime.compile(spin(50), 'slow.js');
  const outcomes = await Promise.all(Array.from({ length: 6 }, () => runtime.run(slow, { thisObj: {}, locals: {} }).then(() => 'ok', (e: unknown) => e)));
  const refused = outcomes.filter((o) => o instanceof ScriptBusyError).length;
  expect(refused).toBeGreaterThan(0);
  expect(runtime.stats()).toEqual({ runs: 9, timeouts: 1, busy: refused, planned: 2, queued: 0 });
});
