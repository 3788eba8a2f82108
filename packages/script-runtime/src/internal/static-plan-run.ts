import type { RunChanges, RunInput, RunResult } from '../types.js';
import type { JobInputs, SharedInput } from './codec.js';
import { isInputList } from './codec.js';
import type { PlanExpr, PlanJson, PlanStep, StaticPlan } from './static-plan.js';

/**
 * Applies static plans (static-plan.ts) in the calling process: the RunResults the isolate would
 * give for the same inputs, computed from data. A run declines (and the whole job goes to the
 * script processes, which give the real answer) whenever it meets something the plan does not
 * model exactly:
 * - reading a property of undefined or null (the isolate throws a TypeError), of a string, number
 *   or array (their prototypes answer), or `===` between two objects (identity after copying);
 * - a value that does not cross to the isolate as itself: a non-finite number, a symbol, a BigInt,
 *   an object that is neither a plain object nor an array, or has a toJSON method;
 * - an assignment to a property that the input protects (the isolate throws a TypeError);
 * - a host function or a local that shadows a variable the plan reads (`me` as a host function);
 * - a request whose budget is already spent (the pool answers ScriptTimeoutError).
 * Inputs must be JSON data (RunInput's contract): anything JSON cannot encode fails in the pool.
 */

/** Thrown inside a run that declines: the job goes to the script processes instead. */
const DECLINE: unique symbol = Symbol('decline');

/** What sentValue answers for a property the isolate is not sent (absent, undefined or a function there). */
const NOT_SENT: unique symbol = Symbol('not sent');

/** hidden/protected of runs that have none (the isolate path answers an equal frozen array). */
const NONE: readonly string[] = Object.freeze([]);

const hasOwn = (obj: object, key: string): boolean => Object.prototype.hasOwnProperty.call(obj, key);
const enumerableOwn = (obj: object, key: string): boolean => Object.prototype.propertyIsEnumerable.call(obj, key);

/** What one run did, before its result is made (nothing of the input is changed until then). */
interface RunState {
  readonly thisObj: Record<string, unknown>;
  readonly locals: Record<string, unknown>;
  readonly protect: string[] | undefined;
  /** The properties of `this` the isolate is sent (undefined: all its own enumerable ones). */
  readonly thisProps: readonly string[] | undefined;
  /** Properties of `this` the run assigned, in first-assignment order, with their last values. */
  sets: Map<string, PlanJson> | undefined;
  hidden: string[] | undefined;
  errors: Record<string, string> | undefined;
  cancelled: { message: string; status: number } | undefined;
}

/**
 * The results of a job by its plan, or undefined when any of its runs declines (then nothing was
 * changed). `thisProps`: the properties of `this` the isolate would be sent (analyze.ts), whose
 * order is the order in which it reports changed ones.
 */
export function runPlan(plan: StaticPlan, thisProps: readonly string[] | undefined, inputs: JobInputs, inPlace: boolean): RunResult[] | undefined {
  try {
    const states: RunState[] = [];
    if (isInputList(inputs)) {
      for (const input of inputs) {
        checkShared(plan, input);
        states.push(evaluate(plan, input.thisObj, input, thisProps));
      }
    } else {
      checkShared(plan, inputs.shared);
      // runEach() sends no hidden/protected start to the isolate (encodeJob): its runs start with none.
      const shared: SharedInput = { locals: inputs.shared.locals };
      if (plan.constant) {
        // A plan that reads nothing does the same in every run (On Get's `this.seen = true` over a
        // list): run once; each object is only compared with what it had (assignedOf).
        const template = evaluate(plan, {}, shared, thisProps);
        for (const obj of inputs.objects) {
          checkThis(obj);
          states.push(template);
        }
      } else {
        for (const obj of inputs.objects) states.push(evaluate(plan, obj, shared, thisProps));
      }
    }
    const objects = isInputList(inputs) ? inputs.map((input) => input.thisObj) : inputs.objects;
    // Comparing with what was sent may decline too: only then are objects changed (inPlace), so
    // that a job that declines goes to the script processes with its objects as they were.
    const assigned: (readonly string[] | undefined)[] = [];
    let last: readonly string[] | undefined;
    for (let i = 0; i < states.length; i++) {
      const keys = assignedOf(states[i] as RunState, objects[i] as Record<string, unknown>);
      // One array per distinct key list, as decodeJob hands out: callers (core's stored-JSON
      // patcher) recognise the previous object's list by identity.
      if (keys === undefined) {
        assigned.push(undefined);
      } else if (last !== undefined && sameList(keys, last)) {
        assigned.push(last);
      } else {
        last = keys;
        assigned.push(keys);
      }
    }
    const shared = !isInputList(inputs) && plan.constant;
    return states.map((state, i) => resultOf(state, objects[i] as Record<string, unknown>, assigned[i], inPlace, shared));
  } catch (err) {
    if (err === DECLINE) return undefined;
    throw err;
  }
}

