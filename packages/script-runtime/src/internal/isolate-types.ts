/** Types of the code that runs inside the isolate (erased at compile time; nothing here runs). */
import type { JobTables, JobWire, PackedJob } from './wire.js';
import type { NodeSandbox, NodeSandboxDeps } from './isolate-node.js';

/** A compiled script inside the isolate: called with a scope, returns the script body. */
export type ScriptFactory = (scope: object) => (this: Record<string, unknown>) => unknown;

/**
 * What the isolate exposes to Node. Node calls these with applySync and a timeout; the isolate
 * never calls Node. Calls that queue work report how many tasks are still queued (Node calls
 * `resume` until 0), so that one call never runs much longer than a time budget.
 */
export interface IsolateBridge {
  /**
   * `names`: JSON of the identifiers the source mentions, or null (SourceUsage.names); `assigned`:
   * JSON of the names it may assign without declaring them, or null (SourceUsage.assigned).
   */
  define(id: number, factory: ScriptFactory, names: string, assigned: string): void;
  /** Checks that the source parses on its own as a function body; returns the error message or ''. */
  check(source: string): string;
  /**
   * Queues the jobs of a JSON array of PackedJob and runs them. This and the next three answer
   * CollectWire JSON (or '' when there is nothing): what finished, log lines, host requests.
   */
  batch(json: string): string;
  /** Queues host call replies: JSON `[[callId, {r} | {e}], ...]`. */
  deliver(json: string): string;
  resume(): string;
  /** After the microtasks of the previous call ran: finishes settled runs, fails stuck ones. */
  collect(): string;
  /** Abandons a job (its run exceeded the CPU limit). */
  drop(jobId: number): void;
  /** Runs a module's factory (before any script) and keeps its deep-frozen exports for require(). */
  load(name: string, factory: (module: { exports: unknown }, exports: unknown, require: (name: string) => unknown, globals: object) => void): void;
}

/** A job's JobTables as parsed, with what the isolate derives from them (kept per distinct text). */
export interface LiveTables extends JobTables {
  trees: Map<string, HostNode>[];
  /** K with internalised keys. */
  shapes: string[][];
  /** No host table has a function. */
  hostless: boolean;
}

/** A job inside the isolate: its tables, the runs' input and the output built so far. */
export interface IsolateJob {
  id: number;
  scriptId: number;
  factory: ScriptFactory;
  /** The script may go on in microtasks (SourceUsage.deferred). */
  defer: boolean;
  /** Not deferred and without host functions: runs end with their body and share one scope. */
  fast: boolean;
  /** For fast jobs: the script body bound to the shared scope. */
  bound: ((this: Record<string, unknown>) => unknown) | undefined;
  /** Names the script may assign without declaring them (null: any, it calls eval). */
  assigned: ReadonlySet<string> | null;
  /** Per run index: what is hidden and protected from its start (PackedJob's 6). */
  start: PackedJob[6];
  /** Items as sent: [combination, ...values] each (see JobWire). */
  items: unknown[];
  combos: JobWire['C'];
  shapes: string[][];
  locals: JobWire['L'];
  /** Locals tables used by several runs: each run gets its own copy of object values. */
  localsShared: boolean[];
  trees: Map<string, HostNode>[];
  labels: string[];
  count: number;
  /** Offset in `items` of the next run to start. */
  next: number;
  /** Items still to start like the previous one (a -n in `items`), and that one's combination. */
  repeats: number;
  lastCombo: JobWire['C'][number] | undefined;
  started: number;
  /** Runs whose outcome is in `out`; later ones that finished early wait in `early`. */
  emitted: number;
  early: Map<number, unknown[]> | undefined;
  /** Outcomes, flat (see RUN_FLAGS in wire.ts), and the key lists they refer to. */
  out: unknown[];
  outShapes: string[][];
  outShapeIndex: Map<string, number> | undefined;
  lastShape: number;
  /** Where the last outcome that is not a REPEAT starts in `out` (-1: none yet). */
  lastPiece: number;
  /** Started runs that have not finished (made when the first one outlives its start). */
  live: Set<IsolateRun> | undefined;
  /** The one run record a fast job reuses for all its runs. */
  record: IsolateRun | undefined;
  dropped: boolean;
}

