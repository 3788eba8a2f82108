/**
 * Formats that cross the isolate boundary. Each job crosses as ONE JSON string in and ONE JSON
 * string out, because a string copy is the cheapest transfer isolated-vm has and it keeps the
 * number of crossings independent of the object size and of the batch length.
 */

/** One job = one run or one batch. Tables are deduplicated by identity on the Node side. */
export interface JobWire {
  /** Locals tables: declared names (keys, including undefined values) and the values. */
  L: { k: string[]; v: Record<string, unknown> }[];
  /** Host tables: function names (dotted paths). */
  /** Host function names of each host table, joined by '\n' (the isolate caches a tree per list). */
  H: string[];
  /** Labels. */
  B: string[];
  /** Items: [thisObj, locals index, host index, label index]. */
  I: [Record<string, unknown>, number, number, number][];
}

/** The outcome of one run. */
export interface RunWire {
  t: Record<string, unknown>;
  h: string[];
  p: string[];
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
 * Output of `collect`: finished jobs as [jobId, runs], log lines as [label, level, text], and host
 * requests as [callId, jobId, host index, function name, arguments].
 */
export interface CollectWire {
  d: [number, RunWire[]][];
  l: [string, string, string][];
  h: [number, number, number, string, unknown[]][];
}
