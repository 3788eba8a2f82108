/** Options of a {@link RunBudget}. */
export interface RunBudgetOptions {
  /** Script CPU time the request may use in all (every run and every nested call's runs), ms. */
  cpuMs: number;
  /** Time from the budget's creation after which its runs are stopped, ms. */
  wallMs: number;
  /** Who sent the request (its address): script runs are scheduled fairly between clients. */
  client?: string;
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
 */
export class RunBudget {
  readonly cpuMs: number;
  readonly wallMs: number;
  readonly deadline: number;
  readonly client: string;
  private used = 0;
  private failed: BudgetFailure | undefined;
  private readonly listeners = new Set<(failure: BudgetFailure) => void>();

  constructor(options: RunBudgetOptions) {
    this.cpuMs = options.cpuMs;
    this.wallMs = options.wallMs;
    this.deadline = Date.now() + options.wallMs;
    this.client = options.client ?? '';
  }

  /** Script CPU time used so far, ms. */
  get spent(): number {
    return this.used;
  }

  /** Why the runs stopped, once they did (the wall deadline is checked on reading). */
  get failure(): BudgetFailure | undefined {
    if (this.failed === undefined && Date.now() >= this.deadline) {
      this.fail({ kind: 'wall', message: `the request's scripts ran past its time budget of ${this.wallMs} ms` });
    }
    return this.failed;
  }

  /** Adds CPU time used by one of its runs. */
  charge(ms: number): void {
    this.used += ms;
    if (this.used > this.cpuMs && this.failed === undefined) {
      this.fail({ kind: 'cpu', message: `the request's scripts used their CPU budget of ${this.cpuMs} ms` });
    }
  }

  /** Stops every run of the request (its client went away). */
  cancel(reason: string): void {
    this.fail({ kind: 'cancelled', message: reason });
  }

  /** Calls `listener` once when the budget fails; answers a function that stops listening. */
  watch(listener: (failure: BudgetFailure) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private fail(failure: BudgetFailure): void {
    if (this.failed !== undefined) return;
    this.failed = failure;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener(failure);
  }
}