/** What the objects of a job share: a spent budget, a shadowed variable or odd locals decline. */
function checkShared(plan: StaticPlan, input: SharedInput | RunInput): void {
  if (input.budget?.failure !== undefined) throw DECLINE;
  const locals = input.locals as unknown;
  if (locals !== undefined && (locals === null || typeof locals !== 'object')) throw DECLINE;
  if (locals !== undefined && hasOwn(locals, 'undefined') && plan.reads.includes('undefined')) throw DECLINE;
  const host = input.host;
  if (host === undefined || plan.reads.length === 0) return;
  // Host names build the script's variables ('svc.todos.get' is `svc`): one the plan reads is shadowed.
  for (const name in host) {
    const dot = name.indexOf('.');
    if (typeof host[name] === 'function' && plan.reads.includes(dot < 0 ? name : name.slice(0, dot))) throw DECLINE;
  }
}

const NO_LOCALS: Record<string, unknown> = Object.freeze({});

/** `this` must be an object, as the isolate's is (what it is sent of anything else is not modelled). */
function checkThis(thisObj: unknown): void {
  if (thisObj === null || typeof thisObj !== 'object' || Array.isArray(thisObj)) throw DECLINE;
}

function evaluate(plan: StaticPlan, thisObj: unknown, shared: SharedInput | RunInput, thisProps: readonly string[] | undefined): RunState {
  checkThis(thisObj);
  const state: RunState = {
    thisObj: thisObj as Record<string, unknown>,
    locals: shared.locals ?? NO_LOCALS,
    protect: shared.protected !== undefined && shared.protected.length > 0 ? shared.protected.map(String) : undefined,
    thisProps,
    sets: undefined,
    hidden: shared.hidden !== undefined && shared.hidden.length > 0 ? shared.hidden.map(String) : undefined,
    errors: undefined,
    cancelled: undefined,
  };
  exec(plan.steps, state);
  return state;
}

/** Runs steps; true when the run stopped (cancel or return). */
function exec(steps: readonly PlanStep[], state: RunState): boolean {
  for (const step of steps) {
    switch (step.t) {
      case 'set':
        // A protected property throws a TypeError in the isolate.
        if (state.protect?.includes(step.name) === true) throw DECLINE;
        (state.sets ??= new Map()).set(step.name, step.value);
        break;
      case 'hide': {
        const hidden = (state.hidden ??= []);
        if (!hidden.includes(step.name)) hidden.push(step.name);
        break;
      }
      case 'unhide': {
        const at = state.hidden === undefined ? -1 : state.hidden.indexOf(step.name);
        if (at >= 0) state.hidden?.splice(at, 1);
        break;
      }
      case 'cancel':
        if (step.when === undefined || !value(step.when, state) === step.unless) {
          // The first cancel stops the run, so it is the one reported.
          state.cancelled = { message: step.message, status: step.status };
          return true;
        }
        break;
      case 'error':
        if (step.when === undefined || !value(step.when, state) === step.unless) (state.errors ??= {})[step.key] = step.message;
        break;
      case 'if':
        if (exec(value(step.test, state) ? step.then : step.else, state)) return true;
        break;
      case 'return':
        return true;
    }
  }
  return false;
}

