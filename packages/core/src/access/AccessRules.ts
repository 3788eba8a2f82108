import type { Filter } from '../store/Store.js';
import type { PropertyDef } from '../types.js';
import { compileRule, ruleAllows } from './compileRule.js';
import type { CompiledRule } from './compileRule.js';
import { RuleError, parseRule } from './parseRule.js';
import { ACCESS_ACTIONS } from './ruleTypes.js';
import type { AccessAction, RuleNode, RuleVariables, VariableRoot } from './ruleTypes.js';

/** What a Collection's rules are read from (config.json's `rules` and its properties' `read`/`write`). */
export interface AccessRulesSource {
  /** config.json's `rules`: one rule per action; absent actions are open. */
  rules?: unknown;
  properties: Record<string, PropertyDef>;
  /** Where they were written, for errors: `resources/posts/config.json`. */
  file: string;
  /** The logged-in user's collection properties (`@me.*` is checked against them); undefined: unchecked. */
  me?: Record<string, PropertyDef> | undefined;
}

/** The rules of one property, compiled for a request: read and write. */
export interface PropertyRules {
  readonly read: CompiledRule;
  readonly write: CompiledRule;
}

const BASE: readonly VariableRoot[] = ['me', 'root', 'query', 'now'];
const VARIABLES: Record<AccessAction | 'propertyRead' | 'propertyWrite', ReadonlySet<VariableRoot>> = {
  list: new Set(BASE),
  read: new Set(BASE),
  delete: new Set(BASE),
  create: new Set([...BASE, 'new']),
  update: new Set([...BASE, 'new', 'old']),
  propertyRead: new Set(BASE),
  propertyWrite: new Set([...BASE, 'new', 'old']),
};

/**
 * A Collection's access rules, checked once at load: one rule per action (absent = open) and
 * per-property read/write rules. Requests compile them with their variables ({@link compileRule}).
 */
export class AccessRules {
  private readonly actions: Partial<Record<AccessAction, RuleNode>>;
  private readonly propertyRead: ReadonlyMap<string, RuleNode>;
  private readonly propertyWrite: ReadonlyMap<string, RuleNode>;

  private constructor(actions: Partial<Record<AccessAction, RuleNode>>, read: Map<string, RuleNode>, write: Map<string, RuleNode>) {
    this.actions = actions;
    this.propertyRead = read;
    this.propertyWrite = write;
  }

  /** No rule at all: what Deployd apps have. */
  static readonly none = new AccessRules({}, new Map(), new Map());

  /** Checks and parses the rules; throws a {@link RuleError} naming the file, the rule and the bad part. */
  static parse(source: AccessRulesSource): AccessRules {
    const { rules, properties, file, me } = source;
    const actions: Partial<Record<AccessAction, RuleNode>> = {};
    if (rules !== undefined) {
      if (typeof rules !== 'object' || rules === null || Array.isArray(rules)) throw new RuleError(`${file}: "rules" must be an object of ${ACCESS_ACTIONS.join(', ')}`);
      for (const [name, rule] of Object.entries(rules)) {
        const action = ACCESS_ACTIONS.find((a) => a === name);
        if (action === undefined) throw new RuleError(`${file}: unknown rule "${name}" (rules are ${ACCESS_ACTIONS.join(', ')})`);
        const node = parseRule(rule, { where: `${file}: rules.${action}`, properties, me, variables: VARIABLES[action] });
        if (!(node.kind === 'constant' && node.value)) actions[action] = node;
      }
    }
    const read = new Map<string, RuleNode>();
    const write = new Map<string, RuleNode>();
    for (const [name, def] of Object.entries(properties)) {
      if (def.read !== undefined) {
        const node = parseRule(def.read, { where: `${file}: properties.${name}.read`, properties, me, variables: VARIABLES.propertyRead });
        if (!(node.kind === 'constant' && node.value)) read.set(name, node);
      }
      if (def.write !== undefined) {
        const node = parseRule(def.write, { where: `${file}: properties.${name}.write`, properties, me, variables: VARIABLES.propertyWrite });
        if (!(node.kind === 'constant' && node.value)) write.set(name, node);
      }
    }
    return new AccessRules(actions, read, write);
  }

  /** Whether an action has no rule (or `true`): anyone may. */
  isOpen(action: AccessAction): boolean {
    return this.actions[action] === undefined;
  }

  /** Whether some property has a read rule (answers must be filtered property by property). */
  get hasPropertyReadRules(): boolean {
    return this.propertyRead.size > 0;
  }

  /** Whether some property has a write rule. */
  get hasPropertyWriteRules(): boolean {
    return this.propertyWrite.size > 0;
  }

  /** The action's rule for these variables: true, false or the filter of what it allows. */
  compile(action: AccessAction, vars: RuleVariables): CompiledRule {
    const node = this.actions[action];
    return node === undefined ? true : compileRule(node, vars);
  }

  /** Whether the action's rule allows this object (the stored one; for create the new one). */
  allows(action: AccessAction, vars: RuleVariables, object: Record<string, unknown>): boolean {
    return ruleAllows(this.compile(action, vars), object);
  }

  /** The read rules of the properties that have one, compiled for these variables. */
  propertyReadRules(vars: RuleVariables): Map<string, CompiledRule> {
    const out = new Map<string, CompiledRule>();
    for (const [name, node] of this.propertyRead) out.set(name, compileRule(node, vars));
    return out;
  }

  /** The property whose write rule refuses this write among `changed`, or undefined when all allow it. */
  refusedWrite(vars: RuleVariables, object: Record<string, unknown>, changed: Iterable<string>): string | undefined {
    for (const name of changed) {
      const node = this.propertyWrite.get(name);
      if (node !== undefined && !ruleAllows(compileRule(node, vars), object)) return name;
    }
    return undefined;
  }

  /** Whether `name` has a write rule and it allows this object (for explain). */
  mayWrite(name: string, vars: RuleVariables, object: Record<string, unknown>): boolean {
    const node = this.propertyWrite.get(name);
    return node === undefined || ruleAllows(compileRule(node, vars), object);
  }
}

/** A filter no object matches: what a rule that allows nothing adds to a query. */
export function matchesNothing(): Filter {
  return { id: { $in: [] } };
}
