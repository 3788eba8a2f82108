import type { ServerResponse } from 'node:http';

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

  constructor(
    readonly client: string,
    public limitRecursion: number | undefined,
    private readonly res: ServerResponse | undefined,
  ) {}

  get calls(): Map<string, number> {
    return (this.counts ??= new Map());
  }

  get gone(): boolean {
    const res = this.res;
    return res !== undefined && !res.writableFinished && (res.destroyed || res.socket?.destroyed === true);
  }
}
