import { isPlainObject } from '../query/parseQueryString.js';
import type { PropertyDef, PropertyType } from '../types.js';
import type { ConditionNode, OperatorNode, RuleNode, ValueNode, VariableRef, VariableRoot } from './ruleTypes.js';

/** What a rule is checked against when the app loads. */
export interface RuleScope {
  /** Where the rule is, for errors: `resources/posts/config.json: rules.update`. */
  readonly where: string;
  /** The collection's properties (bare keys and `@new.*` / `@old.*` name them). */
  readonly properties: Record<string, PropertyDef>;
  /**
   * The properties of the logged-in user's collection (`@me.*`); undefined when unknown (then any
   * `@me.<prop>` is accepted, untyped).
   */
  readonly me: Record<string, PropertyDef> | undefined;
  /** The variables this rule may use (`@old` only in update rules...). */
  readonly variables: ReadonlySet<VariableRoot>;
}

/** A rule that does not load: the message names the file, the rule and the bad part. */
export class RuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RuleError';
  }
}

const MAX_DEPTH = 8;
const MAX_REGEX_LENGTH = 512;
const COMPARISONS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte']);
const LISTS = new Set(['$in', '$nin', '$all']);
const ROOTS: readonly VariableRoot[] = ['me', 'root', 'query', 'new', 'old', 'now'];
/** A variable whose type is not known (a query value, a property inside an object). */
const UNTYPED: PropertyDef = { type: 'object' };

/** Checks a rule as written in config.json and turns it into a {@link RuleNode}; throws {@link RuleError}. */
export function parseRule(source: unknown, scope: RuleScope): RuleNode {
  if (typeof source === 'boolean') return { kind: 'constant', value: source };
  if (!isPlainObject(source)) throw new RuleError(`${scope.where}: a rule is true, false or a query object, not ${describe(source)}`);
  return parseQuery(source, scope, 0);
}

function parseQuery(query: Record<string, unknown>, scope: RuleScope, depth: number): RuleNode {
  if (depth > MAX_DEPTH) throw new RuleError(`${scope.where}: nested too deeply`);
  const children: RuleNode[] = [];
  for (const key of Object.keys(query)) {
    const value = query[key];
    if (key === '$or' || key === '$and' || key === '$nor') {
      if (!Array.isArray(value) || value.length === 0 || !value.every(isPlainObject)) throw new RuleError(`${scope.where}: ${key} needs a non-empty array of query objects`);
      const branches = (value as Record<string, unknown>[]).map((branch) => parseQuery(branch, scope, depth + 1));
      children.push({ kind: key === '$or' ? 'or' : key === '$and' ? 'and' : 'nor', children: branches });
    } else if (key.startsWith('$')) {
      throw new RuleError(`${scope.where}: unknown operator ${key} (a rule's top level takes properties, variables, $or, $and and $nor)`);
    } else if (key.startsWith('@')) {
      const ref = parseVariable(key, scope);
      children.push({ kind: 'variable', ref, condition: parseCondition(key, value, typeOfVariable(ref, scope), scope, depth) });
    } else {
      children.push({ kind: 'property', path: key, condition: parseCondition(key, value, propertyOf(key, scope), scope, depth) });
    }
  }
  return children.length === 1 ? (children[0] as RuleNode) : { kind: 'and', children };
}

/** A bare key: a property, `id`, or a path inside an object or array property (`address.city`). */
function propertyOf(key: string, scope: RuleScope): PropertyDef {
  if (key === 'id') return { type: 'string' };
  if (Object.hasOwn(scope.properties, key)) return scope.properties[key] as PropertyDef;
  const dot = key.indexOf('.');
  const head = dot > 0 ? key.slice(0, dot) : key;
  const parent = Object.hasOwn(scope.properties, head) ? scope.properties[head] : undefined;
  if (parent && dot > 0 && (parent.type === 'object' || parent.type === 'array')) return UNTYPED;
  throw new RuleError(`${scope.where}: unknown property "${key}"${known(scope.properties)}`);
}

function parseVariable(text: string, scope: RuleScope): VariableRef {
  const [name = '', ...path] = text.slice(1).split('.');
  const root = ROOTS.find((r) => r === name);
  if (root === undefined) throw new RuleError(`${scope.where}: unknown variable ${text} (use @me, @root, @query, @new, @old or @now)`);
  if (!scope.variables.has(root)) throw new RuleError(`${scope.where}: ${text} is not available in this rule (${[...scope.variables].map((v) => `@${v}`).join(', ')} are)`);
  if (path.some((part) => part === '')) throw new RuleError(`${scope.where}: malformed variable ${text}`);
  if ((root === 'root' || root === 'now') && path.length > 0) throw new RuleError(`${scope.where}: @${root} has no properties (${text})`);
  if ((root === 'query' || root === 'new' || root === 'old') && path.length === 0) throw new RuleError(`${scope.where}: name a property of @${root} (@${root}.<name>)`);
  const ref: VariableRef = { root, path, text };
  typeOfVariable(ref, scope);
  return ref;
}

