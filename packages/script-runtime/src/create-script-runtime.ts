import type { RunResult, Script, ScriptRuntime, ScriptRuntimeOptions } from './types.js';
import { decodeJob } from './internal/codec.js';
import { CompiledScript } from './internal/compiled-script.js';
import { IsolateWorker } from './internal/isolate-worker.js';

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number`);
  return value;
}

/**
 * Creates a script runtime: one isolate with one reused context. Scripts are compiled once; each
 * run gets a fresh scope. The isolate is rebuilt (and scripts recompiled) after it runs out of memory.
 */
export function createScriptRuntime(options: ScriptRuntimeOptions = {}): ScriptRuntime {
  const worker = new IsolateWorker({
    // isolated-vm's minimum is 8 MB.
    memoryLimitMb: Math.max(8, positive(options.memoryLimitMb, 64, 'memoryLimitMb')),
    timeoutMs: positive(options.timeoutMs, 1000, 'timeoutMs'),
    log: options.log ?? ((line: string) => console.log(line)),
  });
  const owner = {};
  let nextScriptId = 1;
  let disposed = false;

  function own(script: Script): CompiledScript {
    if (disposed) throw new Error('script runtime disposed');
    if (!(script instanceof CompiledScript) || script.owner !== owner) {
      throw new TypeError('script was not compiled by this runtime');
    }
    return script;
  }

  return {
    compile(source, filename) {
      if (disposed) throw new Error('script runtime disposed');
      if (typeof source !== 'string' || typeof filename !== 'string') throw new TypeError('source and filename must be strings');
      const script = new CompiledScript(nextScriptId++, filename, source, owner);
      worker.define(script);
      return script;
    },

    async run(script, input) {
      const compiled = own(script);
      const [result] = decodeJob(await worker.run(compiled, [input]), [input.thisObj], compiled);
      return result as RunResult;
    },

    async runBatch(script, inputs, options = {}) {
      const compiled = own(script);
      if (inputs.length === 0) return [];
      return decodeJob(await worker.run(compiled, inputs), inputs.map((input) => input.thisObj), compiled, options.inPlace === true);
    },

    async runEach(script, shared, objects, options = {}) {
      const compiled = own(script);
      if (objects.length === 0) return [];
      return decodeJob(await worker.run(compiled, { shared, objects }), objects, compiled, options.inPlace === true);
    },

    dispose() {
      if (disposed) return;
      disposed = true;
      worker.dispose();
    },
  };
}
