import type { RunBudget } from './budget.js';

/** Options of {@link createScriptRuntime}. */
export interface ScriptRuntimeOptions {
  /** Heap limit of each isolate in MB (default 64). A run that exceeds it fails with ScriptMemoryError. */
  memoryLimitMb?: number;
  /**
   * Time in ms that one uninterrupted stretch of script code may run (default 1000): the
   * synchronous part of a run, or the callbacks and continuations after one host call's reply.
   * Exceeding it fails the run with ScriptTimeoutError. Time spent waiting for host calls is free.
   */
  timeoutMs?: number;
  /**
   * How many script processes (each with one isolate) run scripts in parallel; default one per
   * core. A script that loops or runs out of memory keeps or takes down only its process.
   */
  isolates?: number;
  /** Receives every console.log/warn/error line of a script, prefixed by the run's label. Default: console.log. */
  log?: (line: string) => void;
  /**
   * Runs that may wait for a script process (default 1000); one client may hold half of them.
   * Past that, runs fail at once with ScriptBusyError (callers answer 503 with Retry-After).
   */
  queueLimit?: number;
  /**
   * Modules scripts may `require(name)`: each evaluated once per isolate, after the realm is
   * sealed (its top-level code within 5 x `timeoutMs`), its exports deep-frozen. Any other name throws in the script. Check them at start
   * with {@link checkScriptModules}: a module that throws or loops at load fails every run.
   */
  modules?: readonly ScriptModule[];
  /**
   * Whether scripts in the static subset (guards, hide(), constant properties: see the README)
   * are run as plans in this process without a script process (default true). Their results are
   * the same; false sends every run to the script processes.
   */
  staticPlans?: boolean;
}

/**
 * A module for `require()` in scripts: CommonJS source with every dependency bundled in (a
 * `require` it still makes is answered like a script's: only other named modules).
 */
export interface ScriptModule {
  /** The name scripts require it by, e.g. 'moment' or 'lodash/fp'. */
  name: string;
  /** The bundled source: runs with `module`, `exports` and `require` in scope. */
  source: string;
}

/** A compiled event script, bound to the runtime that compiled it. */
export interface Script {
  /** The name given to compile(); used in error messages, stack traces and errors' `filename`. */
  readonly filename: string;
  /**
   * The identifiers the source mentions (a superset of the variables it can reach: names in strings
   * and comments count too); undefined when it calls eval. Only these locals are copied per run,
   * and a caller may skip building a local whose name is not here.
   */
  readonly names: ReadonlySet<string> | undefined;
  /**
   * The properties of `this` the source names (`this.<name>`, read or written); undefined when it
   * may use the whole object (`this[k]`, `JSON.stringify(this)`, changed(), eval). Only these
   * cross per run, and runColumns() takes objects as these values.
   */
  readonly reads: readonly string[] | undefined;
  /**
   * True when the script is in the static subset: its runs are answered from a plan in the
   * calling process (no code runs), except runs whose inputs the plan does not model.
   */
  readonly planned: boolean;
  /**
   * True when the script is planned, its plan reads nothing (no condition: `this.seen = true`,
   * `hide('secret')`) and it does not always cancel (an unconditional cancel() or error()): every
   * run gives the same object whatever the request, but for what `this` held before. A caller
   * without a request at hand may still answer it with runNow().
   */
  readonly constant: boolean;
}

/**
 * Functions a script may call that run in Node. Names with dots build nested objects inside the
 * script: `'svc.todos.get'` is called as `svc.todos.get(...)`. Arguments and results are copied as
 * JSON. A trailing function argument given by the script is a callback `fn(result, error)` and is
 * not passed to the host function; every call also returns a promise inside the script.
 */
export interface HostApi {
  [name: string]: (...args: unknown[]) => unknown | Promise<unknown>;
}

/** The input of one event run on one object. */
export interface RunInput {
  /** The object the event is about: `this` in the script. JSON data, copied into the isolate. */
  thisObj: Record<string, unknown>;
  /**
   * JSON data exposed as script variables for this run only: me, query, previous, internal, isRoot,
   * ctx, url, parts, body, fileSize, fileName, ... A key with the value `undefined` still declares
   * the variable. The names listed above are always declared (undefined when not given).
   */
  locals: Record<string, unknown>;
  /** Functions the script can call (emit, svc.<resource>.<method>, ...). */
  host?: HostApi;
  /**
   * Properties hidden and protected from the start of the run, by an earlier event of the same
   * request (On Validate before On Put) or by the server (`id` on an update): the script sees them
   * as if it had called hide()/protect() itself, and the result's `hidden`/`protected` are then
   * the lists after the run (unhide()/unprotect() remove from them).
   */
  hidden?: readonly string[];
  protected?: readonly string[];
  /** Prefix of this run's console lines, e.g. 'todos On Post'. */
  label?: string;
  /**
   * The budget of the request the run belongs to, shared by all its runs: once spent (CPU time,
   * deadline) or cancelled, its runs fail with ScriptTimeoutError and its waiting runs are dropped.
   */
  budget?: RunBudget;
}

