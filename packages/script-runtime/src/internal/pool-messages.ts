import type { ScriptModule } from '../types.js';
import type { FatalKind } from './isolate-worker.js';

/** Server process -> script process. */
export type ParentMessage =
  /** `builtins`: the bundled Node built-ins, when the script process cannot read them from the built files (tests on sources). */
  | { t: 'init'; memoryLimitMb: number; timeoutMs: number; modules: readonly ScriptModule[]; builtins?: Readonly<Record<string, string>> }
  /** Load the modules into an isolate now and answer `checked` (checkScriptModules). */
  | { t: 'check' }
  /** Scripts not sent to this process before ([id, filename, source]), then jobs [jobId, scriptId, JobWire JSON]. */
  | { t: 'jobs'; defs: [number, string, string][]; jobs: [number, number, string][] }
  /** Host call replies: [callId, reply]. */
  | { t: 'replies'; r: [number, { r?: unknown; e?: unknown; n?: unknown }][] }
  /** Jobs the server gave up on (their request's budget is spent or its client went away). */
  | { t: 'drop'; j: number[] };

/** Script process -> server process. */
export type ChildMessage =
  /**
   * Finished jobs (JSON `[jobId, JobOutput]` entries separated by commas, as the isolate wrote
   * them: one string crosses cheaper than their arrays), host calls [callId, jobId, host index,
   * name, args], log lines, and jobs that could not start [jobId, message].
   */
  | {
      t: 'out';
      /** Outcomes of finished jobs: JSON `[jobId, JobOutput]` entries separated by commas, unparsed. */
      d: string;
      h: [number, number, number, string, unknown[]][];
      l: string[];
      f: [number, string][];
      /** How many `jobs` and `replies` messages this process has taken in (the server's watchdog). */
      a: number;
      /** CPU time used per job since the last message: [jobId, ms]. */
      c?: [number, number][];
    }
  /**
   * The isolate failed and took `jobs` with it; the process goes on with a new isolate.
   * `culprit` -1: not known.
   */
  | { t: 'fatal'; kind: FatalKind; culprit: number; detail: string; jobs: number[]; a: number }
  /** The answer to `check`: '' when every module loaded, else why not. */
  | { t: 'checked'; error: string };
