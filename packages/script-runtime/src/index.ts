/**
 * @svc/script-runtime: event scripts in isolated-vm. Compile once, run per event with a fresh
 * scope, CPU and memory limits, and host calls (emit, the svc client) that the run waits for.
 */
export { createScriptRuntime } from './create-script-runtime.js';
export type { HostApi, RunInput, RunResult, Script, ScriptRuntime, ScriptRuntimeOptions } from './types.js';
export { ScriptError, ScriptInputError, ScriptMemoryError, ScriptRestartedError, ScriptRuntimeError, ScriptSyntaxError, ScriptTimeoutError } from './errors.js';
export type { ScriptErrorCode, ScriptErrorLocation } from './errors.js';
