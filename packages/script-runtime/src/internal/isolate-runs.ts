import type { IsolateJob, IsolateRun, MakeRunErrors, MakeRunOutput, MakeRunRecords, MakeRunStarts, MakeTaskQueue, RunErrors, RunOutput, RunRecords, RunStarts, TaskQueue } from './isolate-types.js';
import type { JobWire, RunWire } from './wire.js';

/*
 * Runs INSIDE the isolate, in five parts: their errors, their ends and outcomes written into the
 * job's output, their records, their start from the job's items, and the task queue worked
 * through within a time budget. Each factory is serialised with Function.prototype.toString like
 * isolateMain, so it must not reference anything outside its own body.
 */

/** A run's errors: a cancel, a value thrown as a rejection (Deployd), or a script error. */
export function makeRunErrors(deps: Parameters<MakeRunErrors>[0]): RunErrors {
  const { isHostError } = deps;
  const CANCEL = deps.cancel;

  function describe(err: unknown): { m: string; n: string; s: string } {
    try {
      if (err instanceof Error) return { m: String(err.message), n: err.name, s: String(err.stack ?? '') };
      if (err !== null && typeof err === 'object' && 'message' in err) {
        return { m: String((err as { message: unknown }).message), n: 'Error', s: '' };
      }
      return { m: typeof err === 'object' ? JSON.stringify(err) : String(err), n: 'Error', s: '' };
    } catch {
      return { m: 'unprintable value thrown', n: 'Error', s: '' };
    }
  }

  function fail(run: IsolateRun, err: unknown): void {
    if (err === CANCEL || run.cancelled || run.error) return;
    const rejection = isHostError(err) ? undefined : rejectionOf(err);
    if (rejection) run.cancelled = rejection;
    else run.error = describe(err);
  }

  /**
   * As in Deployd, a thrown string (or number) or plain object rejects the request like cancel():
   * 400 with its message, or the object's `statusCode`/`status` when it is 400-599. Anything
   * else thrown (a TypeError, an Error) stays a script error.
   */
  function rejectionOf(err: unknown): { message: string; status: number } | undefined {
    try {
      if (typeof err === 'string' || typeof err === 'number' || typeof err === 'boolean') return { message: String(err), status: 400 };
      if (err === null || typeof err !== 'object' || err instanceof Error) return undefined;
      const proto = Object.getPrototypeOf(err) as unknown;
      if (proto !== Object.prototype && proto !== null) return undefined;
      const o = err as { message?: unknown; statusCode?: unknown; status?: unknown };
      const code = typeof o.statusCode === 'number' ? o.statusCode : o.status;
      const status = typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599 ? code : 400;
      return { message: typeof o.message === 'string' ? o.message : JSON.stringify(err), status };
    } catch {
      return undefined;
    }
  }

  return { fail, describe };
}

/** A run's end, and its outcome written into its job's output in input order (the job completes after its last). */
export function makeRunOutput(deps: Parameters<MakeRunOutput>[0]): RunOutput {
  const { ready, enter, complete } = deps;
  const { diff, repeatIfSame } = deps.outcome;
  const { fail } = deps.errors;
  const { HIDDEN: HAS_HIDDEN, PROTECT: HAS_PROTECT, REST: HAS_REST } = deps.flags;

  const finishable = (run: IsolateRun): boolean =>
    !run.finished && (run.cancelled !== undefined || run.error !== undefined || (run.done && run.pending === 0));

  /**
   * A run that may have settled. A deferred script (one that may go on in microtasks) finishes
   * only in the next `collect` call, after the microtasks of this one ran; any other now.
   */
  function settle(run: IsolateRun): void {
    if (!finishable(run)) return;
    if (run.job.defer) ready.push(run);
    else finish(run);
  }

  function finish(run: IsolateRun): void {
    run.finished = true;
    const job = run.job;
    job.live?.delete(run);
    enter(job.id);
    // In input order (the usual case) the outcome goes straight into the job's output.
    const inOrder = run.index === job.emitted;
    const out = inOrder ? job.out : [];
    const at = out.push(0) - 1;
    let flags: number;
    try {
      flags = diff(run, out);
    } catch (err) {
      // A getter the script defined on `this` may throw.
      fail(run, err);
      while (out.length > at + 1) out.pop();
      flags = 0;
    }
    if (run.hidden) {
      flags |= HAS_HIDDEN;
      out.push(run.hidden);
    }
    if (run.protect) {
      flags |= HAS_PROTECT;
      out.push(run.protect);
    }
    if (run.cancelled || run.errors || run.resultSet || run.error) {
      const rest: RunWire = {};
      if (run.cancelled) rest.c = run.cancelled;
      if (run.errors) rest.e = run.errors;
      if (run.resultSet) {
        rest.s = true;
        rest.r = run.result;
      }
      if (run.error) rest.x = run.error;
      flags |= HAS_REST;
      out.push(rest);
    }
    out[at] = flags;
    if (!inOrder) {
      (job.early ??= new Map()).set(run.index, out);
      return;
    }
    repeatIfSame(job, at);
    job.emitted++;
    // Runs that finished before this one follow it now.
    while (job.early !== undefined && job.early.size > 0) {
      const next = job.early.get(job.emitted);
      if (next === undefined) break;
      job.early.delete(job.emitted);
      for (const value of next) job.out.push(value);
      job.emitted++;
    }
    if (job.emitted === job.count) complete(job);
  }

  /** A run whose body returned or threw, or whose promise settled. */
  function ended(run: IsolateRun, err: unknown): void {
    if (err !== undefined) fail(run, err);
    run.done = true;
    settle(run);
  }

  return { settle, finishable, finish, ended };
}

