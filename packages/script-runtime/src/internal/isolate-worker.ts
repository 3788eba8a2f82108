import ivm from 'isolated-vm';
import { ScriptMemoryError, ScriptRuntimeError, ScriptSyntaxError, ScriptTimeoutError } from '../errors.js';
import type { HostApi } from '../types.js';
import { encodeJob, hostErrorToWire, isInputList } from './codec.js';
import type { JobInputs } from './codec.js';
import type { CompiledScript } from './compiled-script.js';
import { makeScriptApi } from './isolate-api.js';
import { makeHostBridge } from './isolate-host.js';
import { makeOutcome } from './isolate-outcome.js';
import { isolateMain } from './isolate-main.js';
import type { CollectWire, JobOutput } from './wire.js';
import { parseSyntaxMessage } from './wrap-source.js';

const MAIN_SOURCE = `return (${isolateMain.toString()})(${makeScriptApi.toString()}, ${makeHostBridge.toString()}, ${makeOutcome.toString()}, $0, $1);`;
const BRIDGE = ['define', 'check', 'batch', 'deliver', 'resume', 'collect', 'drop'] as const;
/** Runs in one job from which it is sent at once instead of with the next event-loop turn's. */
const BIG_JOB = 64;
/** Consecutive failed calls after which the isolate is considered broken and rebuilt. */
const MAX_FAILED_CALLS = 3;

/** Options of one isolate. */
export interface WorkerOptions {
  memoryLimitMb: number;
  timeoutMs: number;
  log: (line: string) => void;
}

interface Live {
  isolate: ivm.Isolate;
  context: ivm.Context;
  refs: Record<(typeof BRIDGE)[number], ivm.Reference>;
  defined: Set<number>;
}

interface PendingJob {
  hosts: HostApi[];
  filename: string;
  resolve: (out: JobOutput) => void;
  reject: (err: Error) => void;
}

/** A job waiting for the next crossing. */
interface QueuedJob {
  jobId: number;
  script: CompiledScript;
  json: string;
}

/**
 * One isolate with one reused context, the scripts defined in it, and the jobs in flight.
 *
 * Every crossing is a synchronous call from Node: measured in the HTTP path on Node 24, a call
 * adds ~10 µs per request and isolated-vm's per-call `timeout` another ~20 µs (its timer thread
 * wakes for every call), while a call from the isolate back into Node hops threads (~80 µs).
 * So jobs are not sent one by one: run() queues them and one call per event-loop turn
 * (setImmediate) takes every job queued meanwhile, runs them and answers what finished, so
 * concurrent requests share a crossing and its timer. The isolate bounds each call by a time
 * budget (work beyond it waits for `resume`), so the timeout is effectively per stretch of one
 * run. A timed-out call terminates only that stretch: the job running it fails and the isolate
 * lives on. Running out of memory disposes the isolate: every job in it fails and the isolate is
 * rebuilt on next use.
 */
export class IsolateWorker {
  private readonly shared = new Int32Array(new SharedArrayBuffer(4));
  private readonly jobs = new Map<number, PendingJob>();
  private live: Live | undefined;
  private nextJobId = 1;
  private queued: QueuedJob[] = [];
  private scheduled = false;
  /** A call into the isolate is under way (isolate calls must not nest). */
  private driving = false;
  private replies: string[] = [];
  private flushing = false;

  constructor(private readonly options: WorkerOptions) {}

  /** Compiles the script in this isolate (once) and checks its syntax; throws ScriptSyntaxError. */
  define(script: CompiledScript): Live {
    const live = this.ensureLive();
    if (live.defined.has(script.id)) return live;
    let compiled: ivm.Script;
    try {
      compiled = live.isolate.compileScriptSync(script.wrapped, { filename: script.filename });
    } catch (err) {
      const parsed = parseSyntaxMessage(err instanceof Error ? err.message : String(err), script.prefixLength);
      throw new ScriptSyntaxError(parsed.message, { filename: script.filename, line: parsed.line, column: parsed.column });
    }
    // The wrapper parses, but the body must parse on its own too, or it could close the wrapper.
    const standalone = live.refs.check.applySync(undefined, [script.source]) as string;
    if (standalone) throw new ScriptSyntaxError(standalone, { filename: script.filename });
    const factory = compiled.runSync(live.context, { reference: true });
    const names = JSON.stringify(script.usage.names ? [...script.usage.names] : null);
    live.refs.define.applySync(undefined, [script.id, factory.derefInto({ release: true }), names]);
    compiled.release();
    live.defined.add(script.id);
    return live;
  }

