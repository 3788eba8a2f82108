import { isAnswerStatus, SvcError } from '@svc/core';
import type { Logger } from '@svc/core';
import { ScriptError } from '@svc/script-runtime';
import type { RunResult, Script, ScriptSyntaxError } from '@svc/script-runtime';

/** The events' names as messages and labels say them. */
export const EVENT_LABEL: Record<string, string> = {
  get: 'On Get',
  validate: 'On Validate',
  post: 'On Post',
  put: 'On Put',
  delete: 'On Delete',
  upload: 'On Upload',
  beforerequest: 'On BeforeRequest',
  aftercommit: 'On AfterCommit',
  login: 'On Login',
  beforereset: 'On BeforeReset',
};

/** A compiled event script and the request data it refers to. */
export interface Compiled {
  script: Script | ScriptSyntaxError;
  uses: Uses;
}

/** Which costly names a script mentions: the rest is not copied into the sandbox for each run. */
export interface Uses {
  ctx: boolean;
  svc: boolean;
  emit: boolean;
  /** require() (a module or http may call out) or fetch: the run gets the outbound host function. */
  net: boolean;
}

/**
 * Scripts reach `ctx`, the `svc` client and `emit` only by those names, so a script whose source
 * never mentions one (Script.names, from the runtime's scan) needs none built for it (ctx with its
 * headers is the largest per-run copy).
 */
export function usesOf(script: Script): Uses {
  const uses = (name: string): boolean => script.names === undefined || script.names.has(name);
  return { ctx: uses('ctx'), svc: uses('svc'), emit: uses('emit'), net: uses('require') || uses('fetch') };
}

/**
 * The error a run's cancel() or error() answers, if it called one. The runtime's cancel() answers
 * only statuses from 200 to 599 (a script's other status is its error, with its line): checked
 * again here, where the status enters the server, since it crosses from the script process.
 */
export function cancelOf(result: RunResult): SvcError | undefined {
  const cancelled = result.cancelled;
  if (cancelled !== undefined && !isAnswerStatus(cancelled.status)) {
    // INTERNAL: logged with its cause by the reply path (a SCRIPT_ERROR is logged where it happens).
    return new SvcError('INTERNAL', 'internal server error', { cause: new Error(`a script run answered the status ${String(cancelled.status)}, which is not an HTTP status`) });
  }
  if (result.errors && Object.keys(result.errors).length > 0) {
    return new SvcError('VALIDATION_FAILED', cancelled?.message, { errors: result.errors, status: cancelled?.status ?? 400 });
  }
  return cancelled ? new SvcError('CANCELLED', cancelled.message, { status: cancelled.status }) : undefined;
}

/** A script's failure as the client sees it: 500, with the message in development only; always logged with file and line. */
export function scriptFailure(err: unknown, env: 'development' | 'production', logger: Logger): SvcError {
  if (!(err instanceof ScriptError)) return new SvcError('INTERNAL', 'internal server error', { cause: err });
  // The request's own data cannot go to a script: its fault, like the other depth limits.
  if (err.code === 'SCRIPT_INPUT') return new SvcError('BAD_REQUEST', err.message, { cause: err });
  if (err.code === 'SCRIPT_BUSY') {
    logger.warn(`script ${err.filename}: ${err.message}; answered 503`);
    return new SvcError('UNAVAILABLE', 'too many script runs waiting; try again later', { cause: err, headers: { 'Retry-After': '1' } });
  }
  if (err.code === 'SCRIPT_RESTARTED') {
    logger.warn(`script ${err.filename}: its script process was replaced because of another run; answered 503`);
    return new SvcError('SCRIPT_RESTARTED', 'script runtime restarted', { cause: err, headers: { 'Retry-After': '1' } });
  }
  const where = `${err.filename}${err.line !== undefined ? `:${err.line}` : ''}`;
  const kind = err.code === 'SCRIPT_TIMEOUT' ? 'SCRIPT_TIMEOUT' : 'SCRIPT_ERROR';
  logger.error(`script ${where}: ${err.message}`, { code: err.code });
  const message = env === 'production' ? (kind === 'SCRIPT_TIMEOUT' ? 'script timed out' : 'internal server error') : `${where}: ${err.message}`;
  // Logged above already; the reply path must not log it twice.
  return new SvcError(kind, message, { status: 500, cause: err });
}