/** A variable's type as far as the configs tell; checks that the property it names exists. */
function typeOfVariable(ref: VariableRef, scope: RuleScope): PropertyDef {
  switch (ref.root) {
    case 'root':
      return { type: 'boolean' };
    case 'now':
      return { type: 'number' };
    case 'query':
      return UNTYPED;
    case 'me':
      if (ref.path.length === 0) return UNTYPED;
      return nestedType(ref, scope.me === undefined ? undefined : { id: { type: 'string' }, username: { type: 'string' }, ...scope.me }, scope, 'the user collection');
    case 'new':
    case 'old':
      return nestedType(ref, { id: { type: 'string' }, ...scope.properties }, scope, 'this collection');
  }
}

function nestedType(ref: VariableRef, properties: Record<string, PropertyDef> | undefined, scope: RuleScope, owner: string): PropertyDef {
  if (properties === undefined) return UNTYPED;
  const head = ref.path[0] as string;
  const def = Object.hasOwn(properties, head) ? properties[head] : undefined;
  if (def === undefined || (head === 'password' && ref.root === 'me')) throw new RuleError(`${scope.where}: ${ref.text} names no property of ${owner}${known(properties)}`);
  if (ref.path.length === 1) return def;
  if (def.type !== 'object' && def.type !== 'array') throw new RuleError(`${scope.where}: ${ref.text}: ${head} is a ${def.type}, it has no properties`);
  return UNTYPED;
}

function parseCondition(key: string, value: unknown, def: PropertyDef, scope: RuleScope, depth: number): ConditionNode {
  if (depth > MAX_DEPTH) throw new RuleError(`${scope.where}: nested too deeply`);
  if (isPlainObject(value) && !isLiteral(value)) {
    const keys = Object.keys(value);
    const operators = keys.filter((k) => k.startsWith('$'));
    if (operators.length > 0) {
      if (operators.length !== keys.length) throw new RuleError(`${scope.where}: ${key}: operators cannot be mixed with plain keys`);
      return { kind: 'operators', operators: parseOperators(key, value, def, scope, depth) };
    }
  }
  return { kind: 'equals', value: parseValue(key, value, def, scope), def };
}

function parseOperators(key: string, ops: Record<string, unknown>, def: PropertyDef, scope: RuleScope, depth: number): OperatorNode[] {
  const out: OperatorNode[] = [];
  for (const op of Object.keys(ops)) {
    const arg = ops[op];
    if (COMPARISONS.has(op)) {
      out.push({ op: op as '$eq', arg: parseValue(key, arg, def, scope), def });
    } else if (LISTS.has(op)) {
      out.push({ op: op as '$in', arg: parseList(key, op, arg, def, scope), def });
    } else if (op === '$exists') {
      if (typeof arg !== 'boolean') throw new RuleError(`${scope.where}: ${key}: $exists takes true or false`);
      out.push({ op, arg });
    } else if (op === '$size') {
      if (typeof arg !== 'number' || !Number.isSafeInteger(arg) || arg < 0) throw new RuleError(`${scope.where}: ${key}: $size takes a non-negative integer`);
      out.push({ op, arg });
    } else if (op === '$regex') {
      out.push({ op, arg: parseRegex(key, arg, ops.$options, scope) });
    } else if (op === '$options') {
      if (ops.$regex === undefined) throw new RuleError(`${scope.where}: ${key}: $options needs $regex`);
    } else if (op === '$not') {
      if (!isPlainObject(arg) || !Object.keys(arg).every((k) => k.startsWith('$')) || Object.keys(arg).length === 0) throw new RuleError(`${scope.where}: ${key}: $not needs an operator object`);
      out.push({ op, arg: parseCondition(key, arg, def, scope, depth + 1) });
    } else if (op === '$elemMatch') {
      out.push({ op, arg: parseElemMatch(key, arg, scope, depth + 1) });
    } else {
      throw new RuleError(`${scope.where}: ${key}: unknown operator ${op}`);
    }
  }
  return out;
}

