import type { IsolateBridge, IsolateJob, IsolateRun, LiveTables, MakeHostBridge, MakeOutcome, MakeScriptApi, ScriptFactory } from './isolate-types.js';
import type { NodeSandbox, NodeSandboxDeps } from './isolate-node.js';
import type { JobTables, JobWire, PackedJob, RunWire } from './wire.js';

/**
 * The runtime INSIDE the isolate: queues and runs jobs, builds each run's scope, reports what
 * Node must do next. It is serialised with Function.prototype.toString and evaluated once per
 * isolate, so it must not reference anything outside its own body.
 *
 * Node drives everything with short synchronous calls (see IsolateBridge); the isolate never calls
 * Node, because a call from the isolate is an asynchronous hop that costs ~10x a synchronous one.
 * `sab` is memory shared with Node: [0] holds the job whose code runs now, so that Node knows whom
 * to blame when a call times out or the isolate runs out of memory (then the isolate is gone);
 * [1] counts the jobs entered in the call and [2...] lists them, for the CPU time of each request.
 *
 * The isolate's young generation is small (isolated-vm sizes it from the memory limit: ~1.4 MB
 * at 64 MB), so a run allocates as little as it can and dies as soon as it finished: a batch of
 * 1,000 runs that all stayed reachable until the end was promoted and cost more in GC than in
 * running the scripts.
 */
