import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * What one HTTP request and every internal call it causes share, as Deployd's per-request stack
 * did: the number of internal calls made so far per "METHOD /path" (a call past the recursion
 * limit is refused, however the calls nest), the `$limitRecursion` asked for, who sent it (for
 * fair scheduling of scripts) and whether that client still waits for the answer.
 */
export interface RequestScope {
  /** Internal calls made so far in the whole tree, per "METHOD /path". */
  readonly calls: Map<string, number>;
  /** The last `$limitRecursion` given, by the request or by an internal call's query. */
  limitRecursion: number | undefined;
  /** The client's address (fair scheduling of script runs between clients). */
  readonly client: string;
  /**
   * True once the client closed its connection before the answer was written. Read when needed
   * (the script pool polls it while the request's runs wait or run): no listener per request.
   */
  readonly gone: boolean;
  /** Per-request state of the script layer (its CPU and wall budget); core never reads it. */
  scripts?: unknown;
}

/** A scope for a request: `res` (when there is one) tells whether its client went away. */
export function createRequestScope(client: string, limitRecursion?: number, res?: ServerResponse): RequestScope {
  return new Scope(client, limitRecursion, res);
}

class Scope implements RequestScope {
  scripts?: unknown;
  private counts: Map<string, number> | undefined;
  /** The connection, not the response: a scope that outlives its answer keeps no response alive. */
  private readonly socket: Socket | undefined;

  constructor(
    readonly client: string,
    public limitRecursion: number | undefined,
    res: ServerResponse | undefined,
  ) {
    this.socket = res?.socket ?? undefined;
  }

  get calls(): Map<string, number> {
    return (this.counts ??= new Map());
  }

  /** Its connection closed: asked only while the request's scripts wait or run, so before the answer. */
  get gone(): boolean {
    return this.socket?.destroyed === true;
  }
}
