import { afterAll, afterEach } from 'vitest';
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

let sharedRuntime: { runtime: ScriptRuntime; exec: Exec } | undefined;

afterAll(() => {
  sharedRuntime?.runtime.dispose();
  sharedRuntime = undefined;
});

/**
 * One runtime with default options for every test of a file that only runs scripts, as a server
 * shares one runtime between all its requests: starting script processes per test was most of
 * these files' time. Only for tests that compile and run: a test that configures, inspects, kills or
 * disposes its runtime, or reads its log lines, uses setup().
 */
export function shared(): { runtime: ScriptRuntime; exec: Exec } {
  if (sharedRuntime === undefined) {
    const { runtime, exec } = setup();
    open.splice(open.indexOf(runtime), 1);
    sharedRuntime = { runtime, exec };
  }
  return sharedRuntime;
}

/** Compiles and runs a source once. */
export type Exec = (source: string, input?: Partial<RunInput>) => Promise<RunResult>;

/** A promise and its resolver, for host functions that the test settles by hand. */
export function deferred<T = unknown>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
