/** Types of the code that runs inside the isolate (erased at compile time; nothing here runs). */

/** A compiled script inside the isolate: called with a scope, returns the script body. */
export type ScriptFactory = (scope: object) => (this: Record<string, unknown>) => unknown;

/**
 * What the isolate exposes to Node. Node calls these with applySync and a timeout; the isolate
 * never calls Node. Calls that queue work return how many tasks are still queued (Node calls
 * `resume` until 0), so that one call never runs much longer than a time budget.
 */
export interface IsolateBridge {
  define(id: number, factory: ScriptFactory): void;
  /** Checks that the source parses on its own as a function body; returns the error message or ''. */
  check(source: string): string;
  /** Queues the runs of a job (JobWire JSON) and starts them. */
  job(scriptId: number, jobId: number, json: string): number;
  /** Queues host call replies: JSON `[[callId, {r} | {e}], ...]`. */
  deliver(json: string): number;
  resume(): number;
  /** After the microtasks drained: finished jobs, log lines and new host requests as CollectWire JSON, or ''. */
  collect(): string;
  /** Abandons a job (its run exceeded the CPU limit). */
  drop(jobId: number): void;
}

/** A job inside the isolate. */
export interface IsolateJob {
  id: number;
  runs: IsolateRun[];
  parts: string[];
  left: number;
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
  /** The with-scope's target: materialised variables and implicit globals of this run. */
  vars: Record<string | symbol, unknown>;
  localKeys: Set<string>;
  localVals: Record<string, unknown>;
  /** The locals table is used by several items of a batch, so each run gets its own copy. */
  localsShared: boolean;
  hostIdx: number;
  hostTree: Map<string, HostNode>;
  label: string;
  hidden: string[];
  protect: string[];
  errors?: Record<string, string>;
  cancelled?: { message: string; status: number };
  result?: unknown;
  resultSet: boolean;
  error?: { m: string; n: string; s: string };
  /** Host calls started and not yet answered. */
  pending: number;
  /** The script body returned (or threw). */
  done: boolean;
  finished: boolean;
  job: IsolateJob;
  index: number;
}

/** The Script API functions, built per run and per name on first use. */
export interface ScriptApi {
  names: Set<string>;
  create(run: IsolateRun, name: string): unknown;
}

/** Signature of makeScriptApi (see isolate-api.ts). */
export type MakeScriptApi = (
  cancelSentinel: object,
  readVar: (run: IsolateRun, name: string) => unknown,
  log: (run: IsolateRun, level: string, text: string) => void,
) => ScriptApi;

/** Host calls inside the isolate (see isolate-host.ts). */
export interface HostBridge {
  /** Host requests made since the last collect, as JSON arrays [callId, jobId, hostIdx, name, args]. */
  requests: string[];
  build(run: IsolateRun, node: HostNode): unknown;
  tree(names: string[]): Map<string, HostNode>;
  receive(id: number, reply: { r?: unknown; e?: unknown }): void;
  forget(job: IsolateJob): void;
}

/** Signature of makeHostBridge (see isolate-host.ts). */
export type MakeHostBridge = (runtime: {
  enter: (jobId: number) => void;
  fail: (run: IsolateRun, err: unknown) => void;
  settle: (run: IsolateRun) => void;
}) => HostBridge;
