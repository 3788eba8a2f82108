import { isPlainObject } from '../query/parseQueryString.js';
import { matchesFilter } from '../store/embeddedStore.js';
import type { Filter } from '../store/Store.js';
import type { PropertyDef } from '../types.js';
import type { ConditionNode, OperatorNode, RuleNode, RuleVariables, ValueNode, VariableRef } from './ruleTypes.js';

/**
 * A rule compiled for one request: true (allows everything), false (allows nothing) or the store
 * filter of the objects it allows.
 */
export type CompiledRule = boolean | Filter;

/** Marks a value position that cannot match: an undefined variable, a value of the wrong type. */
const NO_MATCH = Symbol('no match');
type Built = unknown;

/**
 * Substitutes the request's variables into a rule and folds what depends on variables only
 * (`{"@me.role": "admin"}`) to true or false, leaving a filter on the object's properties.
 * Variables land in value positions only: a value holding `$` keys, a value of the wrong type
 * for its property, or an undefined variable makes that comparison match nothing (so
 * `{"owner": "@me.id"}` never matches for an anonymous caller, not even objects without owner).
 */
export function compileRule(node: RuleNode, vars: RuleVariables): CompiledRule {
  switch (node.kind) {
    case 'constant':
      return node.value;
    case 'and':
      return compileAnd(node.children.map((child) => compileRule(child, vars)));
    case 'or':
      return compileOr(node.children.map((child) => compileRule(child, vars)));
    case 'nor': {
      const any = compileOr(node.children.map((child) => compileRule(child, vars)));
      return typeof any === 'boolean' ? !any : { $nor: [any] };
    }
    case 'property': {
      const condition = buildCondition(node.condition, vars);
      return condition === NO_MATCH ? false : { [node.path]: condition };
    }
    case 'variable':
      return variableHolds(node.ref, node.condition, vars);
  }
}

/** Whether a compiled rule allows this object (tested in memory with the store's meaning of each operator). */
export function ruleAllows(rule: CompiledRule, object: Record<string, unknown>): boolean {
  return typeof rule === 'boolean' ? rule : matchesFilter(object, rule);
}

function compileAnd(parts: CompiledRule[]): CompiledRule {
  const filters: Filter[] = [];
  for (const part of parts) {
    if (part === false) return false;
    if (part !== true) filters.push(part);
  }
  if (filters.length === 0) return true;
  return mergeAll(filters);
}

function compileOr(parts: CompiledRule[]): CompiledRule {
  const filters: Filter[] = [];
  for (const part of parts) {
    if (part === true) return true;
    if (part !== false) filters.push(part);
  }
  if (filters.length === 0) return false;
  return filters.length === 1 ? (filters[0] as Filter) : { $or: filters };
}

/** ANDs filters, keeping them one flat object when their keys differ (so that stores use indexes). */
export function andFilters(a: Filter, b: Filter): Filter {
  if (isEmpty(b)) return a;
  if (isEmpty(a)) return b;
  for (const key of Object.keys(b)) if (Object.hasOwn(a, key)) return { $and: [a, b] };
  return { ...a, ...b };
}

function mergeAll(filters: Filter[]): Filter {
  let out: Filter = {};
  for (const filter of filters) out = andFilters(out, filter);
  return out;
}

function isEmpty(filter: Filter): boolean {
  for (const _key in filter) return false;
  return true;
}

/** A condition on a variable, decided now: the variable's value tested as if it were a property. */
function variableHolds(ref: VariableRef, condition: ConditionNode, vars: RuleVariables): boolean {
  const value = resolve(ref, vars);
  if (value === undefined && !onlyExists(condition)) return false;
  const built = buildCondition(condition, vars);
  if (built === NO_MATCH) return false;
  return matchesFilter(value === undefined ? {} : { v: value }, { v: built });
}

function onlyExists(condition: ConditionNode): boolean {
  return condition.kind === 'operators' && condition.operators.every((op) => op.op === '$exists');
}

function buildCondition(condition: ConditionNode, vars: RuleVariables): Built | typeof NO_MATCH {
  if (condition.kind === 'equals') {
    const value = valueOf(condition.value, condition.def, vars);
    if (value === NO_MATCH) return NO_MATCH;
    // An object or array value is compared with $eq, so that the store never reads it as operators.
    return isPlainObject(value) || Array.isArray(value) ? { $eq: value } : value;
  }
  const out: Record<string, unknown> = {};
  for (const operator of condition.operators) {
    const arg = operatorArg(operator, vars);
    if (arg === NO_MATCH) return NO_MATCH;
    out[operator.op] = arg;
  }
  return out;
}

