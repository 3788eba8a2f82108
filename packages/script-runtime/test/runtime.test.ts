import { describe, expect, test } from 'vitest';
import { createScriptRuntime } from '@svc/script-runtime';
import type { Script, ScriptRuntime } from '@svc/script-runtime';
import { expectTypeOf } from 'vitest';
import { setup } from './helpers.js';

describe('runtime', () => {
  test('a script compiled by another runtime is refused', async () => {
    const { runtime } = setup();
    const other = createScriptRuntime();
    const script = other.compile('1', 'x.js');
    other.dispose();
    await expect(runtime.run(script, { thisObj: {}, locals: {} })).rejects.toThrow('not compiled by this runtime');
  });

  test('after dispose, calls fail', async () => {
    const runtime = createScriptRuntime();
    const script = runtime.compile('1', 'x.js');
    runtime.dispose();
    await expect(runtime.run(script, { thisObj: {}, locals: {} })).rejects.toThrow('disposed');
    expect(() => runtime.compile('1', 'y.js')).toThrow('disposed');
  });

  test('dispose rejects runs in flight', async () => {
    const runtime = createScriptRuntime();
    const pending = runtime.run(runtime.compile('await never();', 'x.js'), { thisObj: {}, locals: {}, host: { never: () => new Promise(() => undefined) } });
    runtime.dispose();
    await expect(pending).rejects.toThrow('disposed');
  });

  test('a throwing log function does not hang the run', async () => {
    const runtime = createScriptRuntime({
      log: () => {
        throw new Error('logger down');
      },
    });
    const errors: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void errors.push(args);
    try {
      const result = await runtime.run(runtime.compile("console.log('a'); this.ok = true;", 'x.js'), { thisObj: {}, locals: {} });
      expect(result.thisObj.ok).toBe(true);
      expect(errors).toHaveLength(1);
    } finally {
      console.error = original;
      runtime.dispose();
    }
  });

  test('console lines beyond the buffer limit are counted, not kept', async () => {
    const { exec, lines } = setup();
    await exec('for (var i = 0; i < 10005; i++) console.log(i);');
    expect(lines).toHaveLength(10_001);
    expect(lines[10_000]).toBe('warn: script-runtime: 5 console lines dropped');
  });

  test('options are validated', () => {
    expect(() => createScriptRuntime({ timeoutMs: 0 })).toThrow(TypeError);
    expect(() => createScriptRuntime({ memoryLimitMb: -1 })).toThrow(TypeError);
  });

  test('public types', () => {
    expectTypeOf<ScriptRuntime['compile']>().returns.toEqualTypeOf<Script>();
    expectTypeOf<Script['filename']>().toEqualTypeOf<string>();
  });
});