/** Run records: a new one per run, or (fast jobs) the job's one record renewed for the next run. */
export function makeRunRecords(deps: Parameters<MakeRunRecords>[0]): RunRecords {
  const { api } = deps;
  const { copy, setOwn } = deps.outcome;
  const ITEM_VALUES = deps.itemValues;

  /** What an earlier event of the request hid and protected holds from the start of this run. */
  function begin(run: IsolateRun): void {
    const state = run.job.start?.[run.index];
    if (state !== undefined && state !== 0) api.begin(run, state[0], state[1]);
  }

  function newRun(job: IsolateJob, shape: readonly string[], base: number, combo: JobWire['C'][number]): IsolateRun {
    return {
      thisObj: build(shape, job.items, base + ITEM_VALUES),
      job,
      index: job.started++,
      base,
      shape,
      li: combo[0],
      hi: combo[1],
      bi: combo[2],
      // Every field from the start: runs keep one hidden class, so the code that reads them stays fast.
      vars: undefined,
      hidden: undefined,
      protect: undefined,
      errors: undefined,
      cancelled: undefined,
      result: undefined,
      resultSet: false,
      error: undefined,
      pending: 0,
      done: false,
      finished: false,
    };
  }

  /** The fast job's record made the record of its next run, with the same hidden class. */
  function renew(run: IsolateRun, job: IsolateJob, shape: readonly string[], base: number, combo: JobWire['C'][number]): void {
    run.thisObj = build(shape, job.items, base + ITEM_VALUES);
    run.index = job.started++;
    run.base = base;
    run.shape = shape;
    run.li = combo[0];
    run.hi = combo[1];
    run.bi = combo[2];
    run.vars = run.hidden = run.protect = run.errors = run.cancelled = run.result = run.error = undefined;
    run.resultSet = run.done = run.finished = false;
  }

  /** Builds `this` from an item: its shape's keys, each with a copy of the value sent. */
  function build(keys: readonly string[], items: unknown[], from: number): Record<string, unknown> {
    const obj: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) setOwn(obj, keys[i] as string, copy(items[from + i]));
    return obj;
  }

  return { newRun, renew, begin };
}

