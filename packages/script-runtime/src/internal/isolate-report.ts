import type { IsolateJob, IsolateRun, MakeReports, MakeSweep, Reports, Sweep } from './isolate-types.js';

/*
 * What a call answers Node (CollectWire), INSIDE the isolate. Each factory is serialised with
 * Function.prototype.toString like isolateMain, so it must not reference anything outside its own
 * body.
 */

/**
 * The runs a call leaves behind. `final` (a `collect` call, after the microtasks): deferred runs
 * that settled finish, and a run that is neither waiting for a host call nor for a queued task
 * can never go on (it awaits a promise nobody settles), so it fails instead of holding its
 * request forever. Otherwise `settled` answers 1 (`m`: call `collect`) when deferred runs are
 * under way.
 */
export function makeSweep(deps: Parameters<MakeSweep>[0]): Sweep {
  const { jobs, ready, enter, output } = deps;

  function settled(left: number, final: boolean): number {
    let more = 0;
    if (final) {
      for (const run of ready.splice(0)) if (output.finishable(run)) output.finish(run);
      if (left === 0) {
        for (const job of jobs.values()) {
          for (const run of job.live ?? []) {
            if (run.finished || run.pending > 0) continue;
            enter(job.id);
            run.error ??= { m: 'the script is waiting for a promise that never settles', n: 'Error', s: '' };
            output.finish(run);
          }
        }
      }
    } else if (ready.length > 0) {
      more = 1;
    } else if (left === 0) {
      for (const job of jobs.values()) {
        if (!job.defer) continue;
        for (const run of job.live ?? []) if (!run.finished && run.pending === 0) more = 1;
        if (more) break;
      }
    }
    return more;
  }
  return { settled };
}

/** What finished, what was logged and the host calls made since the last report, as Node reads them. */
export function makeReports(deps: Parameters<MakeReports>[0]): Reports {
  const { jobs, host, endCall, errors } = deps;
  const REST = deps.flags.REST;
  /** Finished jobs as JSON `[jobId,[shapes,flat]]` and their ids, until the next report. */
  const completed: string[] = [];
  const completedIds: number[] = [];
  const logs: string[] = [];
  // Bounds what a script logging in a loop can buffer before Node collects it.
  const MAX_LOGS = 10_000;
  let droppedLogs = 0;

  function log(run: IsolateRun, level: string, text: string): void {
    if (logs.length < MAX_LOGS) logs.push(JSON.stringify([run.job.labels[run.bi] ?? '', level, text]));
    else droppedLogs++;
  }

  /** A job whose runs all finished (or that has none): its output goes to Node with the next report. */
  function complete(job: IsolateJob): void {
    jobs.delete(job.id);
    let text: string;
    try {
      text = JSON.stringify([job.outShapes, job.out]);
    } catch (err) {
      // A value set by a script that JSON cannot carry (a BigInt, a cycle) fails the job.
      text = JSON.stringify([[], [REST, { x: errors.describe(err) }]]);
    }
    completed.push(`[${job.id},${text}]`);
    completedIds.push(job.id);
  }

  /** A job that could not be queued (not a script's fault: a script missing after the isolate was rebuilt). */
  function failJob(jobId: number, err: unknown): void {
    jobs.delete(jobId);
    completed.push(`[${jobId},${JSON.stringify([[], [REST, { x: errors.describe(err) }]])}]`);
    completedIds.push(jobId);
  }

  /** The answer of a call: `left` tasks queued, `more` (1: call `collect`); '' when there is nothing. */
  function report(left: number, more: number): string {
    if (droppedLogs > 0) {
      logs.push(JSON.stringify(['', 'warn', `script-runtime: ${droppedLogs} console lines dropped`]));
      droppedLogs = 0;
    }
    endCall();
    if (completed.length === 0 && logs.length === 0 && host.requests.length === 0 && left === 0 && more === 0) return '';
    // Finished jobs follow the JSON on a line of their own: Node passes them on to the server unparsed.
    const head = `{"q":${left},"m":${more},"i":[${completedIds.join(',')}],"l":[${logs.join(',')}],"h":[${host.requests.join(',')}]}`;
    const out = completed.length === 0 ? head : `${head}\n${completed.join(',')}`;
    completed.length = completedIds.length = logs.length = host.requests.length = 0;
    return out;
  }
  return { log, complete, failJob, report };
}