/** A condition's value, as the isolate computes it. */
function value(e: PlanExpr, state: RunState): unknown {
  switch (e.t) {
    case 'lit':
      return e.v;
    case 'var':
      if (e.name === 'undefined') return undefined;
      return hasOwn(state.locals, e.name) ? data(state.locals[e.name]) : undefined;
    case 'this':
      return thisValue(state, e.name);
    case 'get':
      return property(value(e.of, state), e.name);
    case 'not':
      return !value(e.of, state);
    case 'eq': {
      const a = value(e.a, state);
      const b = value(e.b, state);
      // Two objects are two copies in the isolate (or one, for this.x === this.x): not modelled.
      if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') throw DECLINE;
      return (a === b) === e.equal;
    }
    case 'and': {
      const a = value(e.a, state);
      return a ? value(e.b, state) : a;
    }
    case 'or': {
      const a = value(e.a, state);
      return a ? a : value(e.b, state);
    }
    case 'isMe': {
      const id = value(e.of, state);
      const me = hasOwn(state.locals, 'me') ? data(state.locals.me) : undefined;
      if (me === null || typeof me !== 'object') return false;
      const mine = property(me, 'id');
      if (mine === undefined) return false;
      if (mine !== null && id !== null && typeof mine === 'object' && typeof id === 'object') throw DECLINE;
      return mine === id;
    }
  }
}

/** `this.<name>`: what the run assigned, else the value the isolate would have been sent. */
function thisValue(state: RunState, name: string): unknown {
  const set = state.sets?.get(name);
  if (set !== undefined) return set;
  const sent = sentValue(state.thisObj, name, state.thisProps);
  return sent === NOT_SENT ? undefined : data(sent);
}

/** `<of>.<name>` on a value the isolate got as JSON. */
function property(of: unknown, name: string): unknown {
  // undefined/null throw a TypeError; primitives and arrays answer from their prototypes.
  if (of === null || typeof of !== 'object' || Array.isArray(of)) throw DECLINE;
  return enumerableOwn(of, name) ? data((of as Record<string, unknown>)[name]) : undefined;
}

/**
 * A value as the isolate sees it after crossing as JSON, when that is the value itself: functions
 * become undefined (left out), anything JSON would change declines.
 */
function data(v: unknown): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return v;
    case 'number':
      if (!Number.isFinite(v)) throw DECLINE;
      return v;
    case 'function':
      return undefined;
    case 'object':
      if (v === null || isPlain(v)) return v;
      throw DECLINE;
    default:
      throw DECLINE;
  }
}

/** A plain object or array without toJSON: JSON writes it as it is (its contents aside). */
function isPlain(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as unknown;
  const plain = Array.isArray(v) ? proto === Array.prototype : proto === Object.prototype || proto === null;
  return plain && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}

/** A property's value as sent to the isolate, or NOT_SENT. */
function sentValue(obj: Record<string, unknown>, key: string, thisProps: readonly string[] | undefined): unknown {
  let v: unknown;
  if (thisProps !== undefined) {
    // Every this.<name> of the source is in thisProps; anything else is not understood here.
    if (!thisProps.includes(key)) throw DECLINE;
    v = obj[key];
  } else {
    v = enumerableOwn(obj, key) ? obj[key] : undefined;
  }
  return v === undefined || typeof v === 'function' ? NOT_SENT : v;
}

/**
 * Whether a literal equals a value after the value crossed as JSON, as the isolate compares what
 * a run left with what it was sent (deep, key order included).
 */
