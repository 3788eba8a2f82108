import { SvcError } from '../errors.js';
import type { Filter } from '../store/Store.js';
import { matchesNothing } from './AccessRules.js';
import type { AccessRules } from './AccessRules.js';
import { ruleAllows } from './compileRule.js';
import type { CompiledRule } from './compileRule.js';
import type { AccessAction, RuleVariables } from './ruleTypes.js';

/** The values of a write a rule sees beside the request: `@new` and, on an update, `@old`. */
export interface WriteValues {
  new?: Record<string, unknown> | undefined;
  old?: Record<string, unknown> | undefined;
}

/**
 * Who asks, as the rules see them (`@me`, `@root`, `@query`; root and scripts' own calls bypass
 * every rule). A request's Context is one; the synchronous GET path, which has no Context, makes
 * one for its anonymous visitor ({@link anonymousCaller}), so that every path asks the same code
 * with the same variables.
 */
export interface RuleCaller {
  readonly me: Record<string, unknown> | undefined;
  readonly isRoot: boolean;
  readonly internal: boolean;
  readonly query: Record<string, unknown>;
}

/** An anonymous visitor who is not root, asking with this query (a GET by id has `{id}`). */
export function anonymousCaller(query: Record<string, unknown>): RuleCaller {
  return { me: undefined, isRoot: false, internal: false, query };
}

/**
 * How a property read rule applies to one request's answers: the properties dropped from every
 * object, and those kept only on the objects their rule allows.
 */
export interface ReadPlan {
  readonly dropped: ReadonlySet<string>;
  readonly perObject: ReadonlyMap<string, Filter>;
}

/**
 * The one enforcement point of a Collection's access rules for a request's caller. Root and
 * internal requests (event scripts' `svc.*` calls: trusted server code) bypass every rule.
 */
export class CollectionAccess {
  constructor(readonly rules: AccessRules) {}

  /** Root and scripts' own calls are trusted: no rule applies to them. */
  bypasses(ctx: RuleCaller): boolean {
    return ctx.isRoot || ctx.internal;
  }

  /**
   * Whether stored objects' own JSON texts may answer this action: no property read rule changes
   * an object. (A `list` rule is part of the store query; a `read` rule is tested on the text's
   * object: {@link allowsText}.)
   */
  showsStored(_action: 'list' | 'read'): boolean {
    return !this.rules.hasPropertyReadRules;
  }

  /** Whether ctx's caller may read the object whose stored JSON text this is (GET by id answered as stored). */
  allowsText(ctx: RuleCaller, text: string): boolean {
    if (this.bypasses(ctx) || this.rules.isOpen('read')) return true;
    return this.rules.allows('read', this.variables(ctx), JSON.parse(text) as Record<string, unknown>);
  }

  /** The request variables of ctx (and of the write under way): the one place rules' variables are made. */
  variables(ctx: RuleCaller, values: WriteValues = {}): RuleVariables {
    return { me: ctx.me ?? null, root: ctx.isRoot, query: ctx.query, new: values.new, old: values.old, now: Date.now() };
  }

  /** The store filter of what ctx's caller may list or read ({} when nothing limits it). */
  filter(ctx: RuleCaller, action: AccessAction): Filter {
    if (this.bypasses(ctx) || this.rules.isOpen(action)) return {};
    const compiled = this.rules.compile(action, this.variables(ctx));
    if (compiled === true) return {};
    return compiled === false ? matchesNothing() : compiled;
  }

  /** The store filter of a write's rule with the write's values (`@new`, `@old` folded in). */
  writeFilter(ctx: RuleCaller, action: 'update' | 'delete', values: WriteValues): Filter {
    if (this.bypasses(ctx) || this.rules.isOpen(action)) return {};
    const compiled = this.rules.compile(action, this.variables(ctx, values));
    if (compiled === true) return {};
    return compiled === false ? matchesNothing() : compiled;
  }

  /** Whether ctx's caller may do `action` on this object. */
  allows(ctx: RuleCaller, action: AccessAction, object: Record<string, unknown>, values: WriteValues = {}): boolean {
    if (this.bypasses(ctx) || this.rules.isOpen(action)) return true;
    return this.rules.allows(action, this.variables(ctx, values), object);
  }

  /** Throws 403 naming the rule when ctx's caller may not do `action` on this object. */
  assert(ctx: RuleCaller, action: AccessAction, object: Record<string, unknown>, values: WriteValues = {}): void {
    if (!this.allows(ctx, action, object, values)) throw new SvcError('FORBIDDEN', `forbidden by rules.${action}`);
  }

