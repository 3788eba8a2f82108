import { builtinModules } from 'node:module';
import ivm from 'isolated-vm';
import { ScriptSyntaxError } from '../errors.js';
import type { ScriptModule } from '../types.js';
import type { CompiledScript } from './compiled-script.js';
import type { IsolateParts } from './isolate-types.js';
import { makeScriptApi } from './isolate-api.js';
import { makeHostBridge } from './isolate-host.js';
import { makeOutcome } from './isolate-outcome.js';
import { isolateMain } from './isolate-main.js';
import { makeAttribution } from './isolate-attribution.js';
import { makeModules } from './isolate-modules.js';
import { makeReports, makeSweep } from './isolate-report.js';
import { makeJobTables, makeJobs, makeScripts } from './isolate-jobs.js';
import { makeRunErrors, makeRunOutput, makeRunRecords, makeRunStarts, makeTaskQueue } from './isolate-runs.js';
import { makeRunScope, makeVariables } from './isolate-scope.js';
import { makeNodeSandbox } from './isolate-node.js';
import { makeHostSync } from './node-host.js';
import type { HostClock } from './node-host.js';
import { sealRealm } from './isolate-seal.js';
import type { CollectWire } from './wire.js';
import { parseSyntaxMessage } from './wrap-source.js';

// isolateMain's parts, each serialised on its own: all of them run in the isolate (isolate-main.ts).
const PARTS = { makeAttribution, makeModules, makeSweep, makeReports, makeScriptApi, makeHostBridge, makeOutcome, makeVariables, makeRunScope, makeRunErrors, makeRunOutput, makeTaskQueue, makeRunRecords, makeRunStarts, makeJobTables, makeScripts, makeJobs, makeNodeSandbox, sealRealm } satisfies IsolateParts;
const PARTS_SOURCE = `{ ${Object.entries(PARTS).map(([name, fn]) => `${name}: ${fn.toString()}`).join(', ')} }`;
const MAIN_SOURCE = `return (${isolateMain.toString()})(${PARTS_SOURCE}, $0, $1, $2, $3, $4);`;
const NODE_INFO = JSON.stringify({ version: process.version, platform: process.platform, arch: process.arch });
const BRIDGE = ['define', 'check', 'batch', 'deliver', 'resume', 'collect', 'drop', 'load'] as const;
const BUILTINS = JSON.stringify(builtinModules);

/**
 * A module's top-level code may run this many times the script time limit: it runs once per
 * isolate, often in a busy low-priority script process, and a bundle of a few hundred KB costs
 * tens of ms of CPU by itself.
 */
export const MODULE_TIME_FACTOR = 5;

/** A module that could not be loaded into an isolate: nothing can run there. */
export class ModuleLoadError extends Error {}

/**
 * Why an isolate had to go: the whole script process is replaced after it. 'starved': a call was
 * stopped by the wall clock although it had used little CPU time (the machine did not let it
 * run): nobody is to blame and its runs may run again.
 */
export type FatalKind = 'timeout' | 'memory' | 'crash' | 'starved';

/** Options of one isolate. */
export interface WorkerOptions {
  memoryLimitMb: number;
  timeoutMs: number;
  /** Loaded into each new isolate before any script, each within MODULE_TIME_FACTOR x `timeoutMs`. */
  modules: readonly ScriptModule[];
  /** Receives each console line of a script, already prefixed with its label. */
  log: (line: string) => void;
  /** Runs a host function in the server process; resolves with the reply to deliver. */
  hostCall: (jobId: number, hostIdx: number, name: string, args: unknown[]) => Promise<{ r?: unknown; e?: unknown; n?: unknown }>;
  /**
   * Jobs that finished, and their outcomes as JSON `[jobId, JobOutput]` entries separated by
   * commas, unparsed: only the server reads them.
   */
  done: (jobIds: number[], outputs: string) => void;
  /**
   * The isolate is gone or can no longer be trusted (a run over its CPU time, out of memory, an
   * answer that is not what the runtime writes). `culprit` is the job whose code ran, or -1 when
   * that cannot be told (microtasks of several jobs). Nothing runs in this worker afterwards.
   */
  fatal: (kind: FatalKind, culprit: number, detail: string) => void;
  /** CPU time (ms) a job used in one call into the isolate (calls of 0.25 ms or more). */
  charge: (jobId: number, ms: number) => void;
  /** A long stretch of work goes on after a call: the process shows it is alive. */
  progress: () => void;
}

