import type { PropertyDef } from '../types.js';

/** The actions a Collection's `rules` name, one rule each. */
export type AccessAction = 'list' | 'read' | 'create' | 'update' | 'delete';

/** The actions, in the order the docs and errors list them. */
export const ACCESS_ACTIONS: readonly AccessAction[] = ['list', 'read', 'create', 'update', 'delete'];

/**
 * A rule as written in config.json: `true` (anyone), `false` (root only) or a query object in
 * svc's query language whose keys and values may be request variables (`@me.id`, `@new.owner`...).
 */
export type RuleSource = boolean | Record<string, unknown>;

/** A Collection's `rules` setting in config.json. */
export type AccessRulesConfig = Partial<Record<AccessAction, RuleSource>>;

/** The request variables a rule may name. */
export type VariableRoot = 'me' | 'root' | 'query' | 'new' | 'old' | 'now';

/** A variable in a rule (`@me.id`): its root and the property path below it. */
export interface VariableRef {
  readonly root: VariableRoot;
  readonly path: readonly string[];
  /** As written, for errors (`@me.id`). */
  readonly text: string;
}

/** A value position of a rule: a literal from the rule, a variable, or a list of either ($in). */
export type ValueNode = { readonly kind: 'literal'; readonly value: unknown } | { readonly kind: 'variable'; readonly ref: VariableRef } | { readonly kind: 'list'; readonly items: readonly ValueNode[] };

/** One operator of a condition with its argument. */
export type OperatorNode =
  | { readonly op: '$eq' | '$ne' | '$gt' | '$gte' | '$lt' | '$lte'; readonly arg: ValueNode; readonly def: PropertyDef }
  | { readonly op: '$in' | '$nin' | '$all'; readonly arg: ValueNode; readonly def: PropertyDef }
  | { readonly op: '$exists'; readonly arg: boolean }
  | { readonly op: '$size'; readonly arg: number }
  | { readonly op: '$regex'; readonly arg: RegExp }
  | { readonly op: '$not'; readonly arg: ConditionNode }
  | { readonly op: '$elemMatch'; readonly arg: ConditionNode | Readonly<Record<string, ConditionNode>> };

/** What a key of a rule is tested against: a plain value (equality) or operators. */
export type ConditionNode = { readonly kind: 'equals'; readonly value: ValueNode; readonly def: PropertyDef } | { readonly kind: 'operators'; readonly operators: readonly OperatorNode[] };

/** A checked rule, ready to be compiled for a request. */
export type RuleNode =
  | { readonly kind: 'constant'; readonly value: boolean }
  | { readonly kind: 'and' | 'or' | 'nor'; readonly children: readonly RuleNode[] }
  /** A condition on a property (or `id`, or a dotted path) of the object. */
  | { readonly kind: 'property'; readonly path: string; readonly condition: ConditionNode }
  /** A condition on a request variable (`{"@me.role": "admin"}`): decided per request. */
  | { readonly kind: 'variable'; readonly ref: VariableRef; readonly condition: ConditionNode };

/** The values of the request variables for one evaluation. */
export interface RuleVariables {
  /** The logged-in user (no password), null when anonymous. */
  readonly me: Record<string, unknown> | null;
  readonly root: boolean;
  readonly query: Record<string, unknown>;
  /** The values after the write (create, update); undefined elsewhere. */
  readonly new?: Record<string, unknown> | undefined;
  /** The stored values before an update; undefined elsewhere. */
  readonly old?: Record<string, unknown> | undefined;
  /** Milliseconds since the epoch, one value per request. */
  readonly now: number;
}
