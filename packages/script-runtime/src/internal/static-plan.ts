import { parse } from 'acorn';
import type { CallExpression, Expression, Node, ObjectExpression, Pattern, Statement } from 'acorn';

/**
 * Static plans: a script whose every statement belongs to a small declarative subset (guards,
 * `hide()`, constant properties) is turned, at compile time, into data that the runtime applies
 * in the calling process (static-plan-run.ts) instead of sending the run to a script process.
 * Nothing of the script ever runs: the plan is a tree of the shapes below, built here from the
 * source's syntax tree by a whitelist, and interpreted by the runtime's own code.
 *
 * The subset (anything else, anywhere in the source, means no plan and the script runs in the
 * isolate as always):
 * - `this.<name> = <JSON literal>`: a string, a finite number, true, false, null, or array and
 *   object literals of those (no computed keys, spread, holes, methods or `__proto__` key);
 * - `hide('<name>')`, `unhide('<name>')`;
 * - `cancel([msg [, status]])`, `cancelIf(<cond>, msg [, status])`, `cancelUnless(...)`,
 *   `error(key, msg)`, `errorIf(<cond>, key, msg)`, `errorUnless(...)`, with literal arguments;
 * - `if (<cond>) <statement or block> [else <statement or block>]`, `return;`, `;`;
 * - <cond>: `me`, `query`, `previous`, `internal`, `isRoot`, `undefined`, `this.<name>`, a
 *   property of one of those (`me.id`, `this.owner.id`), `isMe(<cond>)`, literals, `!`,
 *   `===`, `!==`, `&&`, `||`.
 * A property name that every object inherits (`constructor`, `toString`, `__proto__`, ...) is
 * refused, so a plan never reads or writes anything but own data.
 */

/** Longest source turned into a plan: the plan's work per run stays small and bounded. */
export const MAX_PLAN_SOURCE = 4096;
/** Deepest nesting of conditions, blocks and literals in a plan. */
const MAX_DEPTH = 32;

/** A value a condition reads or compares. */
export type PlanExpr =
  | { readonly t: 'lit'; readonly v: string | number | boolean | null }
  /** A variable from the run's locals (or `undefined`). */
  | { readonly t: 'var'; readonly name: string }
  /** `this.<name>`. */
  | { readonly t: 'this'; readonly name: string }
  /** `<of>.<name>`, `of` not `this`. */
  | { readonly t: 'get'; readonly of: PlanExpr; readonly name: string }
  | { readonly t: 'not'; readonly of: PlanExpr }
  /** `===` (equal) or `!==`. */
  | { readonly t: 'eq'; readonly a: PlanExpr; readonly b: PlanExpr; readonly equal: boolean }
  | { readonly t: 'and' | 'or'; readonly a: PlanExpr; readonly b: PlanExpr }
  | { readonly t: 'isMe'; readonly of: PlanExpr };

/** A JSON value, as a literal in the source gives it. */
export type PlanJson = string | number | boolean | null | PlanJson[] | { [key: string]: PlanJson };

/** One statement of a plan. */
export type PlanStep =
  /** `this.<name> = value`; `object`: the value is an array or object (copied per run). */
  | { readonly t: 'set'; readonly name: string; readonly value: PlanJson; readonly object: boolean }
  | { readonly t: 'hide' | 'unhide'; readonly name: string }
  /** cancel/cancelIf/cancelUnless: runs when `when` is absent, or truthy (falsy with `unless`). */
  | { readonly t: 'cancel'; readonly when: PlanExpr | undefined; readonly unless: boolean; readonly message: string; readonly status: number }
  | { readonly t: 'error'; readonly when: PlanExpr | undefined; readonly unless: boolean; readonly key: string; readonly message: string }
  | { readonly t: 'if'; readonly test: PlanExpr; readonly then: readonly PlanStep[]; readonly else: readonly PlanStep[] }
  | { readonly t: 'return' };

/** A script as a plan. */
export interface StaticPlan {
  readonly steps: readonly PlanStep[];
  /** The variables the plan reads: a host function or local shadowing one makes a run decline. */
  readonly reads: readonly string[];
  /** True when no step reads anything (no condition): every run does the same. */
  readonly constant: boolean;
  /**
   * With `constant`: every run ends cancelled or with errors (a cancel() or error() comes before
   * any `return`), so no run gives an object to answer with.
   */
  readonly cancels: boolean;
}

