import type { IsolateRun } from './isolate-types.js';

/** What the Node built-ins inside the isolate need from its runtime (isolateMain). */
export interface NodeSandboxDeps {
  /** Synchronous calls into the script process (node-host.ts): sources, crypto, URL parsing. */
  hostSync: (op: string, ...args: unknown[]) => unknown;
  /** Node's built-in module names: those not offered are refused by name. */
  builtins: readonly string[];
  /** The run whose code runs now, or the only run the current call ran code for. */
  currentRun: () => IsolateRun | undefined;
  /** Calls `fn` as code of `run` (callbacks of a run's outbound calls, timers). */
  within: <T>(run: IsolateRun, fn: () => T) => T;
  /** A host call of the run (the server's outbound function): resolves with its reply. */
  call: (run: IsolateRun, name: string, args: unknown[]) => Promise<unknown>;
  /** process.version, platform and arch of the script process. */
  node: { version: string; platform: string; arch: string };
}

/** Node's built-ins and globals inside the isolate (see makeNodeSandbox). */
export interface NodeSandbox {
  /**
   * require() of a built-in: `run` binds what depends on the run (http, https) to it (a script's
   * require); without it (a module's require at load) they find their run when called. Answers
   * undefined for a name that is not a Node built-in. A built-in not offered throws for a
   * script, and for a module answers an object that throws at first use (a package that only
   * names `net` at load still loads).
   */
  require(name: string, run: IsolateRun | undefined): unknown;
  /** Globals scripts see (fetch, Buffer, URL, ...); each is made on first use. */
  readonly globals: ReadonlySet<string>;
  global(name: string, run: IsolateRun): unknown;
  /** The fourth argument of module wrappers: a module's free `process`, `Buffer`, ... (NODE_GLOBALS_DEFINE). */
  readonly moduleGlobals: object;
  /** Deep-freezes what a module exports, taming its prototypes (see below). */
  freeze(value: unknown): void;
}

/**
 * Node's built-ins INSIDE the isolate. Serialised with Function.prototype.toString like
 * isolateMain, so it must not reference anything outside its own body.
 *
 * Pure ones (buffer, events, url, util, string_decoder, path, assert, punycode, querystring,
 * stream) are npm packages' browser builds, bundled in the script process and evaluated here on
 * first require; crypto, http, https, timers, process and the web globals are svc's own
 * (isolate-node-*.ts): crypto's work is done by Node in the script process through synchronous
 * calls, http and fetch go to the server as host calls (its outbound guard and budgets). Every
 * built-in is loaded once per isolate and deep-frozen, so that no run can change what another gets.
 */
