/**
 * What a script's source can reach, found by a conservative scan of its text (no parser): the
 * runtime copies into the isolate only the variables and the properties of `this` a script names.
 * Every guess errs towards sending more: a name inside a string or a comment counts as used, and
 * any use of `this` other than `this.<name>` sends the whole object. Names are JavaScript's:
 * any Unicode letter, and escapes (`\u0068ide` is `hide`, as static plans read it).
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

/** An identifier as JavaScript reads it (ID_Start, then ID_Continue, ZWNJ and ZWJ), once escapes are decoded. */
const ID = '[\\p{ID_Start}$_][\\p{ID_Continue}$\\u200C\\u200D]*';
/** A character that continues an identifier: before or after a name, it makes the name another. */
const PART = '[\\p{ID_Continue}$\\u200C\\u200D]';
const IDENTIFIER = new RegExp(ID, 'gu');
const THIS = new RegExp(`(?<!${PART})this(?!${PART})`, 'gu');
const MEMBER = new RegExp(`^\\s*\\.\\s*(${ID})(?!${PART})`, 'u');
/** `\u0068` and `\u{68}`: in an identifier, the character itself (JavaScript reads `\u0068ide` as `hide`). */
const ESCAPE = /\\u(?:\{([0-9a-fA-F]{1,6})\}|([0-9a-fA-F]{4}))/g;
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

/** `x =`, `x +=`, `x++`, ... (not `==`, `=>`, `<=`, `.x =`). */
const ASSIGN_AFTER = new RegExp(`(?<!${PART}|\\.)(${ID})\\s*(?:=(?![=>])|[-+*/%&|^]=|\\*\\*=|<<=|>>>?=|&&=|\\|\\|=|\\?\\?=|\\+\\+|--)`, 'gu');
/** `++x`, `--x`. */
const ASSIGN_BEFORE = new RegExp(`(?:\\+\\+|--)\\s*(${ID})`, 'gu');
/** `for (k in o)`, `for (v of list)` without a declaration. */
const FOR_TARGET = new RegExp(`(?<!${PART})for\\s*\\(\\s*(${ID})\\s+(?:in|of)(?!${PART})`, 'gu');
/** Destructuring assignments `[a, b] = ...`, `({ a, b: c } = ...)`: every name inside counts. */
const DESTRUCTURE = /[[{]([\p{ID_Continue}$\u200C\u200D\s,:.]*)[\]}]\s*=(?![=>])/gu;

/**
 * The source with every `\u` escape decoded, for the scans below only: in an identifier it is the
 * character (`\u0068ide` is the name `hide`); in a string or a comment it only adds names, as any
 * text there does.
 */
function decodeEscapes(source: string): string {
  if (!source.includes('\\u')) return source;
  return source.replace(ESCAPE, (escape, braced: string | undefined, four: string | undefined) => {
    const code = Number.parseInt(braced ?? four ?? '', 16);
    return code <= 0x10ffff ? String.fromCodePoint(code) : escape;
  });
}

export function analyzeSource(text: string): SourceUsage {
  const source = decodeEscapes(text);
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