/** The result of planning a source: a plan, or why there is none (for tests and docs). */
export type PlanOutcome = { readonly plan: StaticPlan } | { readonly refused: string };

/** Variables a condition may read: Script API data that is always declared. */
const VARIABLES: ReadonlySet<string> = new Set(['me', 'query', 'previous', 'internal', 'isRoot', 'undefined']);
/**
 * Names every object inherits. Reading one would reach the prototype, and the sealed realm gives
 * writes to them its own meaning (accessors): a plan never touches them.
 */
const INHERITED: ReadonlySet<string> = new Set([...Object.getOwnPropertyNames(Object.prototype), '__proto__']);

class Refused extends Error {}

function refuse(node: Node | undefined, what: string): never {
  throw new Refused(node === undefined ? what : `${what} at ${node.start}`);
}

/**
 * The plan of a source, or why it has none. Only what the whitelist below names is accepted; the
 * source was already checked by V8 (compile() throws syntax errors before this).
 */
export function planScript(source: string): PlanOutcome {
  if (source.length > MAX_PLAN_SOURCE) return { refused: `longer than ${MAX_PLAN_SOURCE} characters` };
  let program;
  try {
    program = parse(source, { ecmaVersion: 'latest', sourceType: 'script', allowReturnOutsideFunction: true, allowAwaitOutsideFunction: true });
  } catch (err) {
    return { refused: `not parsed: ${err instanceof Error ? err.message : String(err)}` };
  }
  const reads = new Set<string>();
  try {
    const steps = program.body.map((statement) => step(statement as Statement, reads, 0)).filter((s): s is PlanStep => s !== undefined);
    const constant = steps.every((s) => s.t !== 'if' && !((s.t === 'cancel' || s.t === 'error') && s.when !== undefined));
    const ends = steps.findIndex((s) => s.t === 'return' || s.t === 'cancel' || s.t === 'error');
    const cancels = constant && ends >= 0 && steps[ends]?.t !== 'return';
    return { plan: { steps, reads: [...reads], constant, cancels } };
  } catch (err) {
    if (err instanceof Refused) return { refused: err.message };
    throw err;
  }
}

/** A statement as a plan step (undefined for `;`). */
function step(node: Statement, reads: Set<string>, depth: number): PlanStep | undefined {
  if (depth > MAX_DEPTH) refuse(node, 'nested too deeply');
  switch (node.type) {
    case 'EmptyStatement':
      return undefined;
    case 'ReturnStatement':
      if (node.argument) refuse(node, 'return with a value');
      return { t: 'return' };
    case 'IfStatement':
      return {
        t: 'if',
        test: expr(node.test, reads, depth + 1),
        then: block(node.consequent, reads, depth + 1),
        else: node.alternate ? block(node.alternate, reads, depth + 1) : [],
      };
    case 'ExpressionStatement': {
      // A directive ('use strict') changes how the whole script runs.
      if (node.directive !== undefined) refuse(node, 'a directive');
      const e = node.expression;
      if (e.type === 'AssignmentExpression') return assignment(e.operator, e.left, e.right, depth);
      if (e.type === 'CallExpression') return call(e, reads, depth);
      return refuse(node, `an expression statement (${e.type})`);
    }
    default:
      return refuse(node, `a ${node.type}`);
  }
}

function block(node: Statement, reads: Set<string>, depth: number): PlanStep[] {
  const list = node.type === 'BlockStatement' ? node.body : [node];
  const out: PlanStep[] = [];
  for (const statement of list) {
    const s = step(statement, reads, depth + 1);
    if (s !== undefined) out.push(s);
  }
  return out;
}