export function makeNodeSandbox(deps: NodeSandboxDeps): NodeSandbox {
  const { hostSync, currentRun, within } = deps;
  const { freeze: freezeObject, getPrototypeOf, getOwnPropertyDescriptor, defineProperty, hasOwn } = Object;
  const ownKeys = Reflect.ownKeys;
  const apply = Reflect.apply;
  /** Offered names (after `node:`, a trailing `/` and aliases are taken off). */
  const OFFERED = new Set(['buffer', 'events', 'url', 'util', 'string_decoder', 'path', 'assert', 'punycode', 'querystring', 'stream', 'process', 'crypto', 'http', 'https', 'timers']);
  const ALIASES: Record<string, string> = { sys: 'util', 'path/posix': 'path' };
  const SUBPATHS: Record<string, [string, string]> = { 'assert/strict': ['assert', 'strict'], 'util/types': ['util', 'types'], 'stream/promises': ['stream', 'promises'] };
  /** Built-ins whose functions act for a run (bound per run for a script's own require). */
  const PER_RUN = new Set(['http', 'https']);
  const builtinNames = new Set(deps.builtins);
  const loaded = new Map<string, unknown>();
  const loading = new Map<string, { exports: unknown }>();

  /**
   * Freezes everything reachable from a value: properties, prototypes, accessors' functions and
   * what their getters answer. Writable data properties of prototypes (objects reached as a
   * prototype or a function's `prototype`) become accessors whose setter defines the property on
   * the object assigned to, as sealRealm does for the intrinsics: `this._events = ...` in an
   * EventEmitter's constructor must keep working once EventEmitter.prototype is frozen.
   */
  function freeze(root: unknown): void {
    const seen = new WeakSet<object>();
    const stack: [unknown, boolean][] = [[root, false]];
    while (stack.length > 0) {
      const [value, proto] = stack.pop() as [unknown, boolean];
      if (value === null || (typeof value !== 'object' && typeof value !== 'function')) continue;
      const obj = value as object;
      if (seen.has(obj)) continue;
      seen.add(obj);
      if (proto && !Object.isFrozen(obj)) tame(obj);
      freezeObject(obj);
      stack.push([getPrototypeOf(obj), true]);
      for (const key of ownKeys(obj)) {
        const desc = getOwnPropertyDescriptor(obj, key);
        if (!desc) continue;
        if ('value' in desc) stack.push([desc.value, key === 'prototype' && typeof obj === 'function']);
        else {
          stack.push([desc.get, false], [desc.set, false]);
          if (desc.get) {
            try {
              stack.push([apply(desc.get, obj, []), false]);
            } catch {
              // Nothing to freeze.
            }
          }
        }
      }
    }
  }

  function tame(target: object): void {
    for (const key of ownKeys(target)) {
      const desc = getOwnPropertyDescriptor(target, key);
      if (!desc || !('value' in desc) || !desc.writable || !desc.configurable) continue;
      const value: unknown = desc.value;
      // Methods, not function expressions: they have no `prototype` of their own to tame in turn.
      const accessor = {
        get(): unknown {
          return value;
        },
        set(this: unknown, next: unknown): void {
          // The shared object itself is left unchanged; silently, as a sloppy-mode write to a frozen
          // property is (scripts are sloppy code, as Deployd's were).
          if (this === target) return;
          if (this === null || (typeof this !== 'object' && typeof this !== 'function')) throw new TypeError(`Cannot assign to property '${String(key)}' of a primitive`);
          if (hasOwn(this as object, key)) (this as Record<PropertyKey, unknown>)[key] = next;
          else defineProperty(this as object, key, { value: next, writable: true, enumerable: true, configurable: true });
        },
      };
      defineProperty(target, key, { get: accessor.get, set: accessor.set, enumerable: desc.enumerable === true, configurable: false });
    }
  }

  const sandbox = { freeze, deps, load, currentRun, within };

  /** A built-in's exports, loaded (once per isolate) and frozen. */
  function load(name: string): unknown {
    if (loaded.has(name)) return loaded.get(name);
    const partial = loading.get(name);
    if (partial) return partial.exports; // a cycle: what it exported so far, as Node does
    const module = { exports: {} as unknown };
    loading.set(name, module);
    try {
      if (name === 'process') module.exports = makeProcess();
      else if (name === 'timers') module.exports = makeTimers();
      else {
        // The script process answers the factory's source (a bundle, or one of isolate-node-*.ts).
        const factory = (0, eval)(hostSync('builtin', name) as string) as (...args: unknown[]) => void;
        apply(factory, module.exports, [module, module.exports, builtinRequire, moduleGlobals, sandbox]);
      }
      freeze(module.exports);
      loaded.set(name, module.exports);
      return module.exports;
    } finally {
      loading.delete(name);
    }
  }

  /** The name a built-in is offered under, or undefined. */
  function offered(id: string): string | undefined {
    let name = id.startsWith('node:') ? id.slice(5) : id;
    if (name.endsWith('/')) name = name.slice(0, -1);
    name = ALIASES[name] ?? name;
    return OFFERED.has(name) || SUBPATHS[name] !== undefined || name.startsWith('npm:') || name.startsWith('svc:') ? name : undefined;
  }

  function loadOffered(name: string): unknown {
    const sub = SUBPATHS[name];
    if (sub) return (load(sub[0]) as Record<string, unknown>)[sub[1]];
    return load(name);
  }

  /** require() inside built-ins: other built-ins only ('npm:url' and such name the packages svc wraps). */
  function builtinRequire(id: unknown): unknown {
    const name = offered(String(id));
    if (name !== undefined) return loadOffered(name);
    return refusing(String(id));
  }

  const refusals = new Map<string, object>();
  /**
   * A module's stand-in for a built-in that is not offered: any property of it is another
   * stand-in, and calling or constructing one throws, naming it. So a package that only keeps a
   * reference at load (`Agent.prototype.createConnection = net.createConnection`) loads, and fails
   * where it would use the built-in.
   */
  function refusing(path: string): object {
    let stub = refusals.get(path);
    if (stub) return stub;
    const id = path.split('.')[0] as string;
    const fail = (): never => {
      throw new Error(`module '${id}' is a Node built-in that event scripts cannot use (${path})`);
    };
    // A function (not an arrow): `new net.Socket()` must reach the construct trap.
    const target = freezeObject(function () {});
    stub = new Proxy(target, {
      // A bundler's interop reads `__esModule`; `then` is read by await. The target's own frozen
      // properties (length, name) must answer as they are.
      get: (t, key) => (hasOwn(t, key) ? Reflect.get(t, key) : typeof key === 'symbol' || key === '__esModule' || key === 'then' ? undefined : refusing(`${path}.${key}`)),
      set: () => fail(),
      apply: () => fail(),
      construct: () => fail(),
    });
    if (refusals.size < 1024) refusals.set(path, stub);
    return stub;
  }

  function require(id: string, run: IsolateRun | undefined): unknown {
    const name = offered(id);
    if (name === undefined || name.startsWith('npm:') || name.startsWith('svc:')) {
      const bare = id.startsWith('node:') ? id.slice(5) : id;
      if (!id.startsWith('node:') && !builtinNames.has(bare)) return undefined;
      if (run !== undefined) throw new Error(`module '${id}' is a Node built-in and cannot be used in event scripts`);
      return refusing(id);
    }
    const exports = loadOffered(name);
    if (run === undefined || !PER_RUN.has(name)) return exports;
    return bound(name, exports as Record<string, unknown>, run);
  }

  const boundByRun = new WeakMap<IsolateRun, Map<string, unknown>>();
  /** A per-run face of http/https: request() and get() made for `run`, whatever runs later. */
  function bound(name: string, exports: Record<string, unknown>, run: IsolateRun): unknown {
    let forRun = boundByRun.get(run);
    if (!forRun) boundByRun.set(run, (forRun = new Map()));
    let out = forRun.get(name);
    if (out === undefined) {
      const face: Record<string, unknown> = { ...exports };
      for (const fn of ['request', 'get']) {
        const original = exports[fn] as (...args: unknown[]) => unknown;
        face[fn] = (...args: unknown[]) => within(run, () => apply(original, exports, args));
      }
      forRun.set(name, (out = freezeObject(face)));
    }
    return out;
  }

  /** process: what modules read of it; nothing of the script process's own. */
  function makeProcess(): unknown {
    const noop = function (this: unknown) {
      return this;
    };
    const started = Date.now();
    const hrtime = (previous?: [number, number]): [number, number] => {
      const ms = Date.now() - started;
      const now: [number, number] = [Math.floor(ms / 1000), (ms % 1000) * 1e6];
      if (!previous) return now;
      const ns = (now[0] - previous[0]) * 1e9 + (now[1] - previous[1]);
      return [Math.floor(ns / 1e9), ns % 1e9];
    };
    hrtime.bigint = () => BigInt(Date.now() - started) * 1000000n;
    const unavailable = (what: string) => () => {
      throw new Error(`process.${what} is not available in event scripts`);
    };
    return {
      title: 'svc-script',
      version: deps.node.version,
      versions: { node: deps.node.version.replace(/^v/, '') },
      platform: deps.node.platform,
      arch: deps.node.arch,
      release: { name: 'node' },
      env: { NODE_ENV: 'production' },
      argv: [],
      execArgv: [],
      pid: 0,
      browser: false,
      cwd: () => '/',
      umask: () => 0o22,
      uptime: () => (Date.now() - started) / 1000,
      hrtime,
      memoryUsage: () => ({ rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 }),
      nextTick: (fn: (...a: unknown[]) => void, ...args: unknown[]) => void later(fn, args),
      emitWarning: noop,
      on: noop,
      once: noop,
      off: noop,
      addListener: noop,
      removeListener: noop,
      removeAllListeners: noop,
      emit: () => false,
      listeners: () => [],
      binding: unavailable('binding'),
      exit: unavailable('exit'),
      kill: unavailable('kill'),
      chdir: unavailable('chdir'),
    };
  }

  /**
   * Work queued for later by a run (setImmediate, setTimeout(fn, 0), process.nextTick): a
   * microtask of that run. There is no event loop between a run's calls: a timer with a delay
   * never fires (a module's own timeouts; outbound calls have svc's).
   */
  function later(fn: (...a: unknown[]) => void, args: unknown[]): { cancelled: boolean } {
    if (typeof fn !== 'function') throw new TypeError('the callback must be a function');
    const run = currentRun();
    const handle = { cancelled: false };
    void Promise.resolve().then(() => {
      if (handle.cancelled) return;
      if (run) within(run, () => apply(fn, undefined, args));
      else apply(fn, undefined, args);
    });
    return handle;
  }

  function makeTimers(): unknown {
    class Timeout {
      cancelled = false;
      ref(): this {
        return this;
      }
      unref(): this {
        return this;
      }
      hasRef(): boolean {
        return false;
      }
      refresh(): this {
        return this;
      }
      close(): this {
        this.cancelled = true;
        return this;
      }
      [Symbol.toPrimitive](): number {
        return 0;
      }
    }
    const schedule = (fn: (...a: unknown[]) => void, ms: unknown, args: unknown[]): Timeout => {
      const timeout = new Timeout();
      if (!(Number(ms) > 0)) {
        const handle = later(fn, args);
        // Cancelling the Timeout cancels the microtask.
        defineProperty(timeout, 'cancelled', { get: () => handle.cancelled, set: (v: boolean) => void (handle.cancelled = v) });
      }
      return timeout;
    };
    const clear = (timeout: unknown): void => {
      if (timeout instanceof Timeout) timeout.cancelled = true;
    };
    return {
      setTimeout: (fn: (...a: unknown[]) => void, ms?: unknown, ...args: unknown[]) => schedule(fn, ms, args),
      setImmediate: (fn: (...a: unknown[]) => void, ...args: unknown[]) => schedule(fn, 0, args),
      // An interval never repeats: its first run would be after a delay.
      setInterval: () => new Timeout(),
      clearTimeout: clear,
      clearImmediate: clear,
      clearInterval: clear,
      queueMicrotask: (fn: () => void) => void later(fn, []),
    };
  }

  const timer = (name: string) => ({ get: () => (load('timers') as Record<string, unknown>)[name], enumerable: true });
  const web = (name: string) => ({ get: () => (load('svc:web') as Record<string, unknown>)[name], enumerable: true });
  const WEB = ['URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'atob', 'btoa', 'fetch', 'Headers', 'Response', 'AbortController', 'AbortSignal'];
  const moduleGlobals: object = freezeObject(
    Object.create(null, {
      process: { get: () => load('process'), enumerable: true },
      Buffer: { get: () => (load('buffer') as { Buffer: unknown }).Buffer, enumerable: true },
      ...Object.fromEntries(['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'queueMicrotask'].map((n) => [n, timer(n)])),
      ...Object.fromEntries(WEB.map((n) => [n, web(n)])),
    }) as object,
  );

  /** Globals scripts see: `fetch` acts for the run; the others are shared and frozen. */
  const globals = new Set(['fetch', 'Buffer', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'atob', 'btoa']);
  function global(name: string, run: IsolateRun): unknown {
    if (name === 'Buffer') return (load('buffer') as { Buffer: unknown }).Buffer;
    const value = (load('svc:web') as Record<string, unknown>)[name];
    if (name !== 'fetch') return value;
    const fetch = value as (...args: unknown[]) => unknown;
    return freezeObject((...args: unknown[]) => within(run, () => apply(fetch, undefined, args)));
  }

  return { require, globals, global, moduleGlobals, freeze };
}
