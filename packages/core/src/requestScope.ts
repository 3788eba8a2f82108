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
  /** True once the client closed its connection before the answer was written. */
  readonly gone: boolean;
  /** Calls `listener` once when the client goes before the answer (at once if it has). */
  onGone(listener: () => void): void;
  /** Per-request state of the script layer (its CPU and wall budget); core never reads it. */
  scripts?: unknown;
}

/** A scope for a request: `res` (when there is one) tells when its client goes. */
export function createRequestScope(client: string, limitRecursion?: number, res?: ServerResponse): RequestScope {
  return new Scope(client, limitRecursion, res);
}

class Scope implements RequestScope {
  readonly calls = new Map<string, number>();
  scripts?: unknown;
  private listeners: (() => void)[] | undefined;
  private left = false;

  constructor(
    readonly client: string,
    public limitRecursion: number | undefined,
    private readonly res: ServerResponse | undefined,
  ) {}

  get gone(): boolean {
    if (!this.left && this.res !== undefined && this.res.destroyed && !this.res.writableFinished) this.left = true;
    return this.left;
  }

  onGone(listener: () => void): void {
    if (this.gone) {
      listener();
      return;
    }
    const res = this.res;
    if (res === undefined || res.writableFinished) return;
    // Listened to only by requests that run scripts, and once: most requests never pay for it.
    if (this.listeners === undefined) {
      this.listeners = [];
      res.once('close', () => {
        const listeners = this.listeners ?? [];
        this.listeners = undefined;
        if (res.writableFinished) return;
        this.left = true;
        for (const fn of listeners) fn();
      });
    }
    this.listeners.push(listener);
  }
}