/** `this.<name> = <JSON literal>`. */
function assignment(operator: string, left: Pattern, right: Expression, depth: number): PlanStep {
  if (operator !== '=') refuse(left, `the operator ${operator}`);
  if (left.type !== 'MemberExpression' || left.object.type !== 'ThisExpression' || left.computed || left.optional || left.property.type !== 'Identifier') {
    return refuse(left, 'an assignment to anything but this.<name>');
  }
  const name = left.property.name;
  if (INHERITED.has(name)) refuse(left, `an assignment to this.${name}`);
  const value = literal(right, depth + 1);
  // What crosses back from the isolate is JSON: -0 comes back as 0, object keys in JSON order.
  const normal = JSON.parse(JSON.stringify(value)) as PlanJson;
  return { t: 'set', name, value: normal, object: normal !== null && typeof normal === 'object' };
}

/** A JSON literal: primitives, and arrays and objects of them. */
function literal(node: Expression, depth: number): PlanJson {
  if (depth > MAX_DEPTH) refuse(node, 'nested too deeply');
  const primitive = primitiveOf(node);
  if (primitive !== NOT_PRIMITIVE) return primitive;
  if (node.type === 'ArrayExpression') {
    return node.elements.map((element) => {
      if (element === null) return refuse(node, 'an array with a hole');
      if (element.type === 'SpreadElement') return refuse(element, 'a spread');
      return literal(element, depth + 1);
    });
  }
  if (node.type === 'ObjectExpression') return objectLiteral(node, depth);
  return refuse(node, `a value that is not a JSON literal (${node.type})`);
}

function objectLiteral(node: ObjectExpression, depth: number): { [key: string]: PlanJson } {
  const out: { [key: string]: PlanJson } = {};
  for (const property of node.properties) {
    if (property.type !== 'Property' || property.kind !== 'init' || property.method || property.shorthand || property.computed) {
      return refuse(property, 'an object property that is not `key: value`');
    }
    const key = property.key.type === 'Identifier' ? property.key.name : property.key.type === 'Literal' && typeof property.key.value === 'string' ? property.key.value : undefined;
    if (key === undefined) return refuse(property, 'an object key that is not a name or a string');
    // `{ __proto__: x }` sets the prototype; plain data never names it.
    if (key === '__proto__') return refuse(property, 'a __proto__ key');
    out[key] = literal(property.value as Expression, depth + 1);
  }
  return out;
}

const NOT_PRIMITIVE = Symbol('not a primitive');

/** A string, finite number (with an optional minus), boolean or null literal. */
function primitiveOf(node: Expression): string | number | boolean | null | typeof NOT_PRIMITIVE {
  if (node.type === 'UnaryExpression' && node.operator === '-' && node.argument.type === 'Literal' && typeof node.argument.value === 'number') {
    return finite(-node.argument.value, node);
  }
  if (node.type !== 'Literal') return NOT_PRIMITIVE;
  const value = node.value;
  if (node.regex !== undefined || node.bigint !== undefined) return refuse(node, 'a regular expression or BigInt literal');
  if (typeof value === 'number') return finite(value, node);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  return refuse(node, 'a literal that is not JSON');
}

function finite(value: number, node: Node): number {
  if (!Number.isFinite(value)) refuse(node, 'a number that is not finite');
  return value;
}

/** The Script API calls of the subset, as steps. */
function call(node: CallExpression, reads: Set<string>, depth: number): PlanStep {
  if (node.callee.type !== 'Identifier' || node.optional) return refuse(node, 'a call of anything but a Script API function');
  const args = node.arguments.map((arg) => (arg.type === 'SpreadElement' ? refuse(arg, 'a spread') : arg));
  const name = node.callee.name;
  const count = (min: number, max: number): void => {
    if (args.length < min || args.length > max) refuse(node, `${name}() with ${args.length} arguments`);
  };
  switch (name) {
    case 'hide':
    case 'unhide':
      count(1, 1);
      return { t: name, name: stringArg(args[0] as Expression) };
    case 'cancel':
      count(0, 2);
      return { t: 'cancel', when: undefined, unless: false, message: textArg(args[0]), status: statusArg(args[1]) };
    case 'cancelIf':
    case 'cancelUnless':
      count(1, 3);
      return { t: 'cancel', when: expr(args[0] as Expression, reads, depth + 1), unless: name === 'cancelUnless', message: textArg(args[1]), status: statusArg(args[2]) };
    case 'error':
      count(2, 2);
      return { t: 'error', when: undefined, unless: false, key: keyArg(args[0] as Expression), message: textArg(args[1]) };
    case 'errorIf':
    case 'errorUnless':
      count(3, 3);
      return { t: 'error', when: expr(args[0] as Expression, reads, depth + 1), unless: name === 'errorUnless', key: keyArg(args[1] as Expression), message: textArg(args[2]) };
    default:
      return refuse(node, `a call of ${name}()`);
  }
}

