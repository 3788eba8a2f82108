import { availableParallelism } from 'node:os';
import ivm from 'isolated-vm';
import { ScriptBusyError, ScriptInputError, ScriptSyntaxError, ScriptTimeoutError } from './errors.js';
import type { RunInput, RunResult, Script, ScriptRuntime, ScriptRuntimeOptions, ScriptRuntimeStats } from './types.js';
import { decodeChanges, decodeJob, encodeColumns, encodeJob, encodeRun, isInputList } from './internal/codec.js';
import type { JobInputs } from './internal/codec.js';
import { CompiledScript } from './internal/compiled-script.js';
import { exceedsDepth, MAX_INPUT_DEPTH } from './internal/depth.js';
import { ScriptPool } from './internal/script-pool.js';
import { planScript } from './internal/static-plan.js';
import { runPlan, runPlanColumns } from './internal/static-plan-run.js';
import { validateModules } from './check-script-modules.js';
import { parseSyntaxMessage } from './internal/wrap-source.js';

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number`);
  return value;
}

/** The standalone parse of a body, run in the syntax isolate: the body must not close its wrapper. */
const CHECK_SOURCE = `(function (source) {
  try { new (Object.getPrototypeOf(async function () {}).constructor)(source); return ''; }
  catch (err) { return err instanceof Error ? err.message : String(err); }
})`;

/**
 * Parses scripts in the server process without running anything: compile() must throw syntax
 * errors synchronously, at start, with file and line. Code only ever runs in the script processes.
 */
class SyntaxChecker {
  private isolate: ivm.Isolate | undefined;
  private check: ivm.Reference | undefined;

  verify(script: CompiledScript): void {
    if (!this.isolate || this.isolate.isDisposed) {
      this.isolate = new ivm.Isolate({ memoryLimit: 32 });
      const context = this.isolate.createContextSync();
      this.check = context.evalSync(CHECK_SOURCE, { reference: true }) as ivm.Reference;
    }
    try {
      this.isolate.compileScriptSync(script.wrapped, { filename: script.filename }).release();
    } catch (err) {
      const parsed = parseSyntaxMessage(err instanceof Error ? err.message : String(err), script.prefixLength);
      throw new ScriptSyntaxError(parsed.message, { filename: script.filename, line: parsed.line, column: parsed.column });
    }
    const standalone = (this.check as ivm.Reference).applySync(undefined, [script.source], { timeout: 5000 }) as string;
    if (standalone) throw new ScriptSyntaxError(standalone, { filename: script.filename });
  }

  dispose(): void {
    if (this.isolate && !this.isolate.isDisposed) this.isolate.dispose();
    this.isolate = undefined;
  }
}

/**
 * Refuses request data nested deeper than a script may receive (a 400 for the request that sent
 * it). Only locals are walked: `this` comes from stored or sanitised objects, whose depth the
 * store's rules bound already, and On Get lists would pay for a walk of every object.
 */
function checkDepth(inputs: JobInputs, filename: string): void {
  if (isInputList(inputs) && inputs.length === 1) {
    // One run (an event of one request): nothing to deduplicate.
    if (exceedsDepth((inputs[0] as RunInput).locals, MAX_INPUT_DEPTH + 1)) throw new ScriptInputError(`request data nested deeper than ${MAX_INPUT_DEPTH} levels`, { filename });
    return;
  }
  const seen = new Set<unknown>();
  const tooDeep = (locals: unknown): boolean => {
    if (seen.has(locals)) return false;
    seen.add(locals);
    return exceedsDepth(locals, MAX_INPUT_DEPTH + 1);
  };
  const bad = isInputList(inputs) ? inputs.some((input) => tooDeep(input.locals)) : tooDeep(inputs.shared.locals);
  if (bad) throw new ScriptInputError(`request data nested deeper than ${MAX_INPUT_DEPTH} levels`, { filename });
}

/**
 * Creates a script runtime: scripts run in a pool of script processes, each with one isolate
 * (see ScriptPool). Scripts are compiled once per process; each run gets a fresh scope. compile()
 * checks the syntax in this process (nothing runs here).
 */
export function createScriptRuntime(options: ScriptRuntimeOptions = {}): ScriptRuntime {
  const modules = options.modules ?? [];
  validateModules(modules);
  const pool = new ScriptPool({
    size: Math.max(1, Math.floor(positive(options.isolates, availableParallelism(), 'isolates'))),
    // isolated-vm's minimum is 8 MB.
    memoryLimitMb: Math.max(8, positive(options.memoryLimitMb, 64, 'memoryLimitMb')),
    timeoutMs: positive(options.timeoutMs, 1000, 'timeoutMs'),
    queueLimit: Math.max(1, Math.floor(positive(options.queueLimit, 1000, 'queueLimit'))),
    log: options.log ?? ((line: string) => console.log(line)),
    modules,
  });
  const syntax = new SyntaxChecker();
  const owner = {};
  let nextScriptId = 1;
  let nextJobId = 1;
  let disposed = false;
  const counts: Omit<ScriptRuntimeStats, 'queued'> = { runs: 0, timeouts: 0, busy: 0, planned: 0 };
  const staticPlans = options.staticPlans !== false;

  /** Counts the job's failure kinds; the error goes on to the caller. */
  function counted(err: unknown): never {
    if (err instanceof ScriptTimeoutError) counts.timeouts++;
    else if (err instanceof ScriptBusyError) counts.busy++;
    throw err;
  }

  function own(script: Script): CompiledScript {
    if (disposed) throw new Error('script runtime disposed');
    if (!(script instanceof CompiledScript) || script.owner !== owner) {
      throw new TypeError('script was not compiled by this runtime');
    }
    return script;
  }

  /**
   * The job's results by the script's static plan, computed here without a script process, or
   * undefined when it has none or a run declines (internal/static-plan-run.ts).
   */
  function planned(script: CompiledScript, inputs: JobInputs, inPlace: boolean) {
    if (script.plan === undefined) return undefined;
    checkDepth(inputs, script.filename);
    const results = runPlan(script.plan, script.usage.thisProps, inputs, inPlace);
    if (results !== undefined) counts.planned++;
    return results;
  }

  function submit(script: CompiledScript, inputs: JobInputs) {
    if (script.plan === undefined) checkDepth(inputs, script.filename);
    const jobId = nextJobId;
    nextJobId = jobId >= 0x7fffffff ? 1 : jobId + 1;
    const { json, hosts } = isInputList(inputs) && inputs.length === 1 ? encodeRun(script.id, jobId, inputs[0] as RunInput, script.usage) : encodeJob(script.id, jobId, inputs, script.usage);
    const budget = isInputList(inputs) ? inputs[0]?.budget : inputs.shared.budget;
    return pool.submit(script, jobId, json, hosts, budget);
  }

  return {
    compile(source, filename) {
      if (disposed) throw new Error('script runtime disposed');
      if (typeof source !== 'string' || typeof filename !== 'string') throw new TypeError('source and filename must be strings');
      const script = new CompiledScript(nextScriptId++, filename, source, owner);
      syntax.verify(script);
      if (staticPlans) {
        const outcome = planScript(source);
        if ('plan' in outcome) script.plan = outcome.plan;
      }
      return script;
    },

    async run(script, input) {
      const compiled = own(script);
      counts.runs++;
      try {
        const [planResult] = planned(compiled, [input], false) ?? [];
        if (planResult !== undefined) return planResult;
        const [result] = decodeJob(await submit(compiled, [input]), [input.thisObj], compiled);
        return result as RunResult;
      } catch (err) {
        return counted(err);
      }
    },

    runNow(script, input, options = {}) {
      const compiled = own(script);
      if (compiled.plan === undefined) return undefined;
      const inPlace = options.inPlace === true;
      let result: RunResult | undefined;
      // A refusal before any run (request data nested too deep) throws uncounted: the caller's
      // run() of it counts the run, as for a declined one.
      // A constant plan (GET by id's `this.seen = true`) is evaluated once per script.
      const constant = compiled.runsOfConstant();
      if (constant !== undefined) {
        checkDepth([input], compiled.filename);
        result = constant.run(input, inPlace);
        if (result !== undefined) counts.planned++;
      }
      if (result === undefined) [result] = planned(compiled, [input], inPlace) ?? [];
      // Counted as a job only when it was one: a declined run is run() next and counted there.
      if (result !== undefined) counts.runs++;
      return result;
    },

    async runBatch(script, inputs, options = {}) {
      const compiled = own(script);
      if (inputs.length === 0) return [];
      counts.runs++;
      try {
        const results = planned(compiled, inputs, options.inPlace === true);
        if (results !== undefined) return results;
        return decodeJob(await submit(compiled, inputs), inputs.map((input) => input.thisObj), compiled, options.inPlace === true);
      } catch (err) {
        return counted(err);
      }
    },

    async runEach(script, shared, objects, options = {}) {
      const compiled = own(script);
      if (objects.length === 0) return [];
      counts.runs++;
      try {
        const results = planned(compiled, { shared, objects }, options.inPlace === true);
        if (results !== undefined) return results;
        return decodeJob(await submit(compiled, { shared, objects }), objects, compiled, options.inPlace === true);
      } catch (err) {
        return counted(err);
      }
    },

    async runColumns(script, shared, keys, values, count) {
      const compiled = own(script);
      if (compiled.reads === undefined) throw new TypeError('runColumns: the script uses `this` as a whole (Script.reads is undefined)');
      if (values.length !== count * keys.length) throw new TypeError('runColumns: values must hold keys.length values per object');
      if (count === 0) return [];
      counts.runs++;
      try {
        checkDepth({ shared, objects: [] }, compiled.filename);
        if (compiled.plan !== undefined) {
          const changes = runPlanColumns(compiled.plan, compiled.usage.thisProps, { shared, keys, values, count });
          if (changes !== undefined) {
            counts.planned++;
            return changes;
          }
        }
        const jobId = nextJobId;
        nextJobId = jobId >= 0x7fffffff ? 1 : jobId + 1;
        const { json, hosts } = encodeColumns(compiled.id, jobId, shared, keys, values, count, compiled.usage);
        return decodeChanges(await pool.submit(compiled, jobId, json, hosts, shared.budget), count, compiled);
      } catch (err) {
        return counted(err);
      }
    },

    ready() {
      return !disposed && pool.ready();
    },

    processIds() {
      return pool.pids();
    },

    stats() {
      return { ...counts, queued: pool.queued };
    },

    dispose() {
      if (disposed) return;
      disposed = true;
      pool.dispose();
      syntax.dispose();
    },
  };
}
