import type { IsolateRun, ScriptApi } from './isolate-types.js';

/**
 * The Script API (spec 'Script API'), evaluated INSIDE the isolate. This function is serialised
 * with Function.prototype.toString, so it must not reference anything outside its own body.
 * Functions are closures over one run because runs interleave across host calls: a callback of
 * run A may execute while run B is between two awaits.
 */
export function makeScriptApi(
  cancelSentinel: object,
  /** Reads a variable without copying it: isMe and changed only read. */
  peekVar: (run: IsolateRun, name: string) => unknown,
  log: (run: IsolateRun, level: string, text: string) => void,
  /** A deep copy of a JSON-like value. */
  copy: (value: unknown) => unknown,
): ScriptApi {
  const names = new Set([
    'cancel', 'cancelIf', 'cancelUnless', 'error', 'errorIf', 'errorUnless',
    'hide', 'unhide', 'protect', 'unprotect', 'changed', 'isMe', 'setResult', 'console', 'hasErrors',
  ]);
  /** The getters protect() puts on `this`, to tell them from a property the script defined. */
  const guards = new WeakSet<object>();

  const text = (value: unknown): string => (value === undefined || value === null ? '' : String(value));

  /**
   * cancel()'s status as Deployd 1.2 answered it: none (undefined, or any falsy value: null, 0,
   * NaN, '') is 400; a whole number from 200 to 599, or a text of one ('403'), is that status.
   * Anything else is the script's error, thrown where it called (static-plan.ts: statusArg).
   */
  function statusOf(fn: string, status: unknown): number {
    if (!status) return 400;
    const n = typeof status === 'number' ? status : typeof status === 'string' && /^[2-5][0-9][0-9]$/.test(status) ? Number(status) : NaN;
    if (Number.isInteger(n) && n >= 200 && n <= 599) return n;
    const shown = typeof status === 'number' || typeof status === 'boolean' ? String(status) : typeof status === 'string' ? JSON.stringify(status.slice(0, 20)) : typeof status;
    throw new TypeError(`${fn}(): the status ${shown} is not an HTTP status (a whole number from 200 to 599)`);
  }

  function cancel(run: IsolateRun, fn: string, message: unknown, status: unknown): never {
    // The first cancel wins: later ones can only run if the script caught the sentinel.
    if (!run.cancelled) {
      run.cancelled = { message: text(message), status: statusOf(fn, status) };
    }
    throw cancelSentinel;
  }

  function addError(run: IsolateRun, key: unknown, message: unknown): void {
    (run.errors ??= {})[String(key)] = text(message);
  }

  function addOnce(list: string[], property: unknown): void {
    const name = String(property);
    if (!list.includes(name)) list.push(name);
  }

  function remove(list: string[] | undefined, name: string): void {
    const at = list === undefined ? -1 : list.indexOf(name);
    if (at >= 0) (list as string[]).splice(at, 1);
  }

  /**
   * Deployd's protect(): from now on `this[key]` reads `value` (the stored value) and assigning
   * it throws a TypeError the script may catch. Configurable, so that unprotect() can put a plain
   * property back; whatever the script does to it, the server never writes a protected property.
   */
  function guard(run: IsolateRun, key: string, value: unknown): void {
    const get = () => value;
    guards.add(get);
    Object.defineProperty(run.thisObj, key, {
      get,
      set() {
        throw new TypeError(`Cannot modify protected property '${key}'`);
      },
      enumerable: true,
      configurable: true,
    });
  }

  function protect(run: IsolateRun, property: unknown): void {
    const key = String(property);
    addOnce((run.protect ??= []), key);
    const previous = peekVar(run, 'previous');
    const stored = previous !== null && typeof previous === 'object' && Object.prototype.hasOwnProperty.call(previous, key);
    guard(run, key, stored ? copy((previous as Record<string, unknown>)[key]) : undefined);
  }

  function unprotect(run: IsolateRun, property: unknown): void {
    const key = String(property);
    remove(run.protect, key);
    const own = Object.getOwnPropertyDescriptor(run.thisObj, key);
    if (own?.get === undefined || !guards.has(own.get)) return;
    // As in Deployd: the value it read becomes a plain property again.
    const value = own.get();
    delete run.thisObj[key];
    if (value !== undefined) Object.defineProperty(run.thisObj, key, { value, enumerable: true, writable: true, configurable: true });
  }

  /** Runs after an earlier event keep its hide() and protect(): `this` holds the values to keep. */
  function begin(run: IsolateRun, hidden: readonly string[], protect: readonly string[]): void {
    if (hidden.length > 0) run.hidden = hidden.slice();
    if (protect.length === 0) return;
    run.protect = protect.slice();
    for (const key of protect) guard(run, key, Object.prototype.hasOwnProperty.call(run.thisObj, key) ? run.thisObj[key] : undefined);
  }

  function deepEqual(a: unknown, b: unknown): boolean {
    if (a === b) return true;
    if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
      return typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b);
    }
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    const ra = a as Record<string, unknown>;
    const rb = b as Record<string, unknown>;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(rb, k) && deepEqual(ra[k], rb[k]));
  }

  function format(value: unknown): string {
    if (typeof value === 'string') return value;
    if (value instanceof Error) return value.stack ?? String(value);
    if (typeof value === 'function') return `[Function ${value.name || 'anonymous'}]`;
    if (value === undefined || typeof value !== 'object') return String(value);
    try {
      return JSON.stringify(value);
    } catch {
      return String(value);
    }
  }

  function makeConsole(get: () => IsolateRun | undefined): Record<string, (...args: unknown[]) => void> {
    const out: Record<string, (...args: unknown[]) => void> = {};
    for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
      out[level] = (...args: unknown[]) => {
        const run = get();
        if (run) log(run, level, args.map(format).join(' '));
      };
    }
    return out;
  }

  /**
   * The function `name` for the run that `get` answers: one run (a closure per run and name) or,
   * for runs that end synchronously, whichever run executes at the moment (one function for all).
   * Outside any run the functions do nothing.
   */
  function create(get: () => IsolateRun | undefined, name: string): unknown {
    switch (name) {
      case 'cancel':
        return (message?: unknown, status?: unknown) => {
          const run = get();
          if (run) cancel(run, 'cancel', message, status);
        };
      case 'cancelIf':
        return (condition: unknown, message?: unknown, status?: unknown) => {
          const run = get();
          if (condition && run) cancel(run, 'cancelIf', message, status);
        };
      case 'cancelUnless':
        return (condition: unknown, message?: unknown, status?: unknown) => {
          const run = get();
          if (!condition && run) cancel(run, 'cancelUnless', message, status);
        };
      case 'error':
        return (key: unknown, message: unknown) => {
          const run = get();
          if (run) addError(run, key, message);
        };
      case 'errorIf':
        return (condition: unknown, key: unknown, message: unknown) => {
          const run = get();
          if (condition && run) addError(run, key, message);
        };
      case 'errorUnless':
        return (condition: unknown, key: unknown, message: unknown) => {
          const run = get();
          if (!condition && run) addError(run, key, message);
        };
      case 'hide':
        // Deployd's second argument: hide(p, false) is unhide(p).
        return (property: unknown, toggle?: unknown) => {
          const run = get();
          if (!run) return;
          if (toggle === false) remove(run.hidden, String(property));
          else addOnce((run.hidden ??= []), property);
        };
      case 'unhide':
        return (property: unknown) => {
          const run = get();
          if (run) remove(run.hidden, String(property));
        };
      case 'protect':
        // Deployd's second argument: protect(p, false) is unprotect(p).
        return (property: unknown, toggle?: unknown) => {
          const run = get();
          if (!run) return;
          if (toggle === false) unprotect(run, property);
          else protect(run, property);
        };
      case 'unprotect':
        return (property: unknown) => {
          const run = get();
          if (run) unprotect(run, property);
        };
      case 'hasErrors':
        return () => {
          const run = get();
          return run !== undefined && run.errors !== undefined && Object.keys(run.errors).length > 0;
        };
      case 'changed':
        return (property: unknown) => {
          const run = get();
          const previous = run && peekVar(run, 'previous');
          if (!run || previous === null || typeof previous !== 'object') return false;
          const key = String(property);
          return !deepEqual(run.thisObj[key], (previous as Record<string, unknown>)[key]);
        };
      case 'isMe':
        return (id: unknown) => {
          const run = get();
          const me = (run && peekVar(run, 'me')) as { id?: unknown } | null | undefined;
          return me !== null && typeof me === 'object' && me.id !== undefined && me.id === id;
        };
      case 'setResult':
        return (value: unknown) => {
          const run = get();
          if (!run) return;
          run.result = value;
          run.resultSet = true;
        };
      case 'console':
        return makeConsole(get);
      default:
        return undefined;
    }
  }

  return { names, create, begin };
}