function parseElemMatch(key: string, arg: unknown, scope: RuleScope, depth: number): ConditionNode | Record<string, ConditionNode> {
  if (!isPlainObject(arg) || Object.keys(arg).length === 0) throw new RuleError(`${scope.where}: ${key}: $elemMatch needs an object`);
  const keys = Object.keys(arg);
  if (keys.every((k) => k.startsWith('$'))) return parseCondition(key, arg, UNTYPED, scope, depth);
  const out: Record<string, ConditionNode> = {};
  for (const k of keys) {
    if (k.startsWith('$') || k.startsWith('@')) throw new RuleError(`${scope.where}: ${key}: $elemMatch takes either operators or the elements' properties, not ${k}`);
    out[k] = parseCondition(`${key}.${k}`, arg[k], UNTYPED, scope, depth + 1);
  }
  return out;
}

function parseList(key: string, op: string, arg: unknown, def: PropertyDef, scope: RuleScope): ValueNode {
  const element = def.type === 'array' ? UNTYPED : def;
  if (typeof arg === 'string' && arg.startsWith('@')) {
    const ref = parseVariable(arg, scope);
    const type = typeOfVariable(ref, scope).type;
    if (type !== 'array' && type !== 'object') throw new RuleError(`${scope.where}: ${key}: ${op} needs an array, ${ref.text} is a ${type}`);
    return { kind: 'variable', ref };
  }
  if (!Array.isArray(arg)) throw new RuleError(`${scope.where}: ${key}: ${op} needs an array`);
  return { kind: 'list', items: arg.map((item) => parseValue(key, item, element, scope)) };
}

/** A value position: a variable (`"@me.id"`), `{"$literal": ...}` or a plain JSON value, type-checked. */
function parseValue(key: string, value: unknown, def: PropertyDef, scope: RuleScope): ValueNode {
  if (typeof value === 'string' && value.startsWith('@')) {
    const ref = parseVariable(value, scope);
    const type = typeOfVariable(ref, scope).type;
    if (isScalar(def.type) && isScalar(type) && type !== def.type) throw new RuleError(`${scope.where}: ${key} is a ${def.type}, ${ref.text} is a ${type}`);
    return { kind: 'variable', ref };
  }
  const literal = isLiteral(value) ? value.$literal : value;
  if (isPlainObject(literal) || Array.isArray(literal)) assertNoOperators(key, literal, scope, 0);
  else if (literal !== null && isScalar(def.type) && typeof literal !== def.type) {
    throw new RuleError(`${scope.where}: ${key} is a ${def.type}, ${JSON.stringify(literal)} is a ${typeof literal}`);
  }
  return { kind: 'literal', value: literal };
}

function parseRegex(key: string, pattern: unknown, options: unknown, scope: RuleScope): RegExp {
  if (typeof pattern !== 'string' || pattern.startsWith('@')) throw new RuleError(`${scope.where}: ${key}: $regex takes a literal string (no variables)`);
  if (pattern.length > MAX_REGEX_LENGTH) throw new RuleError(`${scope.where}: ${key}: $regex longer than ${MAX_REGEX_LENGTH} characters`);
  const flags = options === undefined ? '' : options;
  if (typeof flags !== 'string' || !/^[imsu]*$/.test(flags)) throw new RuleError(`${scope.where}: ${key}: $options may hold only the flags i, m, s and u`);
  try {
    return new RegExp(pattern, [...new Set(flags)].join(''));
  } catch {
    throw new RuleError(`${scope.where}: ${key}: invalid regular expression`);
  }
}

function assertNoOperators(key: string, value: unknown, scope: RuleScope, depth: number): void {
  if (depth > MAX_DEPTH) throw new RuleError(`${scope.where}: ${key}: value nested too deeply`);
  if (Array.isArray(value)) for (const v of value) assertNoOperators(key, v, scope, depth + 1);
  else if (isPlainObject(value)) {
    for (const k of Object.keys(value)) {
      if (k.startsWith('$')) throw new RuleError(`${scope.where}: ${key}: operator ${k} is not allowed inside a value`);
      assertNoOperators(key, value[k], scope, depth + 1);
    }
  }
}

function isLiteral(value: unknown): value is { $literal: unknown } {
  return isPlainObject(value) && Object.keys(value).length === 1 && Object.hasOwn(value, '$literal');
}

function isScalar(type: PropertyType): boolean {
  return type === 'string' || type === 'number' || type === 'boolean';
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function known(properties: Record<string, PropertyDef>): string {
  const names = Object.keys(properties);
  return names.length === 0 ? '' : ` (known: ${names.join(', ')})`;
}
