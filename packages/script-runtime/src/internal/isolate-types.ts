/** Types of the code that runs inside the isolate (erased at compile time; nothing here runs). */
import type { JobTables, JobWire, PackedJob } from './wire.js';

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