function stringArg(node: Expression): string {
  if (node.type !== 'Literal' || typeof node.value !== 'string') return refuse(node, 'an argument that is not a string literal');
  return node.value;
}

/** An error() key: the isolate writes it into a plain object, so inherited names are refused. */
function keyArg(node: Expression): string {
  const key = stringArg(node);
  if (INHERITED.has(key)) refuse(node, `the error key ${key}`);
  return key;
}

/** A message as the Script API makes it: '' for none or null, else the literal as a string. */
function textArg(node: Expression | undefined): string {
  if (node === undefined) return '';
  const value = primitiveOf(node);
  if (value === NOT_PRIMITIVE) return refuse(node, 'a message that is not a literal');
  return value === null ? '' : String(value);
}

/**
 * cancel()'s status, a literal, as the isolate's cancel() takes it (isolate-api.ts, statusOf):
 * 400 when absent or falsy (0, null, '', false), a whole number from 200 to 599 or a text of one
 * as that number. Any other status is a script error with its line, which only the isolate reports:
 * no plan.
 */
function statusArg(node: Expression | undefined): number {
  if (node === undefined) return 400;
  const value = primitiveOf(node);
  if (value === NOT_PRIMITIVE) return refuse(node, 'a status that is not a literal');
  if (!value) return 400;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^[2-5][0-9][0-9]$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < 200 || n > 599) return refuse(node, 'a status that is not an HTTP status');
  return n;
}

/** A condition. */
function expr(node: Expression, reads: Set<string>, depth: number): PlanExpr {
  if (depth > MAX_DEPTH) refuse(node, 'nested too deeply');
  const primitive = primitiveOf(node);
  if (primitive !== NOT_PRIMITIVE) return { t: 'lit', v: primitive === 0 ? 0 : primitive };
  switch (node.type) {
    case 'Identifier':
      if (!VARIABLES.has(node.name)) return refuse(node, `the variable ${node.name}`);
      reads.add(node.name);
      return { t: 'var', name: node.name };
    case 'MemberExpression': {
      if (node.computed || node.optional || node.property.type !== 'Identifier') return refuse(node, 'a property read that is not .<name>');
      const name = node.property.name;
      if (INHERITED.has(name)) return refuse(node, `a read of .${name}`);
      if (node.object.type === 'ThisExpression') return { t: 'this', name };
      if (node.object.type === 'Super') return refuse(node, 'super');
      return { t: 'get', of: expr(node.object, reads, depth + 1), name };
    }
    case 'UnaryExpression':
      if (node.operator !== '!') return refuse(node, `the operator ${node.operator}`);
      return { t: 'not', of: expr(node.argument, reads, depth + 1) };
    case 'BinaryExpression':
      if (node.operator !== '===' && node.operator !== '!==') return refuse(node, `the operator ${node.operator}`);
      if (node.left.type === 'PrivateIdentifier') return refuse(node, 'a private name');
      return { t: 'eq', a: expr(node.left, reads, depth + 1), b: expr(node.right, reads, depth + 1), equal: node.operator === '===' };
    case 'LogicalExpression':
      if (node.operator === '??') return refuse(node, 'the operator ??');
      return { t: node.operator === '&&' ? 'and' : 'or', a: expr(node.left, reads, depth + 1), b: expr(node.right, reads, depth + 1) };
    case 'CallExpression': {
      if (node.callee.type !== 'Identifier' || node.callee.name !== 'isMe' || node.optional || node.arguments.length !== 1) return refuse(node, 'a call in a condition other than isMe(x)');
      const arg = node.arguments[0];
      if (arg === undefined || arg.type === 'SpreadElement') return refuse(arg, 'a spread');
      reads.add('me');
      return { t: 'isMe', of: expr(arg, reads, depth + 1) };
    }
    default:
      return refuse(node, `a ${node.type} in a condition`);
  }
}
