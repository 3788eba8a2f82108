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
}): HostBridge {
  const calls = new Map<number, PendingCall>();
  const requests: string[] = [];
  let nextCall = 1;

  function call(run: IsolateRun, name: string, args: unknown[]): Promise<unknown> {
    const callback = typeof args[args.length - 1] === 'function' ? (args.pop() as (...a: unknown[]) => unknown) : undefined;
    if (run.finished) return Promise.reject(new Error(`${name}: the run has already finished`));
    const json = JSON.stringify(args);
    const id = nextCall++;
    run.pending++;
    requests.push(`[${id},${run.job.id},${run.hi},${JSON.stringify(name)},${json}]`);
    const promise = new Promise((resolve, reject) => void calls.set(id, { run, callback, resolve, reject }));
    // isolated-vm turns an unhandled rejection into an error of the whole call. A failed host call
    // is reported to the callback or to whoever awaits; fire-and-forget calls may fail silently.
    promise.catch(() => undefined);
    return promise;
  }

  function receive(id: number, reply: { r?: unknown; e?: unknown }): void {
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
        if (failed) pending.callback.call(run.thisObj, null, reply.e);
        else pending.callback.call(run.thisObj, reply.r, null);
      } catch (err) {
        runtime.fail(run, err);
      }
    }
    if (failed) pending.reject(reply.e);
    else pending.resolve(reply.r);
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

  return { requests, build, tree, receive, forget };
}
