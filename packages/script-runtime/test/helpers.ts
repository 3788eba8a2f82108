import { afterEach } from 'vitest';
import { createScriptRuntime } from '@svc/script-runtime';
import type { RunInput, RunResult, ScriptRuntime, ScriptRuntimeOptions } from '@svc/script-runtime';

const open: ScriptRuntime[] = [];

afterEach(() => {
  for (const runtime of open.splice(0)) runtime.dispose();
});

/** A runtime disposed after the test, with its log lines collected. */
export function setup(options: ScriptRuntimeOptions = {}): { runtime: ScriptRuntime; lines: string[]; exec: Exec } {
  const lines: string[] = [];
  const runtime = createScriptRuntime({ log: (line) => lines.push(line), ...options });
  open.push(runtime);
  let n = 0;
  const exec: Exec = (source, input = {}) =>
    runtime.run(runtime.compile(source, `test/script-${++n}.js`), { thisObj: {}, locals: {}, ...input });
  return { runtime, lines, exec };
}

/** Compiles and runs a source once. */
export type Exec = (source: string, input?: Partial<RunInput>) => Promise<RunResult>;

/** A promise and its resolver, for host functions that the test settles by hand. */
export function deferred<T = unknown>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