/** What a run produced. */
export interface RunResult {
  /**
   * `this` after the run (the script may change, add or delete properties): the input object
   * itself when the script changed nothing, else a copy with the changes (or, with runBatch's
   * `inPlace`, the input object changed). The input is never changed otherwise.
   */
  thisObj: Record<string, unknown>;
  /**
   * The properties of `this` the script assigned (their values are in `thisObj`) and deleted;
   * absent when it did neither. Nothing else of `thisObj` differs from the input, so a caller
   * holding the input's serialisation may patch it instead of serialising `thisObj` again.
   */
  assigned?: readonly string[];
  deleted?: readonly string[];
  /** Set by cancel()/cancelIf()/cancelUnless(); status defaults to 400. */
  cancelled?: { message: string; status: number };
  /** Collected by error()/errorIf()/errorUnless(), keyed by property. Any error means the caller cancels the request. */
  errors?: Record<string, string>;
  /** Properties passed to hide() and not to a later unhide(), in call order, without duplicates. */
  hidden: readonly string[];
  /** Properties passed to protect() and not to a later unprotect(), in call order, without duplicates. */
  protected: readonly string[];
  /** The value given to setResult() (Event resource). */
  result?: unknown;
  /** True when the script called setResult(). */
  setResultCalled?: boolean;
}

/**
 * What a run of runColumns() did: the properties of `this` it assigned with their new values
 * (`values[k]` is the value of `assigned[k]`, as JSON would copy it), those it deleted, and the
 * rest of a RunResult. No `thisObj`: the objects were given as values and nothing was copied.
 */
export type RunChanges = Omit<RunResult, 'thisObj'> & { values?: readonly unknown[] };

/** Compiles event scripts once and runs them in reused isolates with a fresh scope per run. */
export interface ScriptRuntime {
  /** Compiles a script; throws ScriptSyntaxError with filename, line and column on syntax errors. */
  compile(source: string, filename: string): Script;
  /**
   * Runs the script once. Resolves when the script and every host call it started (and their
   * callbacks) have finished. Rejects with ScriptRuntimeError, ScriptTimeoutError or ScriptMemoryError.
   */
  run(script: Script, input: RunInput): Promise<RunResult>;
  /**
   * run() answered at once by the script's static plan (Script.planned), in the calling process
   * and without a promise: the same result run() would give, or undefined when the script has no
   * plan or the plan does not model this run (then run() it). Never starts a script process.
   * Throws what run() would reject with before any run (ScriptInputError: request data nested
   * too deep). With `inPlace`, a changed `thisObj` is updated in place instead of copied (an
   * object the caller owns), as runBatch's.
   */
  runNow(script: Script, input: RunInput, options?: { inPlace?: boolean }): RunResult | undefined;
  /**
   * Runs the script once per input with a single call into the isolate (On Get over a list). The
   * results are in input order and equal those of N run() calls; the first failing input (in
   * input order) rejects the whole batch. With `inPlace`, each changed `thisObj` is updated in
   * place instead of copied (for objects the caller owns, such as a query's fresh results).
   */
  runBatch(script: Script, inputs: readonly RunInput[], options?: { inPlace?: boolean }): Promise<RunResult[]>;
  /**
   * runBatch for objects that share one input's locals, host and label (On Get over a list):
   * the same results, without an input object per object.
   */
  runEach(
    script: Script,
    shared: Omit<RunInput, 'thisObj'>,
    objects: readonly Record<string, unknown>[],
    options?: { inPlace?: boolean },
  ): Promise<RunResult[]>;
  /**
   * runEach for objects given as the values of the properties the script reads (Script.reads,
   * which must be defined): `values[i * keys.length + k]` is object i's value of `keys[k]`
   * (undefined: it has none), for `count` objects. The same runs as runEach over objects with
   * just those properties; nothing is copied or changed: each result tells the run's changes
   * (RunChanges), for a caller that holds each object's serialisation and patches it.
   */
  runColumns(script: Script, shared: Omit<RunInput, 'thisObj'>, keys: readonly string[], values: readonly unknown[], count: number): Promise<RunChanges[]>;
  /** Disposes the isolates; in-flight runs reject and later calls throw. */
  dispose(): void;
  /**
   * False when scripts cannot run now: disposed, or a script process that keeps dying is held
   * back from restarting. Cheap and runs nothing (readiness checks call it).
   */
  ready(): boolean;
  /** The process ids of the script processes (for tests that stop or kill one). */
  processIds(): number[];
  /** Counts since the runtime was made, and the runs waiting now (for metrics). */
  stats(): ScriptRuntimeStats;
}

/** What a {@link ScriptRuntime} has done: counts since it was made, and what waits now. */
export interface ScriptRuntimeStats {
  /** Jobs run: one per run(), runBatch() or runEach() call (planned ones included). */
  runs: number;
  /** Of those, the jobs answered by a static plan, without a script process. */
  planned: number;
  /** Jobs that failed with ScriptTimeoutError (the CPU time limit, or the request's budget). */
  timeouts: number;
  /** Jobs refused at once with ScriptBusyError (the queue was full). */
  busy: number;
  /** Jobs waiting for a script process now. */
  queued: number;
}