function sameJson(literal: PlanJson, sent: unknown): boolean {
  const v = data(sent);
  if (literal === null || typeof literal !== 'object') return literal === v;
  if (v === null || typeof v !== 'object' || Array.isArray(literal) !== Array.isArray(v)) return false;
  if (Array.isArray(literal)) {
    const list = v as unknown[];
    if (list.length !== literal.length) return false;
    for (let i = 0; i < list.length; i++) {
      const item = list[i];
      // JSON writes null for these: not modelled.
      if (item === undefined || typeof item === 'function') throw DECLINE;
      if (!sameJson(literal[i] as PlanJson, item)) return false;
    }
    return true;
  }
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(literal);
  let at = 0;
  for (const key of Object.keys(obj)) {
    const item = obj[key];
    // JSON leaves these out.
    if (item === undefined || typeof item === 'function') continue;
    if (keys[at] !== key) return false;
    if (!sameJson(literal[key] as PlanJson, item)) return false;
    at++;
  }
  return at === keys.length;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A fresh copy of an array or object literal for one result (callers may change results). */
function copyJson(v: PlanJson): PlanJson {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(copyJson);
  const out: { [key: string]: PlanJson } = {};
  for (const key of Object.keys(v)) out[key] = copyJson(v[key] as PlanJson);
  return out;
}

/**
 * The properties a run assigned that now differ from what the isolate was sent, as decodeJob
 * reports them: those the isolate was sent first (in the order sent), then new ones in the order
 * they were first assigned. Undefined when none differ.
 */
function assignedOf(state: RunState, input: Record<string, unknown>): string[] | undefined {
  if (state.sets === undefined) return undefined;
  const changed: string[] = [];
  const added: string[] = [];
  for (const [key, literal] of state.sets) {
    const sent = sentValue(input, key, state.thisProps);
    if (sent === NOT_SENT) added.push(key);
    else if (!sameJson(literal, sent)) changed.push(key);
  }
  if (changed.length > 1) {
    const order = state.thisProps ?? Object.keys(input);
    changed.sort((a, b) => order.indexOf(a) - order.indexOf(b));
  }
  if (changed.length + added.length === 0) return undefined;
  return added.length === 0 ? changed : changed.concat(added);
}

/** The RunResult of a run, as decodeJob makes it from the isolate's outcome. */
function resultOf(state: RunState, input: Record<string, unknown>, assigned: readonly string[] | undefined, inPlace: boolean, shared: boolean): RunResult {
  let thisObj = input;
  if (assigned !== undefined) {
    if (!inPlace) thisObj = { ...input };
    for (const key of assigned) thisObj[key] = copyJson(state.sets?.get(key) as PlanJson);
  }
  // A state shared by the runs of a constant plan gives each result its own lists and objects.
  const hidden = state.hidden === undefined ? NONE : shared ? state.hidden.slice() : state.hidden;
  const result: RunResult = { thisObj, hidden, protected: state.protect ?? NONE };
  if (assigned !== undefined) result.assigned = assigned;
  if (state.cancelled !== undefined) result.cancelled = shared ? { ...state.cancelled } : state.cancelled;
  if (state.errors !== undefined) result.errors = shared ? { ...state.errors } : state.errors;
  return result;
}

/**
 * One run of a constant plan (one that reads nothing: plan.constant), for a caller that runs the
 * same script once per request (GET by id): the plan is evaluated once per script, and each run
 * only compares `this` with it (absent, equal or different per set property). Runs that compare
 * alike share their `assigned` list (read only, as the isolate path's repeats do), so that a
 * caller may recognise it by identity. Undefined when the run declines, or for an input that
 * starts with hidden or protected properties (runPlan answers those).
 */
export class ConstantRuns {
  private constant: ConstantTemplate | undefined;
  private readonly assignedByState = new Map<number, readonly string[] | undefined>();

  constructor(
    private readonly plan: StaticPlan,
    private readonly thisProps: readonly string[] | undefined,
  ) {}

  run(input: RunInput, inPlace: boolean): RunResult | undefined {
    const thisProps = this.thisProps;
    // Without thisProps the order of changed properties is the object's own: not one per state.
    if (thisProps === undefined || (input.hidden !== undefined && input.hidden.length > 0) || (input.protected !== undefined && input.protected.length > 0)) return undefined;
    try {
      checkShared(this.plan, input);
      checkThis(input.thisObj);
      const { template, sets } = (this.constant ??= constantTemplate(this.plan, thisProps));
      if (sets.length > MAX_CONSTANT_SETS) return undefined;
      let state = 0;
      for (let k = 0; k < sets.length; k++) {
        const [key, literal] = sets[k] as [string, PlanJson];
        state |= setBits(literal, sentValue(input.thisObj, key, thisProps)) << (k * 2);
      }
      let assigned = this.assignedByState.get(state);
      if (assigned === undefined && !this.assignedByState.has(state)) {
        const keys = assignedOfState(sets, state, thisProps);
        assigned = keys.length === 0 ? undefined : keys;
        this.assignedByState.set(state, assigned);
      }
      return resultOf(template, input.thisObj, assigned, inPlace, true);
    } catch (err) {
      if (err === DECLINE) return undefined;
      throw err;
    }
  }
}

/** A constant plan evaluated once (it reads nothing) and the properties it sets, in first-assignment order. */
interface ConstantTemplate {
  readonly template: RunState;
  readonly sets: readonly [string, PlanJson][];
}

/** More set properties than fit two bits each in a state number: such a plan takes the general path. */
const MAX_CONSTANT_SETS = 15;

function constantTemplate(plan: StaticPlan, thisProps: readonly string[] | undefined): ConstantTemplate {
  const template = evaluate(plan, {}, { locals: NO_LOCALS }, thisProps);
  return { template, sets: template.sets === undefined ? [] : [...template.sets] };
}

/**
 * How a value `this` was sent compares with what a constant plan sets: 1 absent (the run adds
 * it), 2 different (the run changes it), 0 equal (the isolate reports it unchanged).
 */
function setBits(literal: PlanJson, sent: unknown): number {
  if (sent === NOT_SENT || sent === undefined || typeof sent === 'function') return 1;
  return sameJson(literal, sent) ? 0 : 2;
}

/**
 * The assigned list of a constant plan's run whose values told `state` (setBits per set property),
 * in the order assignedOf gives: the changed ones in the order sent, then the added ones.
 */
function assignedOfState(sets: readonly [string, PlanJson][], state: number, thisProps: readonly string[]): string[] {
  const changed: string[] = [];
  const added: string[] = [];
  for (let k = 0; k < sets.length; k++) {
    const bits = (state >> (k * 2)) & 3;
    const key = (sets[k] as [string, PlanJson])[0];
    if (bits === 1) added.push(key);
    else if (bits === 2) changed.push(key);
  }
  if (changed.length > 1) changed.sort((a, b) => thisProps.indexOf(a) - thisProps.indexOf(b));
  return changed.concat(added);
}

/** A runColumns job: `count` objects given as the values of `keys` (`values[i * keys.length + k]`). */
export interface ColumnsJob {
  readonly shared: SharedInput;
  readonly keys: readonly string[];
  readonly values: readonly unknown[];
  readonly count: number;
}

/**
 * runColumns by a plan: the RunChanges the script processes would answer for `count` objects given
 * as the values of `keys` (undefined: the object has none), or undefined when a run declines.
 * Runs with the same outcome share one RunChanges (read only), as the isolate path's repeats do.
 */
export function runPlanColumns(plan: StaticPlan, thisProps: readonly string[] | undefined, job: ColumnsJob): RunChanges[] | undefined {
  if (plan.constant) {
    const constant = constantColumns(plan, thisProps, job);
    if (constant !== NOT_MODELLED) return constant;
  }
  const { shared, keys, values, count } = job;
  const objects: Record<string, unknown>[] = new Array<Record<string, unknown>>(count);
  for (let i = 0, at = 0; i < count; i++) {
    const obj: Record<string, unknown> = {};
    for (let k = 0; k < keys.length; k++, at++) {
      const v = values[at];
      if (v !== undefined) obj[keys[k] as string] = v;
    }
    objects[i] = obj;
  }
  const results = runPlan(plan, thisProps, { shared, objects }, true);
  if (results === undefined) return undefined;
  const out: RunChanges[] = new Array<RunChanges>(count);
  let previous: RunChanges | undefined;
  for (let i = 0; i < count; i++) {
    const changes = changesOf(results[i] as RunResult);
    out[i] = previous !== undefined && sameChanges(previous, changes) ? previous : (previous = changes);
  }
  return out;
}

function changesOf(result: RunResult): RunChanges {
  const changes: RunChanges = { hidden: result.hidden, protected: result.protected };
  if (result.assigned !== undefined) {
    changes.assigned = result.assigned;
    changes.values = result.assigned.map((key) => result.thisObj[key]);
  }
  if (result.cancelled !== undefined) changes.cancelled = result.cancelled;
  if (result.errors !== undefined) changes.errors = result.errors;
  return changes;
}

/** Equal outcomes, told cheaply: the same assigned list with equal primitive values, the same lists and cancel, no errors. */
function sameChanges(a: RunChanges, b: RunChanges): boolean {
  if (a.assigned !== b.assigned || a.errors !== undefined || b.errors !== undefined) return false;
  if (!sameList(a.hidden, b.hidden) || !sameList(a.protected, b.protected)) return false;
  if ((a.cancelled === undefined) !== (b.cancelled === undefined)) return false;
  if (a.cancelled !== undefined && (a.cancelled.message !== b.cancelled?.message || a.cancelled.status !== b.cancelled.status)) return false;
  const va = a.values ?? NONE;
  const vb = b.values ?? NONE;
  for (let k = 0; k < va.length; k++) {
    const v = va[k];
    // Objects are copies per run: not shared.
    if (v !== vb[k] || (v !== null && typeof v === 'object')) return false;
  }
  return true;
}

const NOT_MODELLED: unique symbol = Symbol('not modelled here');

/**
 * runPlanColumns for a plan that reads nothing (On Get's `this.seen = true` over a list): the run
 * is evaluated once, and each row only tells, per property the plan sets, whether the value it was
 * sent is absent, equal or different; rows that tell the same share one RunChanges (the assigned
 * lists in the order assignedOf gives). No object is built per row. NOT_MODELLED sends the job to
 * the general path (a set property that is not one of the columns, more than 15 of them).
 */
function constantColumns(plan: StaticPlan, thisProps: readonly string[] | undefined, { shared, keys, values, count }: ColumnsJob): RunChanges[] | undefined | typeof NOT_MODELLED {
  try {
    checkShared(plan, shared);
    const { template, sets } = constantTemplate(plan, thisProps);
    if (sets.length > MAX_CONSTANT_SETS || thisProps === undefined) return NOT_MODELLED;
    const columns = sets.map(([key]) => keys.indexOf(key));
    if (columns.some((c, k) => c < 0 || !thisProps.includes((sets[k] as [string, PlanJson])[0]))) return NOT_MODELLED;
    const width = keys.length;
    const byState = new Map<number, RunChanges>();
    const out: RunChanges[] = new Array<RunChanges>(count);
    for (let i = 0; i < count; i++) {
      let state = 0;
      for (let k = 0; k < sets.length; k++) state |= setBits((sets[k] as [string, PlanJson])[1], values[i * width + (columns[k] as number)]) << (k * 2);
      let changes = byState.get(state);
      if (changes === undefined) byState.set(state, (changes = constantChanges(template, sets, state, thisProps)));
      out[i] = changes;
    }
    return out;
  } catch (err) {
    if (err === DECLINE) return undefined;
    throw err;
  }
}

/** The RunChanges of a constant plan's run whose rows told `state` (see constantColumns). */
function constantChanges(template: RunState, sets: readonly [string, PlanJson][], state: number, thisProps: readonly string[]): RunChanges {
  const assigned = assignedOfState(sets, state, thisProps);
  const changes: RunChanges = { hidden: template.hidden === undefined ? NONE : template.hidden.slice(), protected: template.protect ?? NONE };
  if (assigned.length > 0) {
    changes.assigned = assigned;
    changes.values = assigned.map((key) => copyJson(template.sets?.get(key) as PlanJson));
  }
  if (template.cancelled !== undefined) changes.cancelled = { ...template.cancelled };
  if (template.errors !== undefined) changes.errors = { ...template.errors };
  return changes;
}