/** Starts a job's runs from its items: a Proxy scope each, or (fast jobs) one record and one shared scope. */
export function makeRunStarts(deps: Parameters<MakeRunStarts>[0]): RunStarts {
  const { enter, within, runScope, queue } = deps;
  const { newRun, renew, begin } = deps.records;
  const { fail } = deps.errors;
  const { finish, ended } = deps.output;
  const setCurrent = deps.variables.setCurrent;
  const overBudget = queue.overBudget;
  const ITEM_VALUES = deps.itemValues;

  function start(run: IsolateRun): void {
    const job = run.job;
    enter(job.id);
    let returned: unknown;
    try {
      // Its own scope: the run may go on after its body returned (see runFast for those that cannot).
      const scope = runScope.scopeOf(run);
      returned = within(run, () => job.factory(scope).call(run.thisObj));
    } catch (err) {
      return ended(run, err ?? null);
    }
    // Async scripts (and sync ones that return a promise) end when the promise settles.
    if (returned !== null && typeof returned === 'object' && typeof (returned as { then?: unknown }).then === 'function') {
      (job.live ??= new Set()).add(run);
      (returned as Promise<unknown>).then(
        () => ended(run, undefined),
        (err: unknown) => ended(run, err ?? null),
      );
    } else {
      ended(run, undefined);
      if (!run.finished) (job.live ??= new Set()).add(run);
    }
  }

  /** Starts the job's runs in input order until they are all started or the time budget is used. */
  function runItems(job: IsolateJob): void {
    const items = job.items;
    let started = false;
    while ((job.next < items.length || job.repeats > 0) && !job.dropped) {
      if (started && overBudget()) {
        queue.push(() => runItems(job));
        return;
      }
      started = true;
      let base = job.next;
      if (job.repeats === 0 && (items[base] as number) < 0) {
        job.repeats = -(items[base] as number);
        job.next = base = base + 1;
      }
      let combo = job.lastCombo as JobWire['C'][number];
      if (job.repeats > 0) {
        // One more item like the previous one, without values.
        job.repeats--;
      } else {
        combo = job.combos[items[base] as number] as JobWire['C'][number];
        job.lastCombo = combo;
        job.next = base + ITEM_VALUES + (job.shapes[combo[3]]?.length ?? 0);
      }
      const shape = job.shapes[combo[3]] ?? [];
      if (job.fast) {
        runFast(job, shape, base, combo);
        continue;
      }
      const run = newRun(job, shape, base, combo);
      if (job.start !== undefined) begin(run);
      start(run);
    }
  }

  /**
   * A run of a synchronous job: nothing can refer to it after its body returned (the scope and
   * the Script API functions reach it through `current`), so the job reuses one run record.
   */
  function runFast(job: IsolateJob, shape: readonly string[], base: number, combo: JobWire['C'][number]): void {
    let run = job.record;
    if (run === undefined) run = job.record = newRun(job, shape, base, combo);
    else renew(run, job, shape, base, combo);
    if (job.start !== undefined) begin(run);
    enter(job.id);
    setCurrent(run);
    try {
      (job.bound as (this: Record<string, unknown>) => unknown).call(run.thisObj);
    } catch (err) {
      fail(run, err ?? null);
    } finally {
      setCurrent(undefined);
    }
    run.done = true;
    finish(run);
  }

  return { runItems };
}

/** The tasks of a call (runs to start, host replies to deliver), run until done or the time budget is used. */
export function makeTaskQueue(deps: Parameters<MakeTaskQueue>[0]): TaskQueue {
  const { budgetMs, setCurrent } = deps;
  const queue: ((() => void) | undefined)[] = [];
  let head = 0;
  let pumpStartedAt = 0;
  let lastClock = 0;
  let clockSkip = 0;
  let clockSpan = 0;

  /**
   * Whether the time budget of this call is used. A clock read costs about as much as a trivial
   * run, so while runs keep taking under a millisecond the clock is read every 2nd, 4th, ... up
   * to every 32nd run; a millisecond passing between two reads goes back to every run.
   */
  function overBudget(): boolean {
    if (clockSkip > 0) {
      clockSkip--;
      return false;
    }
    const now = Date.now();
    clockSpan = now === lastClock ? Math.min(clockSpan * 2 + 1, 31) : 0;
    clockSkip = clockSpan;
    lastClock = now;
    return now - pumpStartedAt >= budgetMs;
  }

  /** Runs queued tasks until none is left or the time budget is used; returns how many are left. */
  function pump(): number {
    pumpStartedAt = lastClock = Date.now();
    clockSkip = clockSpan = 0;
    setCurrent(undefined); // a run cut off by the time limit never reached its `finally`
    while (head < queue.length) {
      const task = queue[head];
      queue[head++] = undefined;
      task?.();
      if (Date.now() - pumpStartedAt >= budgetMs) break;
    }
    if (head === queue.length) queue.length = head = 0;
    return queue.length - head;
  }

  const push = (task: () => void): void => {
    queue.push(task);
  };
  const left = (): number => queue.length - head;
  return { push, pump, left, overBudget };
}
