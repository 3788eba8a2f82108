/** Stable codes of the script errors, for the caller's error mapping. */
export type ScriptErrorCode = 'SCRIPT_SYNTAX' | 'SCRIPT_RUNTIME' | 'SCRIPT_TIMEOUT' | 'SCRIPT_MEMORY' | 'SCRIPT_RESTARTED' | 'SCRIPT_INPUT' | 'SCRIPT_BUSY';

/** Where in a script an error happened. */
export interface ScriptErrorLocation {
  filename: string;
  line?: number;
  column?: number;
}

/** Base class of every error a script can cause; `filename` names the script. */
export abstract class ScriptError extends Error {
  abstract readonly code: ScriptErrorCode;
  readonly filename: string;
  readonly line: number | undefined;
  readonly column: number | undefined;

  constructor(message: string, location: ScriptErrorLocation, options?: { cause?: unknown }) {
    super(message, options);
    this.filename = location.filename;
    this.line = location.line;
    this.column = location.column;
  }
}

/** The script does not parse. `line` and `column` point at the offending token when known. */
export class ScriptSyntaxError extends ScriptError {
  override readonly name = 'ScriptSyntaxError';
  readonly code = 'SCRIPT_SYNTAX';
}

/**
 * The script threw (or an awaited host call rejected and the script did not catch it).
 * `scriptStack` is the stack trace inside the isolate, for logs.
 */
export class ScriptRuntimeError extends ScriptError {
  override readonly name = 'ScriptRuntimeError';
  readonly code = 'SCRIPT_RUNTIME';
  readonly scriptStack: string | undefined;

  constructor(message: string, location: ScriptErrorLocation, options?: { cause?: unknown; scriptStack?: string }) {
    super(message, location, options);
    this.scriptStack = options?.scriptStack;
  }
}

/**
 * A script used more CPU time than the limit, so its isolate was disposed. Other runs that were in
 * flight in the same isolate fail with this error too (`culprit` is false for them).
 */
export class ScriptTimeoutError extends ScriptError {
  override readonly name = 'ScriptTimeoutError';
  readonly code = 'SCRIPT_TIMEOUT';
  readonly culprit: boolean;

  constructor(message: string, location: ScriptErrorLocation, culprit: boolean) {
    super(message, location);
    this.culprit = culprit;
  }
}

/**
 * The isolate ran out of memory and was disposed. Other runs that were in flight in the same
 * isolate fail with this error too (`culprit` is false for them).
 */
export class ScriptMemoryError extends ScriptError {
  override readonly name = 'ScriptMemoryError';
  readonly code = 'SCRIPT_MEMORY';
  readonly culprit: boolean;

  constructor(message: string, location: ScriptErrorLocation, culprit: boolean) {
    super(message, location);
    this.culprit = culprit;
  }
}

/**
 * The script process this run was in had to be replaced because of another run, after this run
 * had already called a host function (emit, the svc client): running it again could repeat that
 * call's effect, so it fails instead. Callers answer 503: the request may be sent again.
 */
export class ScriptRestartedError extends ScriptError {
  override readonly name = 'ScriptRestartedError';
  readonly code = 'SCRIPT_RESTARTED';

  constructor(filename: string) {
    super('script runtime restarted', { filename });
  }
}

/** The data given to a run cannot be sent to a script (nested too deeply). Callers answer 400. */
export class ScriptInputError extends ScriptError {
  override readonly name = 'ScriptInputError';
  readonly code = 'SCRIPT_INPUT';
}

/**
 * Too many script runs are waiting (app.json scripts.queueLimit, half of it for one client): the
 * run was refused without starting. Callers answer 503 with Retry-After.
 */
export class ScriptBusyError extends ScriptError {
  override readonly name = 'ScriptBusyError';
  readonly code = 'SCRIPT_BUSY';
}
