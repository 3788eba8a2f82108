/** Options of a {@link RunBudget}. */
export interface RunBudgetOptions {
  /** Script CPU time the request may use in all (every run and every nested call's runs), ms. */
  cpuMs: number;
  /** Time from the budget's creation after which its runs are stopped, ms. */
  wallMs: number;
  /** Who sent the request (its address): script runs are scheduled fairly between clients. */
  client?: string;
  /**
   * Whether the request was given up (its client went away), read when the budget is checked: an
   * object with a `gone` flag (the request's scope), not a closure per request.
   */
  request?: { readonly gone: boolean };
}

/** Why a budget stopped its runs. */
export interface BudgetFailure {
  kind: 'cpu' | 'wall' | 'cancelled';
  message: string;
}

/**
 * The budget of one top-level request: every script run it causes (its own events and those of
 * the internal calls its scripts make) draws on one CPU allowance and one deadline. Once either is
 * spent, or the request is cancelled (its client went away), its queued runs are dropped and its
 * runs in flight fail, so that one request cannot keep the script processes busy.
 *
 * Nothing is pushed: the pool reads `failure` when it charges CPU time, when it sends a run, and
 * a few times a second while runs are under way (a listener per request would cost every request).
 */
export class RunBudget {
  readonly cpuMs: number;
  readonly wallMs: number;
  readonly deadline: number;
  readonly client: string;
  private used = 0;
  private failed: BudgetFailure | undefined;
  private readonly request: { readonly gone: boolean } | undefined;

  constructor(options: RunBudgetOptions) {
    this.cpuMs = options.cpuMs;
    this.wallMs = options.wallMs;
    this.deadline = Date.now() + options.wallMs;
    this.client = options.client ?? '';
    this.request = options.request;
  }

  /** Script CPU time used so far, ms. */
  get spent(): number {
    return this.used;
  }

  /** Why the runs stopped, once they did (the deadline and `request.gone` are checked on reading). */
  get failure(): BudgetFailure | undefined {
    if (this.failed === undefined) {
      if (Date.now() >= this.deadline) this.failed = { kind: 'wall', message: `the request's scripts ran past its time budget of ${this.wallMs} ms` };
      else if (this.request?.gone === true) this.failed = { kind: 'cancelled', message: 'the client went away before the answer' };
    }
    return this.failed;
  }

  /** Adds CPU time used by one of its runs. */
  charge(ms: number): void {
    this.used += ms;
    if (this.used > this.cpuMs && this.failed === undefined) {
      this.failed = { kind: 'cpu', message: `the request's scripts used their CPU budget of ${this.cpuMs} ms` };
    }
  }

  /** Stops every run of the request (its client went away). */
  cancel(reason: string): void {
    this.failed ??= { kind: 'cancelled', message: reason };
  }
}