/** A host call waiting for its reply from Node. */
export interface PendingCall {
  run: IsolateRun;
  callback: ((...args: unknown[]) => unknown) | undefined;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/** A node of the tree built from dotted host function names. */
export interface HostNode {
  full?: string;
  kids: Map<string, HostNode>;
}

/** The state of one run inside the isolate. */
export interface IsolateRun {
  thisObj: Record<string, unknown>;
  job: IsolateJob;
  index: number;
  /** Where this run's item starts in job.items; the values sent follow its combination index, in `shape` order. */
  base: number;
  shape: readonly string[];
  /** The run's locals, host and label tables (indices into the job's). */
  li: number;
  hi: number;
  bi: number;
  /** Materialised variables and implicit globals of this run, made on first use. */
  vars: Record<string, unknown> | undefined;
  hidden: string[] | undefined;
  protect: string[] | undefined;
  errors: Record<string, string> | undefined;
  cancelled: { message: string; status: number } | undefined;
  result: unknown;
  resultSet: boolean;
  error: { m: string; n: string; s: string } | undefined;
  /** Host calls started and not yet answered. */
  pending: number;
  /** The script body returned (or threw). */
  done: boolean;
  finished: boolean;
}

/** The Script API functions, built per run and per name on first use. */
export interface ScriptApi {
  names: Set<string>;
  create(get: () => IsolateRun | undefined, name: string): unknown;
  /** Starts a run with properties hidden and protected already (by an earlier event). */
  begin(run: IsolateRun, hidden: readonly string[], protect: readonly string[]): void;
}

/** Signature of makeScriptApi (see isolate-api.ts). */
export type MakeScriptApi = (
  cancelSentinel: object,
  peekVar: (run: IsolateRun, name: string) => unknown,
  log: (run: IsolateRun, level: string, text: string) => void,
  copy: (value: unknown) => unknown,
) => ScriptApi;

/** Host calls inside the isolate (see isolate-host.ts). */
export interface HostBridge {
  /** Host requests made since the last collect, as JSON arrays [callId, jobId, hostIdx, name, args]. */
  requests: string[];
  /** Calls the host function `name` for the run (its host table's); the promise settles with the reply. */
  call(run: IsolateRun, name: string, args: unknown[]): Promise<unknown>;
  build(run: IsolateRun, node: HostNode): unknown;
  tree(names: string[]): Map<string, HostNode>;
  receive(id: number, reply: { r?: unknown; e?: unknown; n?: unknown }): void;
  forget(job: IsolateJob): void;
  /** The value is the error of a failed host call (a rejection the script did not catch). */
  isHostError(value: unknown): boolean;
}

/** Signature of makeHostBridge (see isolate-host.ts). */
export type MakeHostBridge = (runtime: {
  enter: (jobId: number) => void;
  fail: (run: IsolateRun, err: unknown) => void;
  settle: (run: IsolateRun) => void;
  within: <T>(run: IsolateRun, fn: () => T) => T;
}) => HostBridge;

/** Run outcome flags (wire.ts RUN_FLAGS). */
export interface RunFlags {
  SET: number;
  UNSET: number;
  HIDDEN: number;
  PROTECT: number;
  REST: number;
  REPEAT: number;
}

/** Writing run outcomes (see isolate-outcome.ts). */
export interface OutcomeWriter {
  /** Pushes `this`'s changes onto `out`; returns the flags for what it pushed. */
  diff(run: IsolateRun, out: unknown[]): number;
  /** Turns the outcome at `at` into a REPEAT when it equals the previous one. */
  repeatIfSame(job: IsolateJob, at: number): void;
  /** A fresh copy of a JSON value. */
  copy(value: unknown): unknown;
  /** Sets an own property, "__proto__" included. */
  setOwn(obj: Record<string, unknown>, key: string, value: unknown): void;
}

/** Signature of makeOutcome (see isolate-outcome.ts). */
export type MakeOutcome = (itemValues: number, flags: RunFlags) => OutcomeWriter;

/** The variables a run's script sees (see isolate-scope.ts makeVariables). */
export interface Variables {
  /** Whether `name` is a variable of the run (locals, Script API, host functions, Node's globals). */
  declares(run: IsolateRun, name: string): boolean;
  /** A variable of the run, made on first use and kept in its `vars`. */
  readVar(run: IsolateRun, name: string): unknown;
  /** The shared scope of a fast job's runs: the names the source mentions, on the current run. */
  scopeFor(names: readonly string[], assigned: ReadonlySet<string>, locals: ReadonlySet<string>): object;
  /** Sets the run whose synchronous body executes now in a shared scope (undefined between runs). */
  setCurrent(run: IsolateRun | undefined): void;
  /** A variable's value for reading only (isMe, changed): the run's own, or the locals' uncopied. */
  peekVar(run: IsolateRun, name: string): unknown;
  deepFreeze<T>(value: T): T;
}

/** Signature of makeVariables (see isolate-scope.ts). */
export type MakeVariables = (deps: {
  api: ScriptApi;
  builtinApi: NodeSandbox;
  host: HostBridge;
  copy: (value: unknown) => unknown;
  /** require() of a run's script. */
  requireFor: (run: IsolateRun, name: unknown) => unknown;
}) => Variables;

/** The scope of a run that may go on after its body returned (see isolate-scope.ts makeRunScope). */
export interface RunScope {
  scopeOf(run: IsolateRun): object;
}

/** Signature of makeRunScope. */
export type MakeRunScope = (variables: Pick<Variables, 'declares' | 'readVar'>) => RunScope;

/** A run's errors (see isolate-runs.ts makeRunErrors). */
export interface RunErrors {
  /** Records a run's error (a cancel, a thrown value, a script error); the first one stays. */
  fail(run: IsolateRun, err: unknown): void;
  /** An error as the wire carries it. */
  describe(err: unknown): { m: string; n: string; s: string };
}

/** Signature of makeRunErrors. */
export type MakeRunErrors = (deps: { cancel: object; isHostError: (value: unknown) => boolean }) => RunErrors;

/** Runs' outcomes written into their jobs' output (see isolate-runs.ts makeRunOutput). */
export interface RunOutput {
  /** A run that may have settled: finishes it now, or (deferred) at the next collect. */
  settle(run: IsolateRun): void;
  finishable(run: IsolateRun): boolean;
  /** Writes a run's outcome into its job's output; completes the job after its last run. */
  finish(run: IsolateRun): void;
  /** A run whose body returned or threw (err: what it threw, undefined for none), or whose promise settled. */
  ended(run: IsolateRun, err: unknown): void;
}

/** Signature of makeRunOutput. */
export type MakeRunOutput = (deps: {
  /** Settled runs of deferred scripts, to finish at the next collect. */
  ready: IsolateRun[];
  enter: (jobId: number) => void;
  /** A job whose runs all finished: its output goes to Node with the next report. */
  complete: (job: IsolateJob) => void;
  outcome: OutcomeWriter;
  errors: RunErrors;
  flags: RunFlags;
}) => RunOutput;

/** The tasks of a call and its time budget (see isolate-runs.ts makeTaskQueue). */
export interface TaskQueue {
  push(task: () => void): void;
  /** Runs queued tasks until none is left or the time budget is used; answers how many are left. */
  pump(): number;
  /** How many tasks are queued. */
  left(): number;
  /** Whether the time budget of the call under way is used. */
  overBudget(): boolean;
}

/** Signature of makeTaskQueue. */
export type MakeTaskQueue = (deps: { budgetMs: number; setCurrent: (run: IsolateRun | undefined) => void }) => TaskQueue;

/** Run records (see isolate-runs.ts makeRunRecords). */
export interface RunRecords {
  newRun(job: IsolateJob, shape: readonly string[], base: number, combo: JobWire['C'][number]): IsolateRun;
  /** A fast job's one record made the record of its next run. */
  renew(run: IsolateRun, job: IsolateJob, shape: readonly string[], base: number, combo: JobWire['C'][number]): void;
  /** What an earlier event of the request hid and protected holds from the start of this run. */
  begin(run: IsolateRun): void;
}

/** Signature of makeRunRecords. */
export type MakeRunRecords = (deps: { api: ScriptApi; outcome: OutcomeWriter; itemValues: number }) => RunRecords;

/** Starting a job's runs (see isolate-runs.ts makeRunStarts). */
export interface RunStarts {
  /** Starts a job's runs in input order until they are all started or the time budget is used. */
  runItems(job: IsolateJob): void;
}

/** Signature of makeRunStarts. */
export type MakeRunStarts = (deps: {
  enter: (jobId: number) => void;
  within: <T>(run: IsolateRun, fn: () => T) => T;
  records: RunRecords;
  variables: Variables;
  runScope: RunScope;
  errors: RunErrors;
  output: RunOutput;
  queue: TaskQueue;
  itemValues: number;
}) => RunStarts;

/** Job tables as parsed (see isolate-jobs.ts makeJobTables). */
export interface JobTablesReader {
  /** JobTables JSON -> those tables with what is derived from them, kept per distinct text. */
  tablesOf(text: string): LiveTables;
}

/** Signature of makeJobTables. */
export type MakeJobTables = (host: HostBridge) => JobTablesReader;

/** A script defined in the isolate, with what its source says (IsolateBridge.define). */
export interface DefinedScript {
  factory: ScriptFactory;
  /** The identifiers its source mentions (null: unknown, it calls eval). */
  names: string[] | null;
  /** The names it may assign without declaring them (null: any, it calls eval). */
  assigned: ReadonlySet<string> | null;
}

/** The scripts defined in the isolate (see isolate-jobs.ts makeScripts). */
export interface Scripts {
  /** IsolateBridge.define. */
  define(id: number, factory: ScriptFactory, names: string, assigned: string): void;
  get(id: number): DefinedScript | undefined;
  /** IsolateBridge.check. */
  check(source: string): string;
  /** A fast job's body bound to a shared scope for the names its locals tables declare. */
  boundBody(id: number, script: DefinedScript, locals: JobWire['L']): (this: Record<string, unknown>) => unknown;
}

/** Signature of makeScripts. */
export type MakeScripts = (variables: Variables) => Scripts;

/** Jobs as they come in (see isolate-jobs.ts makeJobs). */
export interface JobIntake {
  /** Makes a job of a PackedJob and queues its runs (throws for a script not defined here). */
  queueJob(packed: PackedJob): void;
}

/** Signature of makeJobs. */
export type MakeJobs = (deps: {
  jobs: Map<number, IsolateJob>;
  enter: (jobId: number) => void;
  tables: JobTablesReader;
  scripts: Scripts;
  variables: Variables;
  /** A job without runs is complete at once. */
  complete: (job: IsolateJob) => void;
  queue: TaskQueue;
  starts: RunStarts;
  itemValues: number;
}) => JobIntake;

/** Whose code runs now (see isolate-attribution.ts). */
export interface Attribution {
  /** Code of this job runs now (shared memory [0]), one more job entered in this call. */
  enter(jobId: number): void;
  /** Every call starts unattributed: code that runs before an enter() is nobody's for sure. */
  beginCall(): void;
  /** The call's microtasks belong to its one job entered, or to none (-1) when it entered several. */
  endCall(): void;
  /** Runs `fn` as code of `run`. */
  within<T>(run: IsolateRun, fn: () => T): T;
  /** The run whose code runs now, or the only run the current call ran code for. */
  currentRun(): IsolateRun | undefined;
}

/** Signature of makeAttribution. */
export type MakeAttribution = (shared: Int32Array) => Attribution;

/** require() of modules and built-ins, and the modules loaded (see isolate-modules.ts). */
export interface Modules {
  /** require() of a run's script: a built-in not offered throws by name. */
  requireFor(run: IsolateRun, name: unknown): unknown;
  /** IsolateBridge.load. */
  load(name: string, factory: (module: { exports: unknown }, exports: unknown, require: (name: string) => unknown, globals: object) => void): void;
}

/** Signature of makeModules. */
export type MakeModules = (builtinApi: NodeSandbox) => Modules;

/** The runs a call leaves behind (see isolate-report.ts makeSweep). */
export interface Sweep {
  /** Finishes settled deferred runs and (final, nothing queued) fails stuck ones; answers CollectWire's `m`. */
  settled(left: number, final: boolean): number;
}

/** Signature of makeSweep. */
export type MakeSweep = (deps: {
  jobs: Map<number, IsolateJob>;
  ready: IsolateRun[];
  enter: (jobId: number) => void;
  output: RunOutput;
}) => Sweep;

/** What a call answers Node (see isolate-report.ts makeReports). */
export interface Reports {
  /** A console line of a run (bounded until the next report). */
  log(run: IsolateRun, level: string, text: string): void;
  /** A job whose runs all finished: its output goes to Node with the next report. */
  complete(job: IsolateJob): void;
  /** A job that could not be queued fails whole. */
  failJob(jobId: number, err: unknown): void;
  /** CollectWire, with what finished, was logged and was asked of the host since the last one. */
  report(left: number, more: number): string;
}

/** Signature of makeReports. */
export type MakeReports = (deps: {
  jobs: Map<number, IsolateJob>;
  host: HostBridge;
  endCall: () => void;
  errors: RunErrors;
  flags: RunFlags;
}) => Reports;

/** The other functions isolateMain is made of, each serialised on its own (see isolate-worker.ts). */
export interface IsolateParts {
  makeAttribution: MakeAttribution;
  makeModules: MakeModules;
  makeSweep: MakeSweep;
  makeReports: MakeReports;
  makeScriptApi: MakeScriptApi;
  makeHostBridge: MakeHostBridge;
  makeOutcome: MakeOutcome;
  makeVariables: MakeVariables;
  makeRunScope: MakeRunScope;
  makeRunErrors: MakeRunErrors;
  makeRunOutput: MakeRunOutput;
  makeTaskQueue: MakeTaskQueue;
  makeRunRecords: MakeRunRecords;
  makeRunStarts: MakeRunStarts;
  makeJobTables: MakeJobTables;
  makeScripts: MakeScripts;
  makeJobs: MakeJobs;
  /** Node's built-ins inside the isolate (isolate-node.ts). */
  makeNodeSandbox: (deps: NodeSandboxDeps) => NodeSandbox;
  sealRealm: () => void;
}
