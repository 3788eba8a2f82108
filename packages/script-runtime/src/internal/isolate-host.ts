import type { HostBridge, HostNode, IsolateJob, IsolateRun, PendingCall } from './isolate-types.js';

/**
 * Host calls, INSIDE the isolate. Serialised with Function.prototype.toString like isolateMain,
 * so it must not reference anything outside its own body.
 *
 * A call does not cross to Node by itself: it is recorded in `requests`, which Node collects
 * after the current synchronous call and answers later in a batch (see IsolateWorker). Dotted host
 * names become nested functions: 'svc.todos.get' is called as svc.todos.get(...).
 */
export function makeHostBridge(runtime: {
  enter: (jobId: number) => void;
  fail: (run: IsolateRun, err: unknown) => void;
  settle: (run: IsolateRun) => void;
  /** Runs `fn` as code of `run` (built-ins acting for a run find it: isolate-node.ts). */
  within: <T>(run: IsolateRun, fn: () => T) => T;
}): HostBridge {
  const calls = new Map<number, PendingCall>();
  const hostErrors = new WeakSet<object>();
  const requests: string[] = [];
  let nextCall = 1;

  function call(run: IsolateRun, name: string, args: unknown[]): Promise<unknown> {
    const callback = typeof args[args.length - 1] === 'function' ? (args.pop() as (...a: unknown[]) => unknown) : undefined;
    if (run.finished) return Promise.reject(new Error(`${name}: the run has already finished`));
    const json = JSON.stringify(args);
    const id = nextCall++;
    run.pending++;
    requests.push(`[${id},${run.job.id},${run.hi},${JSON.stringify(name)},${json}]`);
    const promise: Promise<unknown> = new RunPromise((resolve, reject) => void calls.set(id, { run, callback, resolve, reject }));
    promiseRuns.set(promise, run);
    // isolated-vm turns an unhandled rejection into an error of the whole call. A failed host call
    // is reported to the callback or to whoever awaits; fire-and-forget calls may fail silently.
    baseThen.call(promise, undefined, () => undefined);
    return promise;
  }

  /*
   * The promises of host calls and every promise chained from them belong to a run. As in
   * Deployd, their then/catch/finally handlers are called with the run's object as `this`; a
   * handler that throws where nothing handles the rejection fails its run (a thrown string or
   * plain object rejects the request with 400, like cancel()), instead of becoming an unhandled
   * rejection of the whole isolate. The class is frozen: runs share it.
   */
  const promiseRuns = new WeakMap<object, IsolateRun>();
  const handled = new WeakSet<object>();
  const baseThen = Promise.prototype.then as (this: Promise<unknown>, ok?: unknown, err?: unknown) => Promise<unknown>;
  const baseFinally = Promise.prototype.finally as (this: Promise<unknown>, f?: unknown) => Promise<unknown>;
  const bindTo = (run: IsolateRun, fn: unknown): unknown =>
    typeof fn === 'function' ? (value: unknown) => runtime.within(run, () => (fn as (this: unknown, v: unknown) => unknown).call(run.thisObj, value)) : fn;
  function watch(run: IsolateRun, promise: Promise<unknown>): void {
    promiseRuns.set(promise, run);
    baseThen.call(promise, undefined, (err: unknown) => {
      if (handled.has(promise) || run.finished) return;
      // A failed host call nobody awaited stays silent, as before.
      if (err !== null && typeof err === 'object' && hostErrors.has(err)) return;
      runtime.fail(run, err);
      runtime.settle(run);
    });
  }
  class RunPromise extends Promise<unknown> {
    override then(ok?: unknown, err?: unknown): Promise<never> {
      handled.add(this);
      const run = promiseRuns.get(this);
      if (run === undefined) return baseThen.call(this, ok, err) as Promise<never>;
      const derived = baseThen.call(this, bindTo(run, ok), bindTo(run, err));
      watch(run, derived);
      return derived as Promise<never>;
    }
    override finally(f?: (() => void) | null): Promise<unknown> {
      const run = promiseRuns.get(this);
      return baseFinally.call(this, run !== undefined && typeof f === 'function' ? () => f.call(run.thisObj) : f);
    }
  }
  Object.freeze(RunPromise.prototype);
  Object.freeze(RunPromise);

  function receive(id: number, reply: { r?: unknown; e?: unknown; n?: unknown }): void {
    const pending = calls.get(id);
    if (!pending) return;
    calls.delete(id);
    const run = pending.run;
    if (run.finished) return;
    runtime.enter(run.job.id);
    const failed = 'e' in reply;
    if (pending.callback && !run.cancelled) {
      try {
        // Spec: `this` is bound in callbacks.
        const callback = pending.callback;
        runtime.within(run, () => {
          if (failed) callback.call(run.thisObj, null, reply.e);
          // A CallbackError of the host: the callback gets the error, the promise the value.
          else if ('n' in reply) callback.call(run.thisObj, null, reply.n);
          else callback.call(run.thisObj, reply.r, null);
        });
      } catch (err) {
        runtime.fail(run, err);
      }
    }
    // Remembered, so that an uncaught one stays a script error rather than reading as a thrown
    // plain object (which rejects the request like cancel()).
    if (failed && reply.e !== null && typeof reply.e === 'object') hostErrors.add(reply.e);
    // Resolved as code of the run: what the reply's microtasks start (after an await) belongs to it.
    runtime.within(run, () => (failed ? pending.reject(reply.e) : pending.resolve(reply.r)));
    run.pending--;
    runtime.settle(run);
  }

  function build(run: IsolateRun, node: HostNode): unknown {
    const built = new Map<string, unknown>();
    const full = node.full;
    // Inner nodes are callable like svc('add-follower'): exact name first, then without dashes.
    const fn =
      full !== undefined
        ? (...args: unknown[]) => call(run, full, args)
        : (name: unknown) => built.get(String(name)) ?? built.get(String(name).replace(/-/g, ''));
    for (const [key, kid] of node.kids) {
      const child = build(run, kid);
      built.set(key, child);
      // defineProperty: a function's own `name`/`length` are read-only to plain assignment.
      Object.defineProperty(fn, key, { value: child, enumerable: true, writable: true, configurable: true });
    }
    return fn;
  }

  function tree(names: string[]): Map<string, HostNode> {
    const root: HostNode = { kids: new Map() };
    for (const full of names) {
      let node = root;
      for (const part of full.split('.')) {
        let kid = node.kids.get(part);
        if (!kid) node.kids.set(part, (kid = { kids: new Map() }));
        node = kid;
      }
      node.full = full;
    }
    return root.kids;
  }

  function forget(job: IsolateJob): void {
    for (const [id, pending] of calls) if (pending.run.job === job) calls.delete(id);
  }

  const isHostError = (value: unknown): boolean => value !== null && typeof value === 'object' && hostErrors.has(value);
  return { requests, call, build, tree, receive, forget, isHostError };
}