  /**
   * Runs the script once per input, all in one job; resolves with the outcomes in input order.
   * The job crosses into the isolate with the others queued in this event-loop turn.
   */
  run(script: CompiledScript, inputs: JobInputs): Promise<JobOutput> {
    const jobId = this.nextJobId;
    this.nextJobId = jobId >= 0x7fffffff ? 1 : jobId + 1;
    const { json, hosts } = encodeJob(script.id, jobId, inputs, script.usage);
    const done = new Promise<JobOutput>((resolve, reject) => {
      this.jobs.set(jobId, { hosts, filename: script.filename, resolve, reject });
    });
    this.queued.push({ jobId, script, json });
    if ((isInputList(inputs) ? inputs.length : inputs.objects.length) >= BIG_JOB && !this.driving) {
      // A big batch pays for its crossing alone; waiting would only keep its objects alive longer.
      this.flush();
    } else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
    return done;
  }

  /** Sends every queued job in one call. */
  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.queued.length === 0) return;
    const queued = this.queued;
    this.queued = [];
    const parts: string[] = [];
    let live: Live | undefined;
    for (const { jobId, script, json } of queued) {
      if (!this.jobs.has(jobId)) continue; // disposed meanwhile
      try {
        live = this.define(script);
        parts.push(json);
      } catch (err) {
        const job = this.jobs.get(jobId);
        this.jobs.delete(jobId);
        job?.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    if (live && parts.length > 0 && this.live === live) this.drive(live, 'batch', [`[${parts.join(',')}]`]);
  };

  /** Disposes the isolate; jobs in flight reject. */
  dispose(): void {
    const live = this.live;
    this.live = undefined;
    if (live && !live.isolate.isDisposed) live.isolate.dispose();
    for (const job of this.jobs.values()) job.reject(new Error('script runtime disposed'));
    this.jobs.clear();
    this.queued = [];
  }

  private ensureLive(): Live {
    if (this.live && !this.live.isolate.isDisposed) return this.live;
    const isolate = new ivm.Isolate({ memoryLimit: this.options.memoryLimitMb });
    const context = isolate.createContextSync();
    const budgetMs = Math.max(1, Math.floor(this.options.timeoutMs / 10));
    const args = [new ivm.ExternalCopy(this.shared.buffer).copyInto({ release: true }), budgetMs];
    const bridge = context.evalClosureSync(MAIN_SOURCE, args, { result: { reference: true } }) as ivm.Reference;
    const refs = Object.fromEntries(BRIDGE.map((name) => [name, bridge.getSync(name, { reference: true })]));
    bridge.release();
    this.live = { isolate, context, refs: refs as Live['refs'], defined: new Set() };
    this.replies = [];
    return this.live;
  }

  /** One call, then `resume` until the queue is empty and `collect` after microtasks; failures are handled here. */
  private drive(live: Live, method: 'batch' | 'deliver', args: unknown[]): void {
    this.driving = true;
    try {
      this.driveCalls(live, method, args);
    } finally {
      this.driving = false;
    }
  }

  private driveCalls(live: Live, method: 'batch' | 'deliver', args: unknown[]): void {
    let failures = 0;
    let out = this.call(live, method, args);
    while (this.live === live) {
      if (out === undefined) {
        if (++failures >= MAX_FAILED_CALLS) return this.failAll(live, 'crash', 'repeated failures');
        out = this.call(live, 'resume', []);
        continue;
      }
      if (out === '') return;
      const wire = JSON.parse(out) as CollectWire;
      this.dispatch(live, wire);
      if (wire.q > 0) out = this.call(live, 'resume', []);
      else if (wire.m > 0) out = this.call(live, 'collect', []);
      else return;
    }
  }

  private call(live: Live, method: (typeof BRIDGE)[number], args: unknown[]): string | undefined {
    try {
      return live.refs[method].applySync(undefined, args, { timeout: this.options.timeoutMs }) as string;
    } catch (err) {
      this.onCallError(live, err);
      return undefined;
    }
  }

  private onCallError(live: Live, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    if (live.isolate.isDisposed || /disposed/i.test(message)) {
      return this.failAll(live, /memory/i.test(message) ? 'memory' : 'crash', message);
    }
    const jobId = this.shared[0] as number;
    const job = this.jobs.get(jobId);
    this.jobs.delete(jobId);
    this.call(live, 'drop', [jobId]);
    if (!job) return;
    const location = { filename: job.filename };
    if (/timed out/i.test(message)) {
      job.reject(new ScriptTimeoutError(`script exceeded the CPU time limit of ${this.options.timeoutMs} ms`, location, true));
    } else {
      job.reject(new ScriptRuntimeError(message, location, { cause: err }));
    }
  }

  /** The isolate is gone (or broken): fail every job that was in flight in it. */
  private failAll(live: Live, kind: 'memory' | 'crash', detail: string): void {
    if (this.live === live) this.live = undefined;
    if (!live.isolate.isDisposed) live.isolate.dispose();
    const culpritId = this.shared[0] as number;
    const culprit = this.jobs.get(culpritId)?.filename ?? 'a script';
    const limit = this.options.memoryLimitMb;
    for (const [jobId, job] of this.jobs) {
      const own = jobId === culpritId;
      const location = { filename: job.filename };
      if (kind === 'memory') {
        const message = own
          ? `script exceeded the memory limit of ${limit} MB`
          : `run aborted: ${culprit} exceeded the memory limit of the isolate`;
        job.reject(new ScriptMemoryError(message, location, own));
      } else {
        job.reject(new ScriptRuntimeError(`isolate failed: ${detail}`, location));
      }
    }
    this.jobs.clear();
  }

  /** Hands out what `collect` returned: new host calls, finished jobs, log lines. */
  private dispatch(live: Live, wire: CollectWire): void {
    // Host calls first: a run cancelled right after emit() still emits, as the call was made.
    for (const request of wire.h) this.startHostCall(live, request);
    for (const [jobId, runs] of wire.d) {
      const job = this.jobs.get(jobId);
      this.jobs.delete(jobId);
      job?.resolve(runs);
    }
    // Still before the code awaiting those jobs resumes: resolution continues in a microtask.
    for (const [label, level, text] of wire.l) {
      const prefix = label ? `[${label}] ` : '';
      const line = `${prefix}${level === 'log' || level === 'info' ? '' : `${level}: `}${text}`;
      try {
        this.options.log(line);
      } catch (err) {
        // A broken logger must not leave the other lines and runs of this batch hanging.
        console.error('script-runtime: the log function threw', err, line);
      }
    }
  }

  private startHostCall(live: Live, [callId, jobId, hostIdx, name, args]: CollectWire['h'][number]): void {
    const host = this.jobs.get(jobId)?.hosts[hostIdx];
    if (!host) return; // the job failed meanwhile
    const fn = host[name];
    // Host functions run after the current call into the isolate has returned: a host function
    // may itself run scripts (the svc client), and isolate calls must not nest.
    const result = fn
      ? Promise.resolve().then(() => fn.apply(host, args))
      : Promise.reject(new Error(`${name} is not available`));
    result.then(
      (r: unknown) => this.reply(live, callId, { r }),
      (err: unknown) => this.reply(live, callId, { e: hostErrorToWire(err) }),
    );
  }

  /**
   * Replies are sent in batches: host calls that settle in the same microtask run (e.g. the emit()
   * of every object of a batch) cross together, after the current microtasks.
   */
  private reply(live: Live, callId: number, message: { r?: unknown; e?: unknown }): void {
    if (this.live !== live) return;
    let text: string;
    try {
      text = JSON.stringify(message);
    } catch (err) {
      text = JSON.stringify({ e: hostErrorToWire(err) });
    }
    this.replies.push(`[${callId},${text}]`);
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => {
      this.flushing = false;
      const batch = this.replies;
      this.replies = [];
      if (this.live === live && batch.length > 0) this.drive(live, 'deliver', [`[${batch.join(',')}]`]);
    });
  }
}