function operatorArg(operator: OperatorNode, vars: RuleVariables): unknown {
  switch (operator.op) {
    case '$exists':
    case '$size':
    case '$regex':
      return operator.arg;
    case '$not':
      return buildCondition(operator.arg, vars);
    case '$elemMatch': {
      const arg = operator.arg;
      if ('kind' in arg && (arg.kind === 'equals' || arg.kind === 'operators')) return buildCondition(arg as ConditionNode, vars);
      const out: Record<string, unknown> = {};
      for (const [key, sub] of Object.entries(arg as Record<string, ConditionNode>)) {
        const built = buildCondition(sub, vars);
        if (built === NO_MATCH) return NO_MATCH;
        out[key] = built;
      }
      return out;
    }
    case '$in':
    case '$nin':
    case '$all':
      return listOf(operator.arg, operator.def, vars);
    default:
      return valueOf(operator.arg, operator.def, vars);
  }
}

function listOf(node: ValueNode, def: PropertyDef, vars: RuleVariables): unknown[] | typeof NO_MATCH {
  const element: PropertyDef = def.type === 'array' ? { type: 'object' } : def;
  if (node.kind === 'list') {
    const out: unknown[] = [];
    for (const item of node.items) {
      const value = valueOf(item, element, vars);
      if (value === NO_MATCH) return NO_MATCH;
      out.push(value);
    }
    return out;
  }
  const value = node.kind === 'variable' ? resolve(node.ref, vars) : node.value;
  if (!Array.isArray(value)) return NO_MATCH;
  const out: unknown[] = [];
  for (const item of value) {
    const coerced = fit(item, element);
    if (coerced === NO_MATCH) return NO_MATCH;
    out.push(coerced);
  }
  return out;
}

function valueOf(node: ValueNode, def: PropertyDef, vars: RuleVariables): unknown {
  if (node.kind === 'literal') return node.value;
  if (node.kind === 'list') return listOf(node, def, vars);
  const value = resolve(node.ref, vars);
  return value === undefined ? NO_MATCH : fit(value, def);
}

/**
 * A variable's value made fit for a comparison with a property of this type: query-string text
 * becomes a number or boolean as compileQuery would make it; a value of another type, or one
 * holding `$` keys anywhere, cannot match.
 */
function fit(value: unknown, def: PropertyDef): unknown {
  if (value === null) return null;
  if (isPlainObject(value) || Array.isArray(value)) {
    if (def.type === 'string' || def.type === 'number' || def.type === 'boolean') return NO_MATCH;
    return holdsOperators(value, 0) ? NO_MATCH : value;
  }
  switch (def.type) {
    case 'string':
      return typeof value === 'string' ? value : NO_MATCH;
    case 'number':
      if (typeof value === 'number') return Number.isFinite(value) ? value : NO_MATCH;
      return typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : NO_MATCH;
    case 'boolean':
      if (typeof value === 'boolean') return value;
      return value === 'true' ? true : value === 'false' ? false : NO_MATCH;
    default:
      return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : NO_MATCH;
  }
}

function holdsOperators(value: unknown, depth: number): boolean {
  if (depth > 16) return true;
  if (Array.isArray(value)) return value.some((v) => holdsOperators(v, depth + 1));
  if (!isPlainObject(value)) return !(value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean');
  return Object.keys(value).some((k) => k.startsWith('$') || holdsOperators(value[k], depth + 1));
}

/** A variable's value; own properties only, so that `@me.constructor` finds nothing. */
export function resolve(ref: VariableRef, vars: RuleVariables): unknown {
  let value: unknown;
  switch (ref.root) {
    case 'me':
      value = vars.me;
      break;
    case 'root':
      return vars.root;
    case 'now':
      return vars.now;
    case 'query':
      value = vars.query;
      break;
    case 'new':
      value = vars.new;
      break;
    case 'old':
      value = vars.old;
      break;
  }
  for (const part of ref.path) {
    if (!isPlainObject(value) || !Object.hasOwn(value, part)) return undefined;
    value = value[part];
  }
  return value;
}
