import { isPlainObject } from '@svc/core';
import type { CollectionEvent, CollectionEventRunner, Context, EventOutcome, GetChanges, GetColumns } from '@svc/core';
import { ScriptSyntaxError } from '@svc/script-runtime';
import type { HostApi, RunBudget, RunChanges, RunInput, RunResult, Script, ScriptRuntime } from '@svc/script-runtime';
import { cancelOf, EVENT_LABEL } from './scriptRuns.js';
import type { Compiled, Uses } from './scriptRuns.js';

/** What a Collection's runner needs of the app's scripts (scripts.ts gives it). */
export interface ScriptRunning {
  /** Runs a compiled script once; a syntax error or a failure rejects with the client's error. */
  runOne(compiled: Compiled, input: RunInput): Promise<RunResult>;
  /** The runtime that compiled the script. */
  runtimeOf(script: Script): ScriptRuntime;
  /** The variables of a run for ctx (me, query, ..., ctx when used) and `extra`. */
  locals(ctx: Context, uses: Uses, extra: Record<string, unknown>): Record<string, unknown>;
  /** The functions a run may call (svc, emit); `collection`: whose objects emit() shows per recipient. */
  host(ctx: Context, uses: Uses, collection?: string): HostApi;
  /** The script budget of ctx's request. */
  budgetOf(ctx: Context): RunBudget;
  /** What a run's failure answers (500 in production without details...). */
  failure(err: unknown): Error;
}

/** The locals of a run that reads none (a constant static plan). */
const NO_LOCALS: Record<string, unknown> = Object.freeze({});
/** The changes of a run that assigned or deleted nothing. */
const NONE: readonly string[] = Object.freeze([]);
const NO_CHANGES = Object.freeze({ assigned: NONE, deleted: NONE });

/**
 * A Collection's events, run by @svc/script-runtime: what core needs (CollectionEventRunner) and
 * nothing more. `path` is the collection's ('/todos'); `scripts` its compiled event files by event.
 */
export function collectionEventRunner(path: string, scripts: ReadonlyMap<string, Compiled>, running: ScriptRunning): CollectionEventRunner {
  const name = path.slice(1);
  // Made once: every run of every request used to build its label and inputs by spreading.
  const labels = new Map([...scripts.keys()].map((event) => [event, `${name} ${EVENT_LABEL[event] ?? event}`]));
  const get = scripts.get('get');
  const getScript = get?.script instanceof ScriptSyntaxError ? undefined : get?.script;
  const runner: CollectionEventRunner = {
    has: (event) => scripts.has(event),
    async run(event: CollectionEvent, input): Promise<EventOutcome> {
      const compiled = scripts.get(event) as Compiled;
      const extra = input.locals === undefined ? { previous: input.previous ?? {} } : { previous: input.previous ?? {}, ...input.locals };
      const runInput: RunInput = {
        thisObj: input.object,
        locals: running.locals(input.ctx, compiled.uses, extra),
        host: running.host(input.ctx, compiled.uses, path),
        label: labels.get(event) as string,
        budget: running.budgetOf(input.ctx),
      };
      if (input.hidden !== undefined && input.hidden.length > 0) runInput.hidden = input.hidden;
      if (input.protectedProps !== undefined && input.protectedProps.length > 0) runInput.protected = input.protectedProps;
      const result = await running.runOne(compiled, runInput);
      const cancelled = cancelOf(result);
      if (cancelled !== undefined) {
        if (!input.answerCancel) throw cancelled;
        return { object: result.thisObj, hidden: result.hidden, protectedProps: result.protected, cancelled };
      }
      const outcome: EventOutcome = { object: result.thisObj, hidden: result.hidden, protectedProps: result.protected, changes: changesOf(result) };
      if (event === 'beforerequest' && result.setResultCalled && isPlainObject(result.result)) outcome.query = result.result;
      return outcome;
    },
    async runGetBatch(ctx, objects) {
      const { script, uses } = scripts.get('get') as Compiled;
      if (script instanceof ScriptSyntaxError) throw running.failure(script);
      const shared = running.locals(ctx, uses, { previous: {} });
      const api = running.host(ctx, uses, path);
      let results: RunResult[];
      try {
        // The objects are this query's own copies: changes may go straight into them.
        results = await running.runtimeOf(script).runEach(script, { locals: shared, host: api, label: `${name} On Get`, budget: running.budgetOf(ctx) }, objects, { inPlace: true });
      } catch (err) {
        throw running.failure(err);
      }
      // cancel() (or error()) inside a list leaves that object out, silently.
      return results.map((r) => (r.cancelled || r.errors ? null : { object: r.thisObj, hidden: r.hidden, protectedProps: r.protected, changes: changesOf(r) }));
    },
  };
  if (getScript !== undefined && getScript.reads !== undefined) (runner as { getColumns?: GetColumns }).getColumns = columnsOf(getScript, getScript.reads, get?.uses as Uses, path, running);
  // Only for an On Get that reads nothing: a GET by id answered without a request reads the object only then.
  if (getScript?.constant === true) runner.getNow = constantGet(getScript, labels.get('get') as string, running);
  return runner;
}

/** On Get run on the values of the properties it names (the `columns` plan). */
function columnsOf(script: Script, reads: readonly string[], uses: Uses, path: string, running: ScriptRunning): GetColumns {
  return {
    reads,
    async run(ctx, values, count) {
      const shared = { locals: running.locals(ctx, uses, { previous: {} }), host: running.host(ctx, uses, path), label: `${path.slice(1)} On Get`, budget: running.budgetOf(ctx) };
      let results: RunChanges[];
      try {
        results = await running.runtimeOf(script).runColumns(script, shared, reads, values, count);
      } catch (err) {
        throw running.failure(err);
      }
      // As runGetBatch: a cancelled object is left out.
      const out: (GetChanges | null)[] = new Array<GetChanges | null>(results.length);
      let previous: RunChanges | undefined;
      let last: GetChanges | null = null;
      for (let i = 0; i < results.length; i++) {
        const r = results[i] as RunChanges;
        // Runs with the same outcome share it (the runtime's repeats): one answer object for them.
        if (r !== previous) last = r.cancelled || r.errors ? null : { assigned: r.assigned ?? NONE, values: r.values ?? NONE, deleted: r.deleted ?? NONE, hidden: r.hidden };
        previous = r;
        out[i] = last;
      }
      return out;
    },
  };
}

/** A constant On Get at once (CollectionEventRunner.getNow): its static plan's run, in process. */
function constantGet(script: Script, label: string, running: ScriptRunning): (object: Record<string, unknown>) => EventOutcome | undefined {
  return (object) => {
    let result: RunResult | undefined;
    try {
      // A constant plan reads no variable: the request's locals would make no difference.
      // The object is the caller's copy: changed in place.
      result = running.runtimeOf(script).runNow(script, { thisObj: object, locals: NO_LOCALS, label }, { inPlace: true });
    } catch {
      // What run() would reject with: the usual path runs it again and answers that.
      return undefined;
    }
    if (result === undefined || result.cancelled || result.errors) return undefined;
    return { object: result.thisObj, hidden: result.hidden, protectedProps: result.protected, changes: changesOf(result) };
  };
}

/** What a run assigned and deleted (EventOutcome.changes: GET answers patch the stored text with it). */
function changesOf(result: RunResult): NonNullable<EventOutcome['changes']> {
  return result.assigned === undefined && result.deleted === undefined ? NO_CHANGES : { assigned: result.assigned ?? NONE, deleted: result.deleted ?? NONE };
}
