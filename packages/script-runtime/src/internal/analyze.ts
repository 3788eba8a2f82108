/**
 * What a script's source can reach, found by a conservative scan of its text (no parser): the
 * runtime copies into the isolate only the variables and the properties of `this` a script names.
 * Every guess errs towards sending more: a name inside a string or a comment counts as used, and
 * any use of `this` other than `this.<name>` sends the whole object.
 */
export interface SourceUsage {
  /** Identifiers the source mentions; undefined when it calls eval (then everything is sent). */
  readonly names: ReadonlySet<string> | undefined;
  /** Properties of `this` the source reads or writes; undefined when it needs the whole object. */
  readonly thisProps: readonly string[] | undefined;
  /**
   * Names the source may assign without declaring them (`x = 5`, `n++`, `for (k in o)`): a
   * superset, as every other scan here. Only these can become implicit globals; reading any other
   * name the run does not declare throws a ReferenceError, as in JavaScript. Undefined with eval.
   */
  readonly assigned: ReadonlySet<string> | undefined;
  /**
   * The run may go on in microtasks after its body returned (it names promises, then/catch/
   * finally, async or await), so it can only be finished after they ran: one more crossing.
   */
  readonly deferred: boolean;
}

const IDENTIFIER = /[A-Za-z_$][\w$]*/g;
const THIS = /\bthis\b/g;
const MEMBER = /^\s*\.\s*([A-Za-z_$][\w$]*)(?![\w$])/;
// `require` and `fetch`: modules and outbound calls may go on in microtasks (isolate-node.ts).
const DEFERS = ['then', 'catch', 'finally', 'Promise', 'async', 'await', 'require', 'fetch'];

/** Script API functions that read a variable on the script's behalf. */
const IMPLIED: Record<string, readonly string[]> = {
  isMe: ['me'],
  changed: ['previous'],
  protect: ['previous'],
  unprotect: ['previous'],
  // ctx.query is the variable `query`, and ctx.body the variable `body` (one object each).
  ctx: ['query', 'body'],
};

const ID = '[A-Za-z_$][\\w$]*';
/** `x =`, `x +=`, `x++`, ... (not `==`, `=>`, `<=`, `.x =`). */
const ASSIGN_AFTER = new RegExp(`(?<![\\w$.])(${ID})\\s*(?:=(?![=>])|[-+*/%&|^]=|\\*\\*=|<<=|>>>?=|&&=|\\|\\|=|\\?\\?=|\\+\\+|--)`, 'g');
/** `++x`, `--x`. */
const ASSIGN_BEFORE = new RegExp(`(?:\\+\\+|--)\\s*(${ID})`, 'g');
/** `for (k in o)`, `for (v of list)` without a declaration. */
const FOR_TARGET = new RegExp(`\\bfor\\s*\\(\\s*(${ID})\\s+(?:in|of)\\b`, 'g');
/** Destructuring assignments `[a, b] = ...`, `({ a, b: c } = ...)`: every name inside counts. */
const DESTRUCTURE = /[[{]([\w$\s,:.]*)[\]}]\s*=(?![=>])/g;

export function analyzeSource(source: string): SourceUsage {
  const names = new Set(source.match(IDENTIFIER) ?? []);
  // eval sees the whole scope and `this`, under names no scan can find.
  if (names.has('eval')) return { names: undefined, thisProps: undefined, assigned: undefined, deferred: true };
  for (const [api, implied] of Object.entries(IMPLIED)) if (names.has(api)) for (const name of implied) names.add(name);
  return {
    names,
    // changed() and protect() read `this` by a name known only when they run.
    thisProps: names.has('changed') || names.has('protect') ? undefined : thisProperties(source),
    assigned: assignedNames(source),
    deferred: DEFERS.some((name) => names.has(name)),
  };
}

/** Names the source may assign (see SourceUsage.assigned). */
function assignedNames(source: string): ReadonlySet<string> {
  const out = new Set<string>();
  for (const pattern of [ASSIGN_AFTER, ASSIGN_BEFORE, FOR_TARGET]) for (const match of source.matchAll(pattern)) out.add(match[1] as string);
  for (const match of source.matchAll(DESTRUCTURE)) for (const name of (match[1] as string).match(IDENTIFIER) ?? []) out.add(name);
  return out;
}

/**
 * `this.a`, `this .b = 1`, `this.c.d`: the named properties. `this` alone (passed on, spread,
 * enumerated, stringified), `this[k]`, `this?.k` or a property every object inherits (toString,
 * hasOwnProperty, __proto__) means the whole object is needed.
 */
function thisProperties(source: string): readonly string[] | undefined {
  const props = new Set<string>();
  for (const match of source.matchAll(THIS)) {
    const member = MEMBER.exec(source.slice(match.index + 4, match.index + 4 + 256));
    const name = member?.[1];
    if (name === undefined || name in Object.prototype) return undefined;
    props.add(name);
  }
  return [...props];
}