/** Jobs listed in shared memory per call (see isolateMain's `enter`); more share nothing. */
const MAX_ENTERED = 30;
/**
 * How far a call's wall-clock limit stretches at most on a busy machine (see `pace`): a run
 * that never ends is stopped after at most this many times the time limit, by the wall clock.
 */
const MAX_STRETCH = 4;
/** Stretches of work shorter than this (ms, wall clock) say nothing of how busy the machine is. */
const MEASURED_MS = 20;
/** How often a drive reads the thread's CPU time at most, ms (see `cpuMark`). */
const CPU_MARK_MS = 5;
/**
 * How long this process recently waited for a CPU while it had work, ms (a drive's wall-clock
 * time less its CPU time; the latest, or the earlier ones decaying by a tenth per drive). Script
 * processes run at the lowest priority: at load 8-12 on 2 cores they may wait seconds. isolated-
 * vm's time limit is one of wall-clock time: a call may take the time limit plus twice this (at
 * most MAX_STRETCH times the limit), so that a healthy run is not stopped for the machine's
 * delays, while on a machine that lets it run the limit stays the limit. The process's, not a
 * worker's: it outlives an isolate replaced after a call that was stopped.
 */
const pace = { waitMs: 0 };
/**
 * Calls shorter than this are not charged to anyone: the calls of cheap runs cost nothing to
 * account for. A run that makes many short calls is bounded by its request's deadline instead.
 */
const MIN_CHARGE_MS = 0.25;

interface Live {
  isolate: ivm.Isolate;
  context: ivm.Context;
  refs: Record<(typeof BRIDGE)[number], ivm.Reference>;
  defined: Set<number>;
}

/**
 * One isolate with one reused context, inside a script process (see script-host-main.ts). Node's
 * side of the process drives it with short synchronous calls: one call per event-loop turn carries
 * every job that arrived meanwhile, runs them and answers what finished; host calls go to the
 * server process and their replies come back one job per call, so that whatever runs in that
 * call's microtasks belongs to that job. The isolate writes the job whose code runs into shared
 * memory (-1 when the microtasks after a call may belong to several jobs), so that a call over the
 * CPU time limit or out of memory is blamed on the right run. Any failed call ends the worker: a
 * terminated call can leave microtasks of other runs half done, so the process is replaced.
 */
export class IsolateWorker {
  private readonly shared = new Int32Array(new SharedArrayBuffer(4 * (2 + MAX_ENTERED)));
  private live: Live | undefined;
  private queued: string[] = [];
  private queuedIds: number[] = [];
  private resumeScheduled = false;
  private scheduled = false;
  private replies = new Map<number, string[]>();
  private flushing = false;
  private dead = false;
  /**
   * The thread's CPU time at a recent drive's start, read at most every CPU_MARK_MS (~2 µs a read:
   * as much as a trivial run costs): a call's CPU time is at most what came since, and that bound
   * is off by at most CPU_MARK_MS (timeoutKind, measure).
   */
  private cpuMark: NodeJS.CpuUsage | undefined;
  private cpuMarkAt = Number.NEGATIVE_INFINITY;
  /** The current call's start and limit, for the synchronous host calls (crypto) it makes. */
  private readonly clock: HostClock;
  private readonly hostSync: ivm.Callback;

  constructor(private readonly options: WorkerOptions) {
    this.clock = { startedAt: 0, limitMs: options.timeoutMs, overrun: false };
    this.hostSync = new ivm.Callback(makeHostSync(this.clock), { sync: true });
  }

