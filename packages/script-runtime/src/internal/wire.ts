/**
 * Formats that cross the isolate boundary. Everything crosses as JSON strings: a string copy is
 * the cheapest transfer isolated-vm has (structured clone of objects measured slower than JSON
 * here), and jobs of many requests cross together, so the number of crossings does not grow with
 * the number of runs.
 */

/**
 * One job = one run or one On Get batch. Tables are deduplicated by identity on the Node side.
 * Objects cross column-wise: an item names a shape (its keys) and carries the values in that
 * order, which parses ~2x faster than an array of objects; only the properties of `this` that
 * the script names are sent at all (see analyze.ts).
 */
export interface JobWire {
  /** Script id. */
  s: number;
  /** Job id. */
  j: number;
  /** 1: runs may go on in microtasks after the call (SourceUsage.deferred). */
  m: number;
  /** Locals tables: declared names (keys, including undefined values) and the values. */
  L: { k: string[]; v: Record<string, unknown> }[];
  /** Host function names of each host table, joined by '\n' (the isolate caches a tree per list). */
  H: string[];
  /** Labels. */
  B: string[];
  /** Shapes: the keys of `this` an item carries, in order. */
  K: string[][];
  /** Combinations an item refers to: [locals index, host index, label index, shape index]. */
  C: [number, number, number, number][];
  /**
   * Items, flat: [combination index, ...values of its shape's keys] each; a negative number -n
   * stands for n more items like the one before it, whose shape has no keys (a trivial On Get
   * over a list sends one combination and one count).
   */
  I: unknown[];
}


/**
 * The tables of a job that are the same from one request to the next of one resource and event
 * (host function names, labels, shapes, combinations). They cross as one JSON string inside the
 * PackedJob, which the isolate parses once and keeps with what it derives from them: parsing a
 * job's nested tables cost more than running a trivial script.
 */
export type JobTables = Pick<JobWire, 'H' | 'B' | 'K' | 'C'>;

/**
 * A job as it crosses: [script id, job id, m, JSON of its JobTables, L (0 for the usual single
 * locals table without names), I, and, only when a run starts with properties hidden or
 * protected already (RunInput.hidden/protected), per run index 0 or [hidden, protected]]. See
 * JobWire for each part.
 */
export type PackedJob = [number, number, number, string, JobWire['L'] | 0, unknown[], ((0 | [string[], string[]])[] | undefined)?];

/**
 * A finished job: [key lists, outcomes]. The outcomes are flat, one run after the other in input
 * order, each: flags (RUN_FLAGS), then what the flags announce in this order: SET the index of a
 * key list and one value per key (properties of `this` the script added or changed), UNSET the
 * keys it deleted, HIDDEN and PROTECT the names given to hide() and protect(), REST a RunWire.
 * REPEAT alone stands for an outcome equal to the previous one (SET of primitives, HIDDEN, PROTECT).
 * `this` comes back as a change set against what was sent: no flag = unchanged, nothing else.
 */
export type JobOutput = [string[][], unknown[]];

export const RUN_FLAGS = { SET: 1, UNSET: 2, HIDDEN: 4, PROTECT: 8, REST: 16, REPEAT: 32 } as const;

/** The rarer parts of a run's outcome. */
export interface RunWire {
  c?: { message: string; status: number };
  e?: Record<string, string>;
  r?: unknown;
  s?: true;
  /** A thrown error: message, name, stack. */
  x?: { m: string; n: string; s: string };
}

/** Reply of a host call: result or error object. */
export interface HostReplyWire {
  r?: unknown;
  e?: unknown;
}

/**
 * What every call into the isolate returns (as JSON, or '' when there is nothing): the ids of the
 * jobs that finished, log lines as [label, level, text], host requests as [callId, jobId, host
 * index, function name, arguments], `q` tasks still queued (Node calls `resume`), and `m` = 1 when
 * started runs may go on in the microtasks that run after the call (Node calls `collect`). When
 * jobs finished, a newline and their outcomes follow: `[jobId, JobOutput]` entries as JSON,
 * separated by commas (DoneText), which the script process passes on without parsing them.
 */
export interface CollectWire {
  i: number[];
  l: [string, string, string][];
  h: [number, number, number, string, unknown[]][];
  q: number;
  m: number;
}
