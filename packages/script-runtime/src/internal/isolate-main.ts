import type { IsolateBridge, IsolateJob, IsolateParts, IsolateRun, RunFlags } from './isolate-types.js';
import type { NodeSandboxDeps } from './isolate-node.js';
import type { PackedJob } from './wire.js';

/**
 * The runtime INSIDE the isolate: queues and runs jobs, builds each run's scope, reports what
 * Node must do next. It is serialised with Function.prototype.toString and evaluated once per
 * isolate, so it must not reference anything outside its own body. It is made of parts
 * (`parts`, IsolateParts: whose code runs now, the Script API, host calls, Node's built-ins,
 * modules, variables and scopes, runs, jobs, reports, the seal), each serialised the same way on
 * its own and passed in (isolate-worker.ts MAIN_SOURCE); this function joins them and answers
 * Node's calls.
 *
 * Node drives everything with short synchronous calls (see IsolateBridge); the isolate never calls
 * Node, because a call from the isolate is an asynchronous hop that costs ~10x a synchronous one.
 * `sab` is memory shared with Node: [0] holds the job whose code runs now, so that Node knows whom
 * to blame when a call times out or the isolate runs out of memory (then the isolate is gone);
 * [1] counts the jobs entered in the call and [2...] lists them, for the CPU time of each request
 * (isolate-attribution.ts).
 *
 * The isolate's young generation is small (isolated-vm sizes it from the memory limit: ~1.4 MB
 * at 64 MB), so a run allocates as little as it can and dies as soon as it finished: a batch of
 * 1,000 runs that all stayed reachable until the end was promoted and cost more in GC than in
 * running the scripts.
 */
export function isolateMain(
  parts: IsolateParts,
  sab: SharedArrayBuffer,
  budgetMs: number,
  /** Node's built-in module names (node:module builtinModules): those not offered are refused by name. */
  builtins: readonly string[],
  /** The synchronous calls of Node's built-ins inside the isolate (isolate-node.ts), and the script process's version. */
  hostSync: NodeSandboxDeps['hostSync'],
  nodeInfo: NodeSandboxDeps['node'],
): IsolateBridge {
  const { makeAttribution, makeModules, makeSweep, makeReports, makeScriptApi, makeHostBridge, makeOutcome, makeVariables, makeRunScope, makeRunErrors, makeRunOutput, makeTaskQueue, makeRunRecords, makeRunStarts, makeJobTables, makeScripts, makeJobs, makeNodeSandbox, sealRealm } = parts;
  /** The jobs not completed yet, by id. */
  const jobs = new Map<number, IsolateJob>();
  /** Settled runs of deferred scripts: they finish in the next `collect`, after the microtasks. */
  const ready: IsolateRun[] = [];
  // Where an item's values start, after its combination index (see JobWire.I).
  const ITEM_VALUES = 1;
  // Run outcome flags: wire.ts RUN_FLAGS.
  const FLAGS: RunFlags = { SET: 1, UNSET: 2, HIDDEN: 4, PROTECT: 8, REST: 16, REPEAT: 32 };
  const CANCEL = Object.freeze({ svcCancel: true });

  // Each part is made of those made before it; one needed before it exists is reached through an
  // arrow (the Script API's peekVar and log, the host's fail and settle), called only later.
  const { enter, beginCall, endCall, within, currentRun } = makeAttribution(new Int32Array(sab));
  const outcome = makeOutcome(ITEM_VALUES, FLAGS);
  const api = makeScriptApi(CANCEL, (run, name) => variables.peekVar(run, name), (run, level, text) => reports.log(run, level, text), outcome.copy);
  const host = makeHostBridge({ enter, fail: (run, err) => errors.fail(run, err), settle: (run) => output.settle(run), within });
  const builtinApi = makeNodeSandbox({ hostSync, builtins, currentRun, within, call: host.call, node: nodeInfo });
  const modules = makeModules(builtinApi);
  const variables = makeVariables({ api, builtinApi, host, copy: outcome.copy, requireFor: modules.requireFor });
  const errors = makeRunErrors({ cancel: CANCEL, isHostError: host.isHostError });
  const reports = makeReports({ jobs, host, endCall, errors, flags: FLAGS });
  const output = makeRunOutput({ ready, enter, complete: reports.complete, outcome, errors, flags: FLAGS });
  const queue = makeTaskQueue({ budgetMs, setCurrent: variables.setCurrent });
  const records = makeRunRecords({ api, outcome, itemValues: ITEM_VALUES });
  const starts = makeRunStarts({ enter, within, records, variables, runScope: makeRunScope(variables), errors, output, queue, itemValues: ITEM_VALUES });
  const scripts = makeScripts(variables);
  const intake = makeJobs({ jobs, enter, tables: makeJobTables(host), scripts, variables, complete: reports.complete, queue, starts, itemValues: ITEM_VALUES });
  const sweep = makeSweep({ jobs, ready, enter, output });

  /** What Node must know after a call (`final`: a `collect` call, see Sweep.settled). */
  const answer = (left: number, final: boolean): string => reports.report(left, sweep.settled(left, final));

  /** Queues the jobs of a JSON array of PackedJob and runs them; answers like `collect`. */
  function batch(json: string): string {
    beginCall();
    for (const input of JSON.parse(json) as PackedJob[]) {
      try {
        intake.queueJob(input);
      } catch (err) {
        // Not a script's fault (a script missing after the isolate was rebuilt): fail that job.
        reports.failJob(input[1], err);
      }
    }
    return answer(queue.pump(), false);
  }

  function deliver(json: string): string {
    beginCall();
    for (const [id, reply] of JSON.parse(json) as [number, { r?: unknown; e?: unknown; n?: unknown }][]) {
      queue.push(() => host.receive(id, reply));
    }
    return answer(queue.pump(), false);
  }

  function resume(): string {
    beginCall();
    return answer(queue.pump(), false);
  }

  /** A separate call, so the microtasks of the previous one have run: settled runs finish now. */
  function collect(): string {
    beginCall();
    return answer(queue.left(), true);
  }

  function drop(jobId: number): void {
    const job = jobs.get(jobId);
    if (!job) return;
    jobs.delete(jobId);
    // Runs not started yet never start; queued tasks and late replies of started ones do nothing.
    job.dropped = true;
    for (const run of job.live ?? []) run.finished = true;
    host.forget(job);
  }

  // Nothing a run does may be seen by another: every intrinsic and the global object are frozen
  // (see isolate-seal.ts). Scripts write implicit globals into their own scope instead.
  sealRealm();
  return { define: scripts.define, check: scripts.check, batch, deliver, resume, collect, drop, load: modules.load };
}