  /** Throws 403 naming the property when its write rule refuses one of the `changed` properties. */
  assertWrites(ctx: RuleCaller, object: Record<string, unknown>, changed: Iterable<string>, values: WriteValues): void {
    if (this.bypasses(ctx) || !this.rules.hasPropertyWriteRules) return;
    const refused = this.rules.refusedWrite(this.variables(ctx, values), object, changed);
    if (refused !== undefined) {
      throw new SvcError('FORBIDDEN', `forbidden by properties.${refused}.write`, { errors: { [refused]: `forbidden by properties.${refused}.write` } });
    }
  }

  /**
   * How property read rules shape ctx's answers; undefined when they keep everything (root,
   * internal, no such rule, or every rule allows this caller everywhere).
   */
  readPlan(ctx: RuleCaller): ReadPlan | undefined {
    if (this.bypasses(ctx) || !this.rules.hasPropertyReadRules) return undefined;
    const dropped = new Set<string>();
    const perObject = new Map<string, Filter>();
    for (const [name, rule] of this.rules.propertyReadRules(this.variables(ctx))) {
      if (rule === false) dropped.add(name);
      else if (rule !== true) perObject.set(name, rule);
    }
    return dropped.size === 0 && perObject.size === 0 ? undefined : { dropped, perObject };
  }

  /**
   * The properties the plan hides on this stored object: those dropped for the caller, and those
   * whose per-object rule does not allow it. A write's answer must not depend on their values.
   */
  hiddenOn(plan: ReadPlan | undefined, stored: Record<string, unknown>): Set<string> {
    const hidden = new Set<string>();
    if (plan === undefined) return hidden;
    for (const name of plan.dropped) hidden.add(name);
    for (const [name, rule] of plan.perObject) if (!ruleAllows(rule, stored)) hidden.add(name);
    return hidden;
  }

  /** The properties ctx's caller may not filter or sort on: those a read rule does not allow on every object. */
  unqueryable(plan: ReadPlan | undefined): Set<string> {
    return plan === undefined ? new Set() : new Set([...plan.dropped, ...plan.perObject.keys()]);
  }

  /**
   * An answered object without the properties the caller may not read. Rules that depend on the
   * object are evaluated on `stored`, the object as stored (never on the answer, which `$fields`
   * or On Get may have changed); with `stored` null only the others apply.
   */
  visible(object: Record<string, unknown>, plan: ReadPlan | undefined, stored: Record<string, unknown> | null): Record<string, unknown> {
    if (plan === undefined) return object;
    const hidden = new Set<string>();
    for (const name of plan.dropped) if (Object.hasOwn(object, name)) hidden.add(name);
    if (stored !== null) for (const [name, rule] of plan.perObject) if (Object.hasOwn(object, name) && !ruleAllows(rule, stored)) hidden.add(name);
    if (hidden.size === 0) return object;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(object)) if (!hidden.has(key)) out[key] = object[key];
    return out;
  }

  /** What the rules let ctx's caller do with this object (the dashboard's "try as this user"). */
  explain(ctx: RuleCaller, doc: Record<string, unknown>, propertyNames: readonly string[]): AccessExplanation {
    const decide = (action: AccessAction, values: WriteValues = {}): { allowed: boolean; rule: string } => ({
      allowed: this.allows(ctx, action, doc, values),
      rule: this.bypasses(ctx) ? (ctx.isRoot ? 'root' : 'internal') : this.rules.isOpen(action) ? 'open' : `rules.${action}`,
    });
    const vars = this.variables(ctx, { new: doc, old: doc });
    const reads = this.bypasses(ctx) ? new Map<string, CompiledRule>() : this.rules.propertyReadRules(vars);
    const properties: Record<string, { read: boolean; write: boolean }> = {};
    for (const name of propertyNames) {
      const rule = reads.get(name);
      properties[name] = {
        read: rule === undefined || ruleAllows(rule, doc),
        write: this.bypasses(ctx) || this.rules.mayWrite(name, vars, doc),
      };
    }
    return { list: decide('list'), read: decide('read'), update: decide('update', { new: doc, old: doc }), delete: decide('delete'), properties };
  }
}

/** {@link CollectionAccess.explain}'s answer: each action's decision and the rule that made it, and each property's. */
export interface AccessExplanation {
  list: { allowed: boolean; rule: string };
  read: { allowed: boolean; rule: string };
  update: { allowed: boolean; rule: string };
  delete: { allowed: boolean; rule: string };
  properties: Record<string, { read: boolean; write: boolean }>;
}
