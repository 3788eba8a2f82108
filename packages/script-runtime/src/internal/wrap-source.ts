/**
 * How a script's source becomes a reusable function in the isolate.
 *
 * The factory is evaluated once per isolate; each run calls it with a fresh scope Proxy and calls
 * the returned function with `this` bound to the object. `with` (sloppy mode) routes every
 * identifier that is not a local of the script and not a real global through that Proxy, so
 * implicit globals (`x = 5`) land in the per-run scope and never leak into another run, even when
 * runs interleave across host calls. The body is an async function so that scripts may `await`.
 * The prefix stays on line 1 so that line numbers in errors are the script's own.
 */

const SYNC_PREFIX = '(function (__svcScope) { with (__svcScope) { return function () {';
const ASYNC_PREFIX = '(function (__svcScope) { with (__svcScope) { return async function () {';
const SUFFIX = '\n}; } })';

/** A script's source as evaluated in the isolate, where it evaluates to the script's factory. */
export interface WrappedSource {
  code: string;
  /** Length of the text put before the source on line 1, to correct columns there. */
  prefixLength: number;
}

/**
 * Wraps the source. Only a source that mentions `await` becomes an async function: a plain
 * function finishes without any promise or microtask, which is most of a short run's cost.
 */
export function wrapSource(source: string): WrappedSource {
  const prefix = /\bawait\b/.test(source) ? ASYNC_PREFIX : SYNC_PREFIX;
  return { code: prefix + source + SUFFIX, prefixLength: prefix.length };
}

/** Converts a position in the wrapped source to one in the script's own source. */
export function toSourcePosition(line: number, column: number, prefixLength: number): { line: number; column: number } {
  return { line, column: line === 1 ? Math.max(1, column - prefixLength) : column };
}

/** Splits isolated-vm's syntax error message `Unexpected token ';' [file.js:2:9]` into its parts. */
export function parseSyntaxMessage(message: string, prefixLength: number): { message: string; line?: number; column?: number } {
  const match = /^(.*) \[.*:(\d+):(\d+)\]$/s.exec(message);
  if (!match) return { message };
  return { message: match[1] ?? message, ...toSourcePosition(Number(match[2]), Number(match[3]), prefixLength) };
}

/** Finds the first frame of `filename` in a stack trace from the isolate. */
export function findStackPosition(stack: string, filename: string, prefixLength: number): { line?: number; column?: number } {
  const escaped = filename.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`${escaped}:(\\d+):(\\d+)`).exec(stack);
  if (!match) return {};
  return toSourcePosition(Number(match[1]), Number(match[2]), prefixLength);
}
