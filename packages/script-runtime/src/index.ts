/**
 * @svc/script-runtime: event scripts in isolated-vm. Compile once, run per event with a fresh
 * scope, CPU and memory limits, and host calls (emit, the svc client) that the run waits for.
 */
export { createScriptRuntime } from './create-script-runtime.js';
export type { HostApi, RunChanges, RunInput, RunResult, Script, ScriptModule, ScriptRuntime, ScriptRuntimeOptions, ScriptRuntimeStats } from './types.js';
export { checkScriptModules, MAX_MODULE_BYTES, MAX_MODULES_BYTES } from './check-script-modules.js';
export { ScriptBusyError, ScriptError, ScriptInputError, ScriptMemoryError, ScriptRestartedError, ScriptRuntimeError, ScriptSyntaxError, ScriptTimeoutError } from './errors.js';
export type { ScriptErrorCode, ScriptErrorLocation } from './errors.js';
export { RunBudget } from './budget.js';
export type { BudgetFailure, RunBudgetOptions } from './budget.js';
export { CallbackError } from './callback-error.js';
export { NODE_GLOBALS_DEFINE, OFFERED_BUILTINS } from './internal/node-builtins-bundle.js';
export { limitRepeats } from './limit-repeats.js';
export type { LimitRepeatsOptions } from './limit-repeats.js';
