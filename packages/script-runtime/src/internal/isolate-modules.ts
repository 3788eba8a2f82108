import type { IsolateRun, MakeModules, Modules } from './isolate-types.js';

/**
 * Modules for require(), by name, INSIDE the isolate: loaded before any script runs, their exports
 * deep-frozen so that no run can change what another run gets (the state a module keeps in its
 * own closures is still shared by the runs of this isolate: docs/event-scripts.md). Serialised
 * with Function.prototype.toString like isolateMain, so it must not reference anything outside
 * its own body.
 */
export function makeModules(builtinApi: Parameters<MakeModules>[0]): Modules {
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

  return { requireFor, load };
}