  /** Compiles the script in this isolate (once); throws ScriptSyntaxError. */
  define(script: CompiledScript): void {
    const live = this.ensureLive();
    if (live.defined.has(script.id)) return;
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
    const assigned = JSON.stringify(script.usage.assigned ? [...script.usage.assigned] : null);
    live.refs.define.applySync(undefined, [script.id, factory.derefInto({ release: true }), names, assigned]);
    compiled.release();
    live.defined.add(script.id);
  }

  /** Queues an encoded job (JobWire JSON); it crosses with the others of this event-loop turn. */
  run(jobId: number, json: string): void {
    if (this.dead) return;
    this.queued.push(json);
    this.queuedIds.push(jobId);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Sends every queued job in one call. */
  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.queued.length === 0 || this.dead) return;
    const parts = this.queued;
    this.queued = [];
    this.queuedIds = [];
    this.drive(this.ensureLive(), 'batch', [`[${parts.join(',')}]`]);
  };

  /** Forgets a job: its runs not started never start, its late replies do nothing. */
  drop(jobId: number): void {
    if (this.dead) return;
    const at = this.queuedIds.indexOf(jobId);
    if (at >= 0) {
      this.queuedIds.splice(at, 1);
      this.queued.splice(at, 1);
      return;
    }
    this.replies.delete(jobId);
    const live = this.live;
    if (live) this.call(live, 'drop', [jobId]);
  }

  /** Disposes the isolate. */
  dispose(): void {
    this.dead = true;
    const live = this.live;
    this.live = undefined;
    if (live && !live.isolate.isDisposed) live.isolate.dispose();
    this.queued = [];
    this.queuedIds = [];
  }

  private ensureLive(): Live {
    if (this.live && !this.live.isolate.isDisposed) return this.live;
    const isolate = new ivm.Isolate({ memoryLimit: this.options.memoryLimitMb });
    const context = isolate.createContextSync();
    const budgetMs = Math.max(1, Math.floor(this.options.timeoutMs / 10));
    const args = [
      new ivm.ExternalCopy(this.shared.buffer).copyInto({ release: true }),
      budgetMs,
      new ivm.ExternalCopy(JSON.parse(BUILTINS)).copyInto({ release: true }),
      this.hostSync,
      new ivm.ExternalCopy(JSON.parse(NODE_INFO)).copyInto({ release: true }),
    ];
    const bridge = context.evalClosureSync(MAIN_SOURCE, args, { result: { reference: true } }) as ivm.Reference;
    const refs = Object.fromEntries(BRIDGE.map((name) => [name, bridge.getSync(name, { reference: true })])) as Live['refs'];
    bridge.release();
    for (const module of this.options.modules) this.loadModule(isolate, context, refs, module);
    this.live = { isolate, context, refs, defined: new Set() };
    return this.live;
  }

  /** Loads the modules into a new isolate now (checkScriptModules); throws ModuleLoadError. */
  load(): void {
    this.ensureLive();
  }

  /**
   * Runs a module's top-level code in the sealed realm, within the time limit of a script call: a
   * module that throws, loops or exhausts the heap leaves no isolate behind and fails with why.
   */
  private loadModule(isolate: ivm.Isolate, context: ivm.Context, refs: Live['refs'], module: ScriptModule): void {
    const timeout = this.options.timeoutMs * MODULE_TIME_FACTOR;
    try {
      // The wrapper's line break keeps a trailing line comment of the source from eating it.
      // `__svcGlobals`: a module's free `process`, `Buffer`, ... (NODE_GLOBALS_DEFINE of its bundle).
      const script = isolate.compileScriptSync(`(function (module, exports, require, __svcGlobals) {${module.source}\n})`, { filename: `module:${module.name}` });
      const factory = script.runSync(context, { reference: true, timeout }) as ivm.Reference;
      script.release();
      this.clock.startedAt = performance.now();
      this.clock.limitMs = timeout;
      try {
        refs.load.applySync(undefined, [module.name, factory.derefInto({ release: true })], { timeout });
      } finally {
        this.clock.limitMs = this.options.timeoutMs;
      }
      if (this.clock.overrun) {
        this.clock.overrun = false;
        throw new Error('Script execution timed out.');
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const why = /timed out/i.test(message)
        ? `its top-level code ran longer than ${MODULE_TIME_FACTOR} times the script time limit (${timeout} ms)`
        : isolate.isDisposed || /memory/i.test(message)
          ? `it ran out of memory (the scripts' limit is ${this.options.memoryLimitMb} MB)`
          : `it threw: ${message}`;
      if (!isolate.isDisposed) isolate.dispose();
      throw new ModuleLoadError(`module '${module.name}' cannot be loaded for event scripts: ${why}`);
    }
  }

  /**
   * One call, then `resume` until the queue is empty and `collect` after microtasks; the wall and
   * CPU time they took tell how busy the machine keeps this process (`pace`).
   */
  private drive(live: Live, method: 'batch' | 'deliver' | 'resume', args: unknown[]): void {
    const wall = performance.now();
    if (wall - this.cpuMarkAt >= CPU_MARK_MS) {
      this.cpuMark = process.threadCpuUsage();
      this.cpuMarkAt = wall;
    }
    try {
      this.driveCalls(live, method, args);
    } finally {
      this.measure(performance.now() - wall);
    }
  }

  /** Updates `pace` from a drive's wall-clock time, ms. */
  private measure(wallMs: number): void {
    const earlier = pace.waitMs * 0.9;
    // Done promptly: the machine lets this process run (or it did too little to tell).
    if (wallMs < MEASURED_MS) pace.waitMs = earlier < 1 ? 0 : earlier;
    else pace.waitMs = Math.max(earlier, wallMs - this.cpuSinceMark());
  }

  /** The thread's CPU time since the mark, ms (at least that of the calls of the current drive). */
  private cpuSinceMark(): number {
    return this.cpuMark === undefined ? Number.POSITIVE_INFINITY : cpuMs(process.threadCpuUsage(this.cpuMark));
  }

  /** A call's wall-clock limit, ms: the time limit, and the time the machine keeps this process waiting. */
  private limitMs(): number {
    const limit = this.options.timeoutMs;
    return Math.ceil(limit + Math.min((MAX_STRETCH - 1) * limit, 2 * pace.waitMs));
  }

  private driveCalls(live: Live, method: 'batch' | 'deliver' | 'resume', args: unknown[]): void {
    let out = this.call(live, method, args);
    while (out !== undefined && out !== '' && !this.dead) {
      const newline = out.indexOf('\n');
      let wire: CollectWire;
      try {
        wire = JSON.parse(newline < 0 ? out : out.slice(0, newline)) as CollectWire;
      } catch {
        // The runtime inside the isolate writes this JSON; anything else means it was subverted.
        return this.fatal('crash', -1, 'the isolate answered something the runtime did not write');
      }
      this.dispatch(wire, newline < 0 ? '' : out.slice(newline + 1));
      if (wire.q > 0) return this.resumeLater();
      if (wire.m > 0) out = this.call(live, 'collect', []);
      else return;
    }
  }

  /**
   * Work left after a call's time slice goes on in the next event-loop turn, not in a loop: what
   * finished is reported meanwhile, jobs and replies that arrived are taken in, and the server
   * hears from a process that is busy rather than stuck.
   */
  private resumeLater(): void {
    if (this.resumeScheduled) return;
    this.resumeScheduled = true;
    setImmediate(() => {
      this.resumeScheduled = false;
      if (this.dead) return;
      this.options.progress();
      this.drive(this.ensureLive(), 'resume', []);
    });
  }

  private call(live: Live, method: (typeof BRIDGE)[number], args: unknown[]): string | undefined {
    try {
      // The time of a synchronous call is the isolate's CPU time, unless the machine preempts
      // this process meanwhile (a busy machine charges more: the pool's cost estimate, which
      // schedules by how long a run holds its process, wants that; isolate.cpuTime counts it too).
      const before = performance.now();
      const limit = this.limitMs();
      this.clock.startedAt = before;
      this.clock.limitMs = limit;
      const out = live.refs[method].applySync(undefined, args, { timeout: limit }) as unknown;
      const ms = performance.now() - before;
      // Synchronous host calls (crypto) past the time limit: isolated-vm's timeout does not count them.
      if (this.clock.overrun) {
        this.clock.overrun = false;
        if (ms >= MIN_CHARGE_MS) this.share(ms);
        this.fatal(this.timeoutKind(), this.shared[0] as number, `Script execution timed out (host calls past ${limit} ms)`);
        return undefined;
      }
      if (ms >= MIN_CHARGE_MS) this.share(ms);
      if (method === 'drop') return '';
      if (typeof out !== 'string') {
        this.fatal('crash', -1, 'the isolate answered something the runtime did not write');
        return undefined;
      }
      return out;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const kind: FatalKind = /timed out/i.test(message) ? this.timeoutKind() : live.isolate.isDisposed || /memory/i.test(message) ? 'memory' : 'crash';
      this.fatal(kind, this.shared[0] as number, message);
      return undefined;
    }
  }

  /**
   * A call stopped by its wall-clock limit: the script's time limit, unless the thread used less
   * than half of it since the mark (the call used at most that): then the machine kept it from
   * running, and it was stopped for nothing the script did.
   */
  private timeoutKind(): FatalKind {
    return this.cpuSinceMark() < this.options.timeoutMs / 2 ? 'starved' : 'timeout';
  }

  /**
   * A call's CPU time goes to the job whose code ran last when only one ran (microtasks after the
   * call included), or in equal parts to the jobs that ran code in it: a cheap run that shared a
   * call with a costly one may be charged part of it, at most one call's time.
   */
  private share(ms: number): void {
    if (!(ms > 0)) return;
    const shared = this.shared;
    const one = shared[0] as number;
    if (one >= 0) return this.options.charge(one, ms);
    const n = Math.min(shared[1] as number, MAX_ENTERED);
    for (let i = 0; i < n; i++) this.options.charge(shared[2 + i] as number, ms / n);
  }

  private fatal(kind: FatalKind, culprit: number, detail: string): void {
    if (this.dead) return;
    this.dispose();
    this.options.fatal(kind, culprit, detail);
  }

  /** Hands out what a call returned: new host calls, finished jobs, log lines. */
  private dispatch(wire: CollectWire, outputs: string): void {
    // Host calls first: a run cancelled right after emit() still emits, as the call was made.
    for (const request of wire.h) this.startHostCall(request);
    if (wire.i.length > 0) this.options.done(wire.i, outputs);
    for (const [label, level, text] of wire.l) {
      const prefix = label ? `[${label}] ` : '';
      this.options.log(`${prefix}${level === 'log' || level === 'info' ? '' : `${level}: `}${text}`);
    }
  }

  private startHostCall([callId, jobId, hostIdx, name, args]: CollectWire['h'][number]): void {
    this.options.hostCall(jobId, hostIdx, name, args).then(
      (reply) => this.reply(jobId, callId, reply),
      () => undefined,
    );
  }

  /**
   * Replies of host calls that settle in the same microtask run cross together, one call per
   * job: the callbacks and continuations they start run in that call and its microtasks only.
   */
  private reply(jobId: number, callId: number, message: { r?: unknown; e?: unknown; n?: unknown }): void {
    if (this.dead) return;
    let text: string;
    try {
      text = JSON.stringify(message);
    } catch {
      text = JSON.stringify({ e: { message: 'host reply could not be copied' } });
    }
    let list = this.replies.get(jobId);
    if (!list) this.replies.set(jobId, (list = []));
    list.push(`[${callId},${text}]`);
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => {
      this.flushing = false;
      const batch = this.replies;
      this.replies = new Map();
      for (const list of batch.values()) {
        if (this.dead) return;
        this.drive(this.ensureLive(), 'deliver', [`[${list.join(',')}]`]);
      }
    });
  }
}

/** User and system CPU time, ms. */
function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}
