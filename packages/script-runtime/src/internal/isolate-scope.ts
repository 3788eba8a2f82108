import type { IsolateRun, MakeVariables, RunScope, Variables } from './isolate-types.js';

/**
 * The variables a run's script sees, INSIDE the isolate: its locals (me, query, previous, ...),
 * the Script API, host functions, Node's globals and require, each made on first use, and the
 * implicit globals it assigns, kept in the run's own `vars`. Serialised with
 * Function.prototype.toString like isolateMain, so it must not reference anything outside its own
 * body.
 *
 * The runs of a fast job share one scope without a Proxy (scopeFor), reading the variables of
 * `current`; a run that may go on after its body returned gets a Proxy scope of its own
 * (makeRunScope).
 */
export function makeVariables(deps: Parameters<MakeVariables>[0]): Variables {
  const { api, builtinApi, host, copy, requireFor } = deps;
  // Always declared so that `if (previous)` works in every event, given or not.
  const DECLARED = new Set(['me', 'query', 'previous', 'internal', 'isRoot', 'ctx', 'url', 'parts', 'body', 'fileSize', 'fileName', 'require']);
  /** The run whose synchronous body executes now (shared scope); undefined between runs. */
  let current: IsolateRun | undefined;

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

  const setCurrent = (run: IsolateRun | undefined): void => {
    current = run;
  };
  return { declares, readVar, scopeFor, setCurrent, peekVar, deepFreeze };
}

/**
 * The `with` scope of a run that may go on after its body returned, INSIDE the isolate: a Proxy
 * whose target names its run; implicit globals land in the run's own `vars`. Serialised on its
 * own like makeVariables.
 */
export function makeRunScope(variables: Pick<Variables, 'declares' | 'readVar'>): RunScope {
  const { declares, readVar } = variables;
  const RUN = Symbol('run');
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

  function scopeOf(run: IsolateRun): object {
    const target = Object.create(null) as Record<string | symbol, unknown>;
    target[RUN] = run;
    return new Proxy(target, scopeHandler);
  }

  return { scopeOf };
}
