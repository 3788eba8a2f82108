import type { Attribution, IsolateRun } from './isolate-types.js';

/**
 * Whose code runs now, INSIDE the isolate: the job written to the memory shared with Node (`[0]`
 * the job whose code runs, `[1]` how many jobs a call entered, `[2...]` which), so that Node
 * blames the right run for a timeout or a fatal error and shares a call's CPU time out; and the
 * run a built-in acting for a run (http, fetch) works for. Serialised with
 * Function.prototype.toString like isolateMain, so it must not reference anything outside its
 * own body.
 */
export function makeAttribution(shared: Int32Array): Attribution {
  /** The job entered last in this call, and how many different jobs ran code in it. */
  let lastEntered = -1;
  let enteredJobs = 0;
  // The jobs entered in this call, for Node to share the call's CPU time out (see IsolateWorker).
  const MAX_ENTERED = shared.length - 2;
  const enter = (jobId: number): void => {
    if (jobId !== lastEntered) {
      lastEntered = jobId;
      if (enteredJobs < MAX_ENTERED) shared[2 + enteredJobs] = jobId;
      shared[1] = ++enteredJobs;
    }
    shared[0] = jobId;
  };
  /** Every call starts unattributed: code that runs before an enter() is nobody's for sure. */
  const beginCall = (): void => {
    ambient = undefined;
    ambientMany = false;
    lastEntered = -1;
    enteredJobs = 0;
    shared[0] = -1;
    shared[1] = 0;
  };
  /**
   * After the call returns, its microtasks run: they belong to the job entered in it when there
   * was exactly one, and could belong to any of them otherwise (-1: Node cannot blame one run).
   */
  const endCall = (): void => {
    shared[0] = enteredJobs === 1 ? lastEntered : -1;
  };

  /**
   * The run whose code runs now (a body, a host call's callback or handler, a built-in's event),
   * and the run(s) this call ran code for: code that runs in a microtask after an await belongs
   * to one of those, so when there was only one, a built-in acting for a run (http, fetch) knows
   * whose it is.
   */
  let running: IsolateRun | undefined;
  let ambient: IsolateRun | undefined;
  let ambientMany = false;
  const touch = (run: IsolateRun): void => {
    if (ambient === undefined) ambient = run;
    else if (ambient !== run) ambientMany = true;
  };
  function within<T>(run: IsolateRun, fn: () => T): T {
    const prior = running;
    running = run;
    touch(run);
    try {
      return fn();
    } finally {
      running = prior;
    }
  }

  const currentRun = (): IsolateRun | undefined => running ?? (ambientMany ? undefined : ambient);
  return { enter, beginCall, endCall, within, currentRun };
}
