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

const SUFFIX = '\n}; } })';

/**
 * Built-in globals every isolate has (sealing removes only WebAssembly, SharedArrayBuffer and
 * Atomics). Inside `with`, every name the script reads is looked up dynamically, through the scope
 * object first: `String(x)` cost ~65 ns a run for that lookup alone, 4x the rest of
 * `this.seen = String(this.title).length > 0` (bench/RESULTS.md, issue 21, lists with On Get). The
 * built-ins a source names and never assigns are bound as constants between `with` and the
 * script's body, taken from the real globals before `with`: the same frozen values, found
 * statically. A scope never claims these names (they are real globals, not the Script API's,
 * locals' or host functions'), so nothing else changes.
 */
const BUILT_INS = new Set([
  'Object', 'Function', 'Array', 'Number', 'Boolean', 'String', 'Symbol', 'Date', 'Promise', 'RegExp',
  'Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'JSON', 'Math', 'Map', 'Set',
  'WeakMap', 'WeakSet', 'Reflect', 'BigInt', 'parseInt', 'parseFloat', 'isNaN', 'isFinite',
  'encodeURIComponent', 'decodeURIComponent', 'encodeURI', 'decodeURI', 'undefined', 'NaN', 'Infinity',
]);

/** What the scan of the source found (analyze.ts): the names it mentions and those it may assign. */
export interface WrapUsage {
  names: ReadonlySet<string> | undefined;
  assigned: ReadonlySet<string> | undefined;
}

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
export function wrapSource(source: string, usage?: WrapUsage): WrappedSource {
  const fn = /\bawait\b/.test(source) ? 'async function' : 'function';
  const hoisted = hoistable(usage);
  const prefix =
    hoisted.length === 0
      ? `(function (__svcScope) { with (__svcScope) { return ${fn} () {`
      : `(function (__svcScope) { const __svcBuiltIns = [${hoisted.join(', ')}]; with (__svcScope) { const ${hoisted.map((name, i) => `${name} = __svcBuiltIns[${i}]`).join(', ')}; return ${fn} () {`;
  return { code: prefix + source + SUFFIX, prefixLength: prefix.length };
}

/** The built-ins to bind statically: none when the source calls eval or names the wrapper's own names. */
function hoistable(usage: WrapUsage | undefined): string[] {
  const names = usage?.names;
  const assigned = usage?.assigned;
  if (names === undefined || assigned === undefined) return [];
  for (const name of names) if (name.startsWith('__svc')) return [];
  const out: string[] = [];
  for (const name of names) if (BUILT_INS.has(name) && !assigned.has(name)) out.push(name);
  return out;
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