export function isolateMain(
  makeScriptApi: MakeScriptApi,
  makeHostBridge: MakeHostBridge,
  makeOutcome: MakeOutcome,
  sealRealm: () => void,
  sab: SharedArrayBuffer,
  budgetMs: number,
  /** Node's built-in module names (node:module builtinModules): those not offered are refused by name. */
  builtins: readonly string[],
  /** Node's built-ins inside the isolate (isolate-node.ts), its synchronous calls and the script process's version. */
  makeNodeSandbox: (deps: NodeSandboxDeps) => NodeSandbox,
  hostSync: NodeSandboxDeps['hostSync'],
  nodeInfo: NodeSandboxDeps['node'],
): IsolateBridge {
  const shared = new Int32Array(sab);
  const factories = new Map<number, ScriptFactory>();
  /**
   * Per script and per list of the locals its jobs declare: its body bound to a shared scope, for
   * runs that end synchronously (a server sends few different lists per event).
   */
  const bound = new Map<number, Map<string, (this: Record<string, unknown>) => unknown>>();
  const jobs = new Map<number, IsolateJob>();
  const queue: ((() => void) | undefined)[] = [];
  let head = 0;
  let pumpStartedAt = 0;
  let lastClock = 0;
  let clockSkip = 0;
  let clockSpan = 0;
  /** Settled runs of deferred scripts: they finish in the next `collect`, after the microtasks. */
  const ready: IsolateRun[] = [];
  /** Finished jobs as JSON `[jobId,[shapes,flat]]` and their ids, until the next report. */
  const completed: string[] = [];
  const completedIds: number[] = [];
  const logs: string[] = [];
  // Bounds what a script logging in a loop can buffer before Node collects it.
  const MAX_LOGS = 10_000;
  let droppedLogs = 0;
  // Where an item's values start, after its combination index (see JobWire.I).
  const ITEM_VALUES = 1;
  // Run outcome flags: wire.ts RUN_FLAGS.
  const HAS_SET = 1;
  const HAS_UNSET = 2;
  const HAS_HIDDEN = 4;
  const HAS_PROTECT = 8;
  const HAS_REST = 16;
  const REPEAT = 32;
  const CANCEL = Object.freeze({ svcCancel: true });
  const RUN = Symbol('run');
  // Always declared so that `if (previous)` works in every event, given or not.
  const DECLARED = new Set(['me', 'query', 'previous', 'internal', 'isRoot', 'ctx', 'url', 'parts', 'body', 'fileSize', 'fileName', 'require']);
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as FunctionConstructor;
  /** The run whose synchronous body executes now (shared scope); undefined between runs. */
  let current: IsolateRun | undefined;

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

  const api = makeScriptApi(
    CANCEL,
    peekVar,
    (run, level, text) => {
      if (logs.length < MAX_LOGS) logs.push(JSON.stringify([run.job.labels[run.bi] ?? '', level, text]));
      else droppedLogs++;
    },
    (value) => copy(value),
  );
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
  const host = makeHostBridge({ enter, fail, settle, within });
  const builtinApi = makeNodeSandbox({ hostSync, builtins, currentRun: () => running ?? (ambientMany ? undefined : ambient), within, call: host.call, node: nodeInfo });
  const { diff, repeatIfSame, copy, setOwn } = makeOutcome(ITEM_VALUES, { SET: HAS_SET, UNSET: HAS_UNSET, HIDDEN: HAS_HIDDEN, PROTECT: HAS_PROTECT, REST: HAS_REST, REPEAT });

  function declares(run: IsolateRun, name: string): boolean {
    const job = run.job;
    return api.names.has(name) || DECLARED.has(name) || builtinApi.globals.has(name) || job.locals[run.li]?.k.includes(name) === true || job.trees[run.hi]?.has(name) === true;
  }

  /** Script API functions of synchronous runs: one per name for all, acting on `current`. */
  const currentApi = new Map<string, unknown>();
  const getCurrent = (): IsolateRun | undefined => current;

  function materialize(run: IsolateRun, name: string): unknown {
    if (name === 'require') return Object.freeze((id: unknown) => requireFor(run, id));
    if (builtinApi.globals.has(name) && !run.job.locals[run.li]?.k.includes(name) && run.job.trees[run.hi]?.has(name) !== true) return builtinApi.global(name, run);
    if (api.names.has(name)) {
      if (!run.job.fast) return api.create(() => run, name);
      let fn = currentApi.get(name);
      // Frozen, with console's methods: they are shared, so a property set on one must not reach another run.
      if (fn === undefined) currentApi.set(name, (fn = deepFreeze(api.create(getCurrent, name))));
      return fn;
    }
    const job = run.job;
    const node = job.trees[run.hi]?.get(name);
    if (node) return host.build(run, node);
    const table = job.locals[run.li];
    if (table?.k.includes(name) !== true) return undefined;
    const value = table.v[name];
    // A batch shares one locals table: each run gets a copy so one object's script can't alter the next's.
    const out = job.localsShared[run.li] === true && value !== null && typeof value === 'object' ? copy(value) : value;
    if (name === 'ctx' && out !== null && typeof out === 'object') {
      // As in Deployd, ctx.query is the variable `query` and ctx.body the variable `body`: a
      // change through either is one change (On BeforeRequest's query goes back to the request).
      const ctx = out as Record<string, unknown>;
      if (table.k.includes('query')) ctx.query = readVar(run, 'query');
      if (table.k.includes('body')) ctx.body = readVar(run, 'body');
    }
    return out;
  }

  /** A variable's value for reading only (isMe, changed): the run's own, or the locals' uncopied. */
  function peekVar(run: IsolateRun, name: string): unknown {
    if (run.vars !== undefined && name in run.vars) return run.vars[name];
    const table = run.job.locals[run.li];
    return table !== undefined && table.k.includes(name) ? table.v[name] : undefined;
  }

  /** The internalised copy of a string (what a property key is): its first use as a key makes it. */
  function internalize(key: string): string {
    const holder: Record<string, number> = {};
    holder[key] = 0;
    for (const own in holder) return own;
    return key;
  }

  function deepFreeze<T>(value: T): T {
    if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
      for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
      Object.freeze(value);
    }
    return value;
  }

  function readVar(run: IsolateRun, name: string): unknown {
    const vars = (run.vars ??= Object.create(null) as Record<string, unknown>);
    if (name in vars) return vars[name];
    return (vars[name] = materialize(run, name));
  }

  /**
   * The `with` scope of a run that may go on after its body returned: a Proxy whose target names
   * its run. Implicit globals land in the run's own `vars`.
   */
  const runOf = (target: Record<string | symbol, unknown>): IsolateRun => target[RUN] as IsolateRun;
  const scopeHandler: ProxyHandler<Record<string | symbol, unknown>> = {
    has(target, key) {
      if (typeof key !== 'string') return false;
      const run = runOf(target);
      if ((run.vars !== undefined && key in run.vars) || declares(run, key)) return true;
      // A name the script may assign is claimed, so that it lands in this run's scope as an
      // implicit global. Any other undeclared name is not: the lookup reaches the global object,
      // where a read throws a ReferenceError and `typeof` answers 'undefined', as in JavaScript.
      const assigned = run.job.assigned;
      return (assigned === null || assigned.has(key)) && !(key in globalThis);
    },
    get(target, key) {
      if (typeof key !== 'string') return undefined; // Symbol.unscopables, looked up by `with`
      const run = runOf(target);
      if (run.vars !== undefined && key in run.vars) return run.vars[key];
      if (declares(run, key)) return readVar(run, key);
      // An implicit global before its first assignment: `with` cannot tell a read from `typeof`,
      // and `if (typeof x === 'undefined') x = ...` must work.
      return undefined;
    },
    set(target, key, value) {
      if (typeof key === 'string') (runOf(target).vars ??= Object.create(null) as Record<string, unknown>)[key] = value;
      return true;
    },
    deleteProperty(target, key) {
      const vars = runOf(target).vars;
      if (vars !== undefined && typeof key === 'string') return delete vars[key];
      return true;
    },
  };
  /** Per script: the identifiers its source mentions (null: unknown, it calls eval). */
  const scriptNames = new Map<number, string[] | null>();
  /** Per script: the names it may assign without declaring them (null: any, it calls eval). */
  const scriptAssigned = new Map<number, ReadonlySet<string> | null>();

  /**
   * The shared scope of a script's synchronous runs without a Proxy: one accessor per name the
   * source mentions (real globals excepted), reading and writing the variables of `current`. A
   * name the source does not mention cannot be looked up, so nothing else needs claiming, and an
   * accessor costs one call where the Proxy's `has` and `get` traps cost two. A name that is
   * neither declared (`locals`: the names the job's locals tables declare) nor assigned by the
   * script gets no accessor, so that reading it throws a ReferenceError (see scopeHandler.has).
   */
  function scopeFor(names: readonly string[], assigned: ReadonlySet<string>, locals: ReadonlySet<string>): object {
    const scope = Object.create(null) as Record<string, unknown>;
    for (const name of names) {
      const always = api.names.has(name) || DECLARED.has(name) || builtinApi.globals.has(name);
      if (name in globalThis && !always) continue;
      if (!always && !locals.has(name) && !assigned.has(name)) continue;
      Object.defineProperty(scope, name, {
        get: () => {
          const run = current;
          if (run === undefined) return undefined;
          if (run.vars !== undefined && name in run.vars) return run.vars[name];
          return always || declares(run, name) ? readVar(run, name) : undefined;
        },
        set: (value: unknown) => {
          const run = current;
          if (run !== undefined) (run.vars ??= Object.create(null) as Record<string, unknown>)[name] = value;
        },
      });
    }
    return scope;
  }

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
    const rejection = host.isHostError(err) ? undefined : rejectionOf(err);
    if (rejection) run.cancelled = rejection;
    else run.error = describe(err);
  }

  /**
   * As in Deployd, a thrown string (or number) or plain object rejects the request like cancel():
   * 400 with its message, or the object's `statusCode`/`status` when it is 400-599. Anything
   * else thrown (a TypeError, an Error) stays a script error.
   */
  function rejectionOf(err: unknown): { message: string; status: number } | undefined {
    try {
      if (typeof err === 'string' || typeof err === 'number' || typeof err === 'boolean') return { message: String(err), status: 400 };
      if (err === null || typeof err !== 'object' || err instanceof Error) return undefined;
      const proto = Object.getPrototypeOf(err) as unknown;
      if (proto !== Object.prototype && proto !== null) return undefined;
      const o = err as { message?: unknown; statusCode?: unknown; status?: unknown };
      const code = typeof o.statusCode === 'number' ? o.statusCode : o.status;
      const status = typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599 ? code : 400;
      return { message: typeof o.message === 'string' ? o.message : JSON.stringify(err), status };
    } catch {
      return undefined;
    }
  }

  const finishable = (run: IsolateRun): boolean =>
    !run.finished && (run.cancelled !== undefined || run.error !== undefined || (run.done && run.pending === 0));

  /**
   * A run that may have settled. A deferred script (one that may go on in microtasks) finishes
   * only in the next `collect` call, after the microtasks of this one ran; any other now.
   */
  function settle(run: IsolateRun): void {
    if (!finishable(run)) return;
    if (run.job.defer) ready.push(run);
    else finish(run);
  }

  function finish(run: IsolateRun): void {
    run.finished = true;
    const job = run.job;
    job.live?.delete(run);
    enter(job.id);
    // In input order (the usual case) the outcome goes straight into the job's output.
    const inOrder = run.index === job.emitted;
    const out = inOrder ? job.out : [];
    const at = out.push(0) - 1;
    let flags: number;
    try {
      flags = diff(run, out);
    } catch (err) {
      // A getter the script defined on `this` may throw.
      fail(run, err);
      while (out.length > at + 1) out.pop();
      flags = 0;
    }
    if (run.hidden) {
      flags |= HAS_HIDDEN;
      out.push(run.hidden);
    }
    if (run.protect) {
      flags |= HAS_PROTECT;
      out.push(run.protect);
    }
    if (run.cancelled || run.errors || run.resultSet || run.error) {
      const rest: RunWire = {};
      if (run.cancelled) rest.c = run.cancelled;
      if (run.errors) rest.e = run.errors;
      if (run.resultSet) {
        rest.s = true;
        rest.r = run.result;
      }
      if (run.error) rest.x = run.error;
      flags |= HAS_REST;
      out.push(rest);
    }
    out[at] = flags;
    if (!inOrder) {
      (job.early ??= new Map()).set(run.index, out);
      return;
    }
    repeatIfSame(job, at);
    job.emitted++;
    // Runs that finished before this one follow it now.
    while (job.early !== undefined && job.early.size > 0) {
      const next = job.early.get(job.emitted);
      if (next === undefined) break;
      job.early.delete(job.emitted);
      for (const value of next) job.out.push(value);
      job.emitted++;
    }
    if (job.emitted === job.count) complete(job);
  }

  function complete(job: IsolateJob): void {
    jobs.delete(job.id);
    let text: string;
    try {
      text = JSON.stringify([job.outShapes, job.out]);
    } catch (err) {
      // A value set by a script that JSON cannot carry (a BigInt, a cycle) fails the job.
      text = JSON.stringify([[], [HAS_REST, { x: describe(err) }]]);
    }
    completed.push(`[${job.id},${text}]`);
    completedIds.push(job.id);
  }

  function start(run: IsolateRun): void {
    const job = run.job;
    enter(job.id);
    let returned: unknown;
    try {
      // Its own scope: the run may go on after its body returned (see runFast for those that cannot).
      const target = Object.create(null) as Record<string | symbol, unknown>;
      target[RUN] = run;
      returned = within(run, () => job.factory(new Proxy(target, scopeHandler)).call(run.thisObj));
    } catch (err) {
      return ended(run, err ?? null);
    }
    // Async scripts (and sync ones that return a promise) end when the promise settles.
    if (returned !== null && typeof returned === 'object' && typeof (returned as { then?: unknown }).then === 'function') {
      (job.live ??= new Set()).add(run);
      (returned as Promise<unknown>).then(
        () => ended(run, undefined),
        (err: unknown) => ended(run, err ?? null),
      );
    } else {
      ended(run, undefined);
      if (!run.finished) (job.live ??= new Set()).add(run);
    }
  }

  function ended(run: IsolateRun, err: unknown): void {
    if (err !== undefined) fail(run, err);
    run.done = true;
    settle(run);
  }

  /** Starts the job's runs in input order until they are all started or the time budget is used. */
  function runItems(job: IsolateJob): void {
    const items = job.items;
    let started = false;
    while ((job.next < items.length || job.repeats > 0) && !job.dropped) {
      if (started && overBudget()) {
        queue.push(() => runItems(job));
        return;
      }
      started = true;
      let base = job.next;
      if (job.repeats === 0 && (items[base] as number) < 0) {
        job.repeats = -(items[base] as number);
        job.next = base = base + 1;
      }
      let combo = job.lastCombo as JobWire['C'][number];
      if (job.repeats > 0) {
        // One more item like the previous one, without values.
        job.repeats--;
      } else {
        combo = job.combos[items[base] as number] as JobWire['C'][number];
        job.lastCombo = combo;
        job.next = base + ITEM_VALUES + (job.shapes[combo[3]]?.length ?? 0);
      }
      const shape = job.shapes[combo[3]] ?? [];
      if (job.fast) {
        runFast(job, shape, base, combo);
        continue;
      }
      const run = newRun(job, shape, base, combo);
      if (job.start !== undefined) begin(run);
      start(run);
    }
  }

  /** What an earlier event of the request hid and protected holds from the start of this run. */
  function begin(run: IsolateRun): void {
    const state = run.job.start?.[run.index];
    if (state !== undefined && state !== 0) api.begin(run, state[0], state[1]);
  }

  function newRun(job: IsolateJob, shape: readonly string[], base: number, combo: JobWire['C'][number]): IsolateRun {
    return {
      thisObj: build(shape, job.items, base + ITEM_VALUES),
      job,
      index: job.started++,
      base,
      shape,
      li: combo[0],
      hi: combo[1],
      bi: combo[2],
      // Every field from the start: runs keep one hidden class, so the code that reads them stays fast.
      vars: undefined,
      hidden: undefined,
      protect: undefined,
      errors: undefined,
      cancelled: undefined,
      result: undefined,
      resultSet: false,
      error: undefined,
      pending: 0,
      done: false,
      finished: false,
    };
  }

  /**
   * A run of a synchronous job: nothing can refer to it after its body returned (the scope and
   * the Script API functions reach it through `current`), so the job reuses one run record.
   */
  function runFast(job: IsolateJob, shape: readonly string[], base: number, combo: JobWire['C'][number]): void {
    let run = job.record;
    if (run === undefined) {
      run = job.record = newRun(job, shape, base, combo);
    } else {
      run.thisObj = build(shape, job.items, base + ITEM_VALUES);
      run.index = job.started++;
      run.base = base;
      run.shape = shape;
      run.li = combo[0];
      run.hi = combo[1];
      run.bi = combo[2];
      run.vars = run.hidden = run.protect = run.errors = run.cancelled = run.result = run.error = undefined;
      run.resultSet = run.done = run.finished = false;
    }
    if (job.start !== undefined) begin(run);
    enter(job.id);
    current = run;
    try {
      (job.bound as (this: Record<string, unknown>) => unknown).call(run.thisObj);
    } catch (err) {
      fail(run, err ?? null);
    } finally {
      current = undefined;
    }
    run.done = true;
    finish(run);
  }

  /**
   * Whether the time budget of this call is used. A clock read costs about as much as a trivial
   * run, so while runs keep taking under a millisecond the clock is read every 2nd, 4th, ... up
   * to every 32nd run; a millisecond passing between two reads goes back to every run.
   */
  function overBudget(): boolean {
    if (clockSkip > 0) {
      clockSkip--;
      return false;
    }
    const now = Date.now();
    clockSpan = now === lastClock ? Math.min(clockSpan * 2 + 1, 31) : 0;
    clockSkip = clockSpan;
    lastClock = now;
    return now - pumpStartedAt >= budgetMs;
  }

  /** Runs queued tasks until none is left or the time budget is used; returns how many are left. */
  function pump(): number {
    pumpStartedAt = lastClock = Date.now();
    clockSkip = clockSpan = 0;
    current = undefined; // a run cut off by the time limit never reached its `finally`
    while (head < queue.length) {
      const task = queue[head];
      queue[head++] = undefined;
      task?.();
      if (Date.now() - pumpStartedAt >= budgetMs) break;
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

  /** Builds `this` from an item: its shape's keys, each with a copy of the value sent. */
  function build(keys: readonly string[], items: unknown[], from: number): Record<string, unknown> {
    const obj: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) setOwn(obj, keys[i] as string, copy(items[from + i]));
    return obj;
  }

  /** JobTables JSON -> those tables with what is derived from them, for the jobs that send the same text. */
  const tablesCache = new Map<string, LiveTables>();
  // Tables of lists of objects of many shapes can be long: those are parsed for their job only.
  const MAX_CACHED_TABLES = 2048;
  /** PackedJob's 0: one locals table without names. Read only (see materialize, peekVar). */
  const NO_LOCALS: JobWire['L'] = deepFreeze([{ k: [], v: {} }]);

  /** Loops, not map() or fill(): in the sealed realm those builtins take a slow path. */
  function tablesOf(text: string): LiveTables {
    let live = tablesCache.get(text);
    if (live !== undefined) return live;
    const tables = JSON.parse(text) as JobTables;
    const trees: ReturnType<typeof host.tree>[] = [];
    let hostless = true;
    for (let i = 0; i < tables.H.length; i++) {
      const tree = treeOf(tables.H[i] as string);
      trees.push(tree);
      if (tree.size > 0) hostless = false;
    }
    // Strings in JSON arrays are not internalised: as property keys each use would look them up.
    const shapes: string[][] = [];
    for (let i = 0; i < tables.K.length; i++) {
      const keys = tables.K[i] as string[];
      const shape: string[] = [];
      for (let k = 0; k < keys.length; k++) shape.push(internalize(keys[k] as string));
      shapes.push(shape);
    }
    live = { H: tables.H, B: tables.B, K: tables.K, C: tables.C, trees, shapes, hostless };
    if (text.length <= MAX_CACHED_TABLES) {
      if (tablesCache.size >= 64) tablesCache.clear();
      tablesCache.set(text, live);
    }
    return live;
  }

  function queueJob(packed: PackedJob): void {
    const scriptId = packed[0];
    const jobId = packed[1];
    enter(jobId);
    const factory = factories.get(scriptId);
    if (!factory) throw new Error(`script ${scriptId} is not defined in this isolate`);
    const tables = tablesOf(packed[3]);
    const locals = packed[4] === 0 ? NO_LOCALS : packed[4];
    const items = packed[5];
    const uses: number[] = [];
    for (let i = 0; i < locals.length; i++) uses.push(0);
    let count = 0;
    let combo: JobWire['C'][number] | undefined;
    for (let at = 0; at < items.length; ) {
      const head = items[at] as number;
      // -n: n more items like the previous one (see JobWire.I).
      const n = head < 0 ? -head : 1;
      if (head >= 0) combo = tables.C[head];
      if (combo === undefined) throw new Error('malformed job: a repeat before any item');
      uses[combo[0]] = (uses[combo[0]] ?? 0) + n;
      count += n;
      at += head < 0 ? 1 : ITEM_VALUES + (tables.K[combo[3]]?.length ?? 0);
    }
    const localsShared: boolean[] = [];
    for (let i = 0; i < uses.length; i++) localsShared.push((uses[i] as number) > 1);
    const defer = packed[2] === 1;
    // Runs that cannot go on after their body returned share one scope (see `current`); that
    // scope needs the names the source mentions (a source calling eval is deferred anyway).
    const names = scriptNames.get(scriptId);
    const assigned = scriptAssigned.get(scriptId) ?? null;
    const fast = !defer && names != null && assigned !== null && tables.hostless;
    let fn: ((this: Record<string, unknown>) => unknown) | undefined;
    if (fast) {
      // The names the locals declare decide which names the shared scope claims.
      let key = '';
      for (let i = 0; i < locals.length; i++) {
        const k = (locals[i] as JobWire['L'][number]).k;
        for (let n = 0; n < k.length; n++) key += `${k[n] as string}\n`;
        key += '\n';
      }
      let forScript = bound.get(scriptId);
      if (forScript === undefined) bound.set(scriptId, (forScript = new Map()));
      fn = forScript.get(key);
      if (fn === undefined) {
        const declared = new Set<string>();
        for (let i = 0; i < locals.length; i++) for (const name of (locals[i] as JobWire['L'][number]).k) declared.add(name);
        if (forScript.size >= 16) forScript.clear();
        forScript.set(key, (fn = factory(scopeFor(names as string[], assigned, declared))));
      }
    }
    const job: IsolateJob = {
      id: jobId,
      scriptId,
      factory,
      bound: fn,
      assigned,
      start: packed[6],
      defer,
      fast,
      items,
      combos: tables.C,
      shapes: tables.shapes,
      locals,
      localsShared,
      trees: tables.trees,
      labels: tables.B,
      count,
      next: 0,
      repeats: 0,
      lastCombo: undefined,
      started: 0,
      emitted: 0,
      early: undefined,
      out: [],
      outShapes: [],
      outShapeIndex: undefined,
      lastShape: -1,
      lastPiece: -1,
      live: undefined,
      record: undefined,
      dropped: false,
    };
    jobs.set(job.id, job);
    if (count === 0) complete(job);
    else queue.push(() => runItems(job));
  }

  /** Queues the jobs of a JSON array of PackedJob and runs them; answers like `collect`. */
  function batch(json: string): string {
    beginCall();
    for (const input of JSON.parse(json) as PackedJob[]) {
      try {
        queueJob(input);
      } catch (err) {
        // Not a script's fault (a script missing after the isolate was rebuilt): fail that job.
        jobs.delete(input[1]);
        completed.push(`[${input[1]},${JSON.stringify([[], [HAS_REST, { x: describe(err) }]])}]`);
        completedIds.push(input[1]);
      }
    }
    return report(pump(), false);
  }

  function deliver(json: string): string {
    beginCall();
    for (const [id, reply] of JSON.parse(json) as [number, { r?: unknown; e?: unknown; n?: unknown }][]) {
      queue.push(() => host.receive(id, reply));
    }
    return report(pump(), false);
  }

  function resume(): string {
    beginCall();
    return report(pump(), false);
  }

  /** A separate call, so the microtasks of the previous one have run: settled runs finish now. */
  function collect(): string {
    beginCall();
    return report(queue.length - head, true);
  }

  /**
   * What Node must know after a call. `final` (a `collect` call, after the microtasks): deferred
   * runs that settled finish, and a run that is neither waiting for a host call nor for a queued
   * task can never go on (it awaits a promise nobody settles), so it fails instead of holding its
   * request forever. Otherwise `m` asks for that `collect` when deferred runs are under way.
   */
  function report(left: number, final: boolean): string {
    let more = 0;
    if (final) {
      for (const run of ready.splice(0)) if (finishable(run)) finish(run);
      if (left === 0) {
        for (const job of jobs.values()) {
          for (const run of job.live ?? []) {
            if (run.finished || run.pending > 0) continue;
            enter(job.id);
            run.error ??= { m: 'the script is waiting for a promise that never settles', n: 'Error', s: '' };
            finish(run);
          }
        }
      }
    } else if (ready.length > 0) {
      more = 1;
    } else if (left === 0) {
      for (const job of jobs.values()) {
        if (!job.defer) continue;
        for (const run of job.live ?? []) if (!run.finished && run.pending === 0) more = 1;
        if (more) break;
      }
    }
    if (droppedLogs > 0) {
      logs.push(JSON.stringify(['', 'warn', `script-runtime: ${droppedLogs} console lines dropped`]));
      droppedLogs = 0;
    }
    endCall();
    if (completed.length === 0 && logs.length === 0 && host.requests.length === 0 && left === 0 && more === 0) return '';
    // Finished jobs follow the JSON on a line of their own: Node passes them on to the server unparsed.
    const head = `{"q":${left},"m":${more},"i":[${completedIds.join(',')}],"l":[${logs.join(',')}],"h":[${host.requests.join(',')}]}`;
    const out = completed.length === 0 ? head : `${head}\n${completed.join(',')}`;
    completed.length = completedIds.length = logs.length = host.requests.length = 0;
    return out;
  }

  function drop(jobId: number): void {
    const job = jobs.get(jobId);
    if (!job) return;
    jobs.delete(jobId);
    // Runs not started yet never start; queued tasks and late replies of started ones do nothing.
    job.dropped = true;
    for (const run of job.live ?? []) run.finished = true;
    host.forget(job);
  }

  /**
   * Modules for require(), by name: loaded before any script runs, their exports deep-frozen so
   * that no run can change what another run gets (the state a module keeps in its own closures is
   * still shared by the runs of this isolate: docs/event-scripts.md).
   */
  const modules = new Map<string, unknown>();
  /** require() of modules: other modules and built-ins; a built-in not offered is a stand-in that throws when used. */
  const requireModule = Object.freeze(function require(name: unknown): unknown {
    const id = String(name);
    if (modules.has(id)) return modules.get(id);
    const builtin = builtinApi.require(id, undefined);
    if (builtin !== undefined) return builtin;
    throw new Error(`module '${id}' is not allowed: add it to app.json scripts.modules`);
  });
  /** require() of a run's script: a built-in not offered throws by name. */
  function requireFor(run: IsolateRun, name: unknown): unknown {
    const id = String(name);
    if (modules.has(id)) return modules.get(id);
    const builtin = builtinApi.require(id, run);
    if (builtin !== undefined) return builtin;
    throw new Error(`module '${id}' is not allowed: add it to app.json scripts.modules`);
  }

  function load(name: string, factory: (module: { exports: unknown }, exports: unknown, require: (name: string) => unknown, globals: object) => void): void {
    const module = { exports: {} as unknown };
    factory.call(module.exports, module, module.exports, requireModule, builtinApi.moduleGlobals);
    builtinApi.freeze(module.exports);
    modules.set(name, module.exports);
  }

  function check(source: string): string {
    try {
      new AsyncFunction(source);
      return '';
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  }

  // Nothing a run does may be seen by another: every intrinsic and the global object are frozen
  // (see isolate-seal.ts). Scripts write implicit globals into their own scope instead.
  sealRealm();
  const define = (id: number, factory: ScriptFactory, names: string, assigned: string): void => {
    scriptNames.set(id, JSON.parse(names) as string[] | null);
    const list = JSON.parse(assigned) as string[] | null;
    scriptAssigned.set(id, list === null ? null : new Set(list));
    factories.set(id, factory);
    bound.delete(id);
  };
  return { define, check, batch, deliver, resume, collect, drop, load };
}
