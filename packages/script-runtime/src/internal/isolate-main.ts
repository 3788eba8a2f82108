import type { IsolateBridge, IsolateJob, IsolateRun, MakeHostBridge, MakeScriptApi, ScriptFactory } from './isolate-types.js';
import type { JobWire, RunWire } from './wire.js';

/**
 * The runtime INSIDE the isolate: queues and runs jobs, builds each run's scope, collects what
 * Node must do next. It is serialised with Function.prototype.toString and evaluated once per isolate, so
 * it must not reference anything outside its own body.
 *
 * Node drives everything with short synchronous calls (see IsolateBridge); the isolate never calls
 * Node, because a call from the isolate is an asynchronous hop that costs ~10x a synchronous one.
 * `sab` is memory shared with Node: [0] holds the job whose code runs now, so that Node knows whom
 * to blame when a call times out or the isolate runs out of memory (then the isolate is gone).
 */
export function isolateMain(
  makeScriptApi: MakeScriptApi,
  makeHostBridge: MakeHostBridge,
  sab: SharedArrayBuffer,
  budgetMs: number,
): IsolateBridge {
  const shared = new Int32Array(sab);
  const factories = new Map<number, ScriptFactory>();
  const jobs = new Map<number, IsolateJob>();
  const queue: ((() => void) | undefined)[] = [];
  let head = 0;
  const ready: IsolateRun[] = [];
  const completed: IsolateJob[] = [];
  const logs: string[] = [];
  // Bounds what a script logging in a loop can buffer before Node collects it.
  const MAX_LOGS = 10_000;
  let droppedLogs = 0;
  const CANCEL = Object.freeze({ svcCancel: true });
  const RUN = Symbol('run');
  // Always declared so that `if (previous)` works in every event, given or not.
  const DECLARED = new Set(['me', 'query', 'previous', 'internal', 'isRoot', 'ctx', 'url', 'parts', 'body', 'fileSize', 'fileName']);
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as FunctionConstructor;

  const enter = (jobId: number): void => {
    shared[0] = jobId;
  };

  const api = makeScriptApi(CANCEL, readVar, (run, level, text) => {
    if (logs.length < MAX_LOGS) logs.push(JSON.stringify([run.label, level, text]));
    else droppedLogs++;
  });
  const host = makeHostBridge({ enter, fail, settle });

  function declares(run: IsolateRun, name: string): boolean {
    return api.names.has(name) || run.hostTree.has(name) || run.localKeys.has(name) || DECLARED.has(name);
  }

  function materialize(run: IsolateRun, name: string): unknown {
    if (api.names.has(name)) return api.create(run, name);
    const node = run.hostTree.get(name);
    if (node) return host.build(run, node);
    if (!run.localKeys.has(name)) return undefined;
    const value = run.localVals[name];
    // A batch shares one locals table: each run gets a copy so one object's script can't alter the next's.
    return run.localsShared && value !== null && typeof value === 'object' ? JSON.parse(JSON.stringify(value)) : value;
  }

  function readVar(run: IsolateRun, name: string): unknown {
    if (name in run.vars) return run.vars[name];
    return (run.vars[name] = materialize(run, name));
  }

  // One handler for every run; the run hangs off the target under a symbol no identifier can reach.
  const scopeHandler: ProxyHandler<Record<string | symbol, unknown>> = {
    has(target, key) {
      if (typeof key !== 'string') return false;
      if (key in target) return true;
      // Unknown names are claimed too, so that implicit globals land in this run's scope.
      return declares(target[RUN] as IsolateRun, key) || !(key in globalThis);
    },
    get(target, key) {
      if (key in target) return target[key];
      if (typeof key !== 'string') return undefined; // Symbol.unscopables, looked up by `with`
      const run = target[RUN] as IsolateRun;
      if (declares(run, key)) return readVar(run, key);
      // `with` cannot tell a read from `typeof`: answering undefined keeps the common
      // `typeof x === 'undefined'` check working, at the price of undeclared reads not throwing.
      return undefined;
    },
    set(target, key, value) {
      target[key] = value;
      return true;
    },
    deleteProperty(target, key) {
      return delete target[key];
    },
  };

  function describe(err: unknown): { m: string; n: string; s: string } {
    try {
      if (err instanceof Error) return { m: String(err.message), n: err.name, s: String(err.stack ?? '') };
      if (err !== null && typeof err === 'object' && 'message' in err) {
        return { m: String((err as { message: unknown }).message), n: 'Error', s: '' };
      }
      return { m: typeof err === 'object' ? JSON.stringify(err) : String(err), n: 'Error', s: '' };
    } catch {
      return { m: 'unprintable value thrown', n: 'Error', s: '' };
    }
  }

  function fail(run: IsolateRun, err: unknown): void {
    if (err === CANCEL || run.cancelled || run.error) return;
    run.error = describe(err);
  }

  const finishable = (run: IsolateRun): boolean =>
    !run.finished && (run.cancelled !== undefined || run.error !== undefined || (run.done && run.pending === 0));

  /** Marks the run for `collect`, which finishes it only after the microtasks have drained. */
  function settle(run: IsolateRun): void {
    if (finishable(run)) ready.push(run);
  }

  function finish(run: IsolateRun): void {
    run.finished = true;
    const out: RunWire = { t: run.thisObj, h: run.hidden, p: run.protect };
    if (run.cancelled) out.c = run.cancelled;
    if (run.errors) out.e = run.errors;
    if (run.resultSet) {
      out.s = true;
      out.r = run.result;
    }
    if (run.error) out.x = run.error;
    let wire: string;
    try {
      wire = JSON.stringify(out);
    } catch (err) {
      wire = JSON.stringify({ t: {}, h: [], p: [], x: describe(err) });
    }
    const job = run.job;
    job.parts[run.index] = wire;
    if (--job.left === 0) {
      jobs.delete(job.id);
      completed.push(job);
    }
  }

  function start(run: IsolateRun, factory: ScriptFactory): void {
    if (run.finished) return;
    enter(run.job.id);
    const ended = (err?: unknown): void => {
      if (err !== undefined) fail(run, err);
      run.done = true;
      settle(run);
    };
    let returned: unknown;
    try {
      returned = factory(new Proxy(run.vars, scopeHandler)).call(run.thisObj);
    } catch (err) {
      return ended(err ?? null);
    }
    // Async scripts (and sync ones that return a promise) end when the promise settles.
    if (returned !== null && typeof returned === 'object' && typeof (returned as { then?: unknown }).then === 'function') {
      (returned as Promise<unknown>).then(() => ended(), (err: unknown) => ended(err ?? null));
    } else {
      ended();
    }
  }

  /** Runs queued tasks until none is left or the time budget is used; returns how many are left. */
  function pump(): number {
    const startedAt = Date.now();
    while (head < queue.length) {
      const task = queue[head];
      queue[head++] = undefined;
      task?.();
      if (Date.now() - startedAt >= budgetMs) break;
    }
    if (head === queue.length) queue.length = head = 0;
    return queue.length - head;
  }

  const treeCache = new Map<string, ReturnType<typeof host.tree>>();
  /** Host trees are immutable, so one per distinct list of names serves every run that sends it. */
  function treeOf(key: string): ReturnType<typeof host.tree> {
    let tree = treeCache.get(key);
    if (tree === undefined) {
      if (treeCache.size >= 64) treeCache.clear();
      tree = host.tree(key === '' ? [] : key.split('\n'));
      treeCache.set(key, tree);
    }
    return tree;
  }

  function job(scriptId: number, jobId: number, json: string): number {
    enter(jobId);
    const factory = factories.get(scriptId);
    if (!factory) throw new Error(`script ${scriptId} is not defined in this isolate`);
    const input = JSON.parse(json) as JobWire;
    const uses = new Array<number>(input.L.length).fill(0);
    for (const item of input.I) uses[item[1]] = (uses[item[1]] ?? 0) + 1;
    const keys = input.L.map((table) => new Set(table.k));
    const trees = input.H.map(treeOf);
    const entry: IsolateJob = { id: jobId, runs: [], parts: new Array<string>(input.I.length), left: input.I.length };
    jobs.set(jobId, entry);
    if (entry.left === 0) {
      jobs.delete(jobId);
      completed.push(entry);
    }
    input.I.forEach(([thisObj, li, hi, bi], index) => {
      const run: IsolateRun = {
        thisObj: thisObj !== null && typeof thisObj === 'object' ? thisObj : {},
        vars: Object.create(null) as Record<string | symbol, unknown>,
        localKeys: keys[li] ?? new Set(),
        localVals: input.L[li]?.v ?? {},
        localsShared: (uses[li] ?? 0) > 1,
        hostIdx: hi,
        hostTree: trees[hi] ?? new Map(),
        label: input.B[bi] ?? '',
        hidden: [],
        protect: [],
        resultSet: false,
        pending: 0,
        done: false,
        finished: false,
        job: entry,
        index,
      };
      run.vars[RUN] = run;
      entry.runs.push(run);
      queue.push(() => start(run, factory));
    });
    return pump();
  }

  function deliver(json: string): number {
    for (const [id, reply] of JSON.parse(json) as [number, { r?: unknown; e?: unknown }][]) {
      queue.push(() => host.receive(id, reply));
    }
    return pump();
  }

  function collect(): string {
    for (const run of ready.splice(0)) {
      if (!finishable(run)) continue;
      enter(run.job.id);
      finish(run);
    }
    if (droppedLogs > 0) {
      logs.push(JSON.stringify(['', 'warn', `script-runtime: ${droppedLogs} console lines dropped`]));
      droppedLogs = 0;
    }
    if (completed.length === 0 && logs.length === 0 && host.requests.length === 0) return '';
    const done = completed.splice(0).map((entry) => `[${entry.id},[${entry.parts.join(',')}]]`);
    const out = `{"d":[${done.join(',')}],"l":[${logs.join(',')}],"h":[${host.requests.join(',')}]}`;
    logs.length = host.requests.length = 0;
    return out;
  }

  function drop(jobId: number): void {
    const entry = jobs.get(jobId);
    if (!entry) return;
    jobs.delete(jobId);
    // Queued tasks and late replies of a finished run do nothing.
    for (const run of entry.runs) run.finished = true;
    host.forget(entry);
  }

  function check(source: string): string {
    try {
      new AsyncFunction(source);
      return '';
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  }

  // Scripts write implicit globals into their own scope; freezing the real global object makes an
  // explicit `globalThis.x = 1` a no-op instead of a leak into later runs.
  Object.freeze(globalThis);
  const define = (id: number, factory: ScriptFactory): void => void factories.set(id, factory);
  return { define, check, job, deliver, resume: pump, collect, drop };
}
