import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ScriptMemoryError, ScriptRestartedError, ScriptRuntimeError, ScriptTimeoutError } from '../errors.js';
import type { ScriptError } from '../errors.js';
import type { HostApi } from '../types.js';
import { hostErrorToWire } from './codec.js';
import type { CompiledScript } from './compiled-script.js';
import type { FatalKind } from './isolate-worker.js';
import type { ChildMessage, ParentMessage } from './pool-messages.js';
import type { JobOutput } from './wire.js';

/** Options of the pool of script processes. */
export interface PoolOptions {
  /** How many script processes (each one isolate). */
  size: number;
  memoryLimitMb: number;
  timeoutMs: number;
  log: (line: string) => void;
}

/** A job of one run or one batch, from submission until its outcome or failure. */
interface PoolJob {
  id: number;
  script: CompiledScript;
  json: string;
  hosts: HostApi[];
  resolve: (out: JobOutput) => void;
  reject: (err: Error) => void;
  /** A host function ran for it: running it again could repeat a side effect. */
  hostCalled: boolean;
  /** It was in a process that died without saying whom to blame: it runs alone next time. */
  suspect: boolean;
  attempts: number;
}

interface Child {
  proc: ChildProcess;
  jobs: Map<number, PoolJob>;
  defined: Set<number>;
  /** Accepts jobs (false once it reported a fatal failure or exited). */
  alive: boolean;
  /** Runs one suspect job alone. */
  exclusive: boolean;
  stderr: string;
  replies: [number, { r?: unknown; e?: unknown }][];
  replyScheduled: boolean;
}

/** Restarts of one pool slot within a minute beyond which it waits before the next one. */
const RESTART_BURST = 20;
/** How many times a job is run again after the process it was in died for another run. */
const MAX_ATTEMPTS = 3;
/** Script processes run at the lowest priority: a looping script never takes the server's core (bench/RESULTS.md, containment). */
const CHILD_NICE = 19;

const SOURCE_HOOKS = `
import { registerHooks } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
registerHooks({
  resolve(specifier, context, next) {
    if (context.parentURL && context.parentURL.endsWith('.ts') && specifier.startsWith('.') && specifier.endsWith('.js')) {
      const url = new URL(specifier.slice(0, -3) + '.ts', context.parentURL);
      if (existsSync(fileURLToPath(url))) return next(url.href, context);
    }
    return next(specifier, context);
  },
});`;

/** How to start a script process: from the built files, or from the sources under vitest. */
function entryPoint(): { file: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const file = fileURLToPath(new URL(fromSource ? './script-host-main.ts' : './script-host-main.js', import.meta.url));
  const execArgv = ['--no-node-snapshot'];
  if (fromSource) {
    execArgv.push('--experimental-transform-types', '--disable-warning=ExperimentalWarning', '--import', `data:text/javascript,${encodeURIComponent(SOURCE_HOOKS)}`);
  }
  return { file, execArgv };
}

/**
 * Event scripts run in a pool of child processes, each with one isolate (script-host-main.ts), so
 * that no script can stall, poison or kill the server process: the server's event loop only
 * encodes jobs and decodes outcomes, and a request that runs no script never waits for one.
 *
 * Jobs submitted in one event-loop turn go to the process with the fewest jobs in flight, in one
 * message per process. An isolate that fails a call is replaced inside its process, which reports
 * whom to blame and which jobs it took; a process that dies (V8's fatal out-of-memory error ends
 * it without a word) is replaced at once. Of the jobs that were lost,
 * the one to blame fails (500), those that had already made a host call fail with
 * ScriptRestartedError (503: running them again could repeat a side effect), and the others run
 * again; when nobody could be blamed, each of them runs alone, so that the next failure names it.
 */
export class ScriptPool {
  private readonly children: (Child | undefined)[];
  private readonly restarts: number[][];
  private readonly queue: PoolJob[] = [];
  private scheduled = false;
  private disposed = false;
  private readonly entry = entryPoint();

  constructor(private readonly options: PoolOptions) {
    this.children = new Array<Child | undefined>(options.size).fill(undefined);
    this.restarts = Array.from({ length: options.size }, () => []);
  }

  /** Queues a job; it is sent with the others of this event-loop turn. */
  submit(script: CompiledScript, id: number, json: string, hosts: HostApi[]): Promise<JobOutput> {
    if (this.disposed) return Promise.reject(new Error('script runtime disposed'));
    return new Promise<JobOutput>((resolve, reject) => {
      this.queue.push({ id, script, json, hosts, resolve, reject, hostCalled: false, suspect: false, attempts: 0 });
      this.schedule();
    });
  }

  /** Stops every script process; jobs in flight reject. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    const error = new Error('script runtime disposed');
    for (const child of this.children) {
      if (!child) continue;
      child.alive = false;
      for (const job of child.jobs.values()) job.reject(error);
      child.jobs.clear();
      child.proc.kill('SIGKILL');
    }
    for (const job of this.queue.splice(0)) job.reject(error);
  }

  private schedule(): void {
    if (this.scheduled || this.disposed) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.disposed || this.queue.length === 0) return;
    for (let slot = 0; slot < this.children.length; slot++) if (!this.children[slot]) this.spawn(slot);
    const batches = new Map<Child, PoolJob[]>();
    const waiting: PoolJob[] = [];
    for (const job of this.queue.splice(0)) {
      const child = job.suspect ? this.idleChild(batches) : this.leastBusy();
      if (!child) {
        waiting.push(job);
        continue;
      }
      child.jobs.set(job.id, job);
      if (job.suspect) child.exclusive = true;
      let list = batches.get(child);
      if (!list) batches.set(child, (list = []));
      list.push(job);
    }
    this.queue.push(...waiting);
    for (const [child, jobs] of batches) this.sendJobs(child, jobs);
  };

  private leastBusy(): Child | undefined {
    let best: Child | undefined;
    for (const child of this.children) {
      if (!child?.alive || child.exclusive) continue;
      if (!best || child.jobs.size < best.jobs.size) best = child;
    }
    return best;
  }

  private idleChild(taken: Map<Child, PoolJob[]>): Child | undefined {
    return this.children.find((child) => child?.alive && !child.exclusive && child.jobs.size === 0 && !taken.has(child));
  }

  private sendJobs(child: Child, jobs: PoolJob[]): void {
    const defs: [number, string, string][] = [];
    for (const { script } of jobs) {
      if (child.defined.has(script.id)) continue;
      child.defined.add(script.id);
      defs.push([script.id, script.filename, script.source]);
    }
    this.send(child, { t: 'jobs', defs, jobs: jobs.map((job) => [job.id, job.script.id, job.json]) });
  }

  private send(child: Child, message: ParentMessage): void {
    if (!child.proc.connected) return;
    try {
      child.proc.send(message);
    } catch (err) {
      // A reply that cannot be copied: the call it answers fails instead.
      if (message.t === 'replies') {
        this.send(child, { t: 'replies', r: message.r.map(([id]) => [id, { e: hostErrorToWire(err) }]) });
      } else {
        child.proc.kill('SIGKILL');
      }
    }
  }

  private spawn(slot: number): void {
    const now = Date.now();
    const recent = (this.restarts[slot] as number[]).filter((t) => now - t < 60_000);
    this.restarts[slot] = recent;
    if (recent.length >= RESTART_BURST) {
      // A script that keeps killing its process must not make the server spawn processes in a loop.
      setTimeout(() => this.schedule(), 1000).unref();
      return;
    }
    recent.push(now);
    const proc = fork(this.entry.file, [], {
      execArgv: this.entry.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    const child: Child = { proc, jobs: new Map(), defined: new Set(), alive: true, exclusive: false, stderr: '', replies: [], replyScheduled: false };
    this.children[slot] = child;
    if (proc.pid !== undefined) {
      try {
        setPriority(proc.pid, CHILD_NICE);
      } catch {
        // Not permitted on this system: the process runs at the server's priority.
      }
    }
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (chunk: string) => {
      child.stderr = (child.stderr + chunk).slice(-4000);
    });
    proc.on('message', (message: ChildMessage) => this.onMessage(child, message));
    proc.on('error', () => proc.kill('SIGKILL'));
    proc.on('exit', (code, signal) => this.onExit(slot, child, code, signal));
    this.send(child, { t: 'init', memoryLimitMb: this.options.memoryLimitMb, timeoutMs: this.options.timeoutMs });
    // An idle pool does not keep the server process alive.
    proc.unref();
    (proc.channel as { unref?: () => void } | undefined)?.unref?.();
  }

  private onMessage(child: Child, message: ChildMessage): void {
    if (message.t === 'fatal') {
      const fatal = { kind: message.kind, culprit: message.culprit, detail: message.detail };
      const lost: PoolJob[] = [];
      for (const id of message.jobs) {
        const job = child.jobs.get(id);
        if (!job) continue;
        child.jobs.delete(id);
        if (job.suspect) child.exclusive = false;
        lost.push(job);
      }
      this.options.log(`script-runtime: an isolate failed (${fatal.kind}: ${fatal.detail}); ${lost.length} job(s) were in it; it was replaced`);
      this.settleLost(lost, fatal, child);
      this.schedule();
      return;
    }
    let done: [number, JobOutput][];
    try {
      done = message.d === '' ? [] : (JSON.parse(`[${message.d}]`) as [number, JobOutput][]);
    } catch {
      // Only a subverted isolate writes something else: its process goes, its jobs with it (onExit).
      child.proc.kill('SIGKILL');
      return;
    }
    for (const request of message.h) this.hostCall(child, request);
    for (const [jobId, output] of done) {
      const job = child.jobs.get(jobId);
      if (!job) continue;
      child.jobs.delete(jobId);
      if (job.suspect) child.exclusive = false;
      job.resolve(output);
    }
    for (const [jobId, text] of message.f) {
      const job = child.jobs.get(jobId);
      if (!job) continue;
      child.jobs.delete(jobId);
      if (job.suspect) child.exclusive = false;
      job.reject(new ScriptRuntimeError(text, { filename: job.script.filename }));
    }
    for (const line of message.l) {
      try {
        this.options.log(line);
      } catch (err) {
        console.error('script-runtime: the log function threw', err, line);
      }
    }
    if (this.queue.length > 0) this.schedule();
  }

  private hostCall(child: Child, [callId, jobId, hostIdx, name, args]: [number, number, number, string, unknown[]]): void {
    const job = child.jobs.get(jobId);
    const host = job?.hosts[hostIdx];
    if (!job || !host) return; // the job failed meanwhile
    job.hostCalled = true;
    const fn = Object.hasOwn(host, name) ? host[name] : undefined;
    // Host functions run after this message's jobs: one may itself run scripts (the svc client).
    const result = typeof fn === 'function' ? Promise.resolve().then(() => fn.apply(host, args)) : Promise.reject(new Error(`${name} is not available`));
    result.then(
      (r: unknown) => this.reply(child, callId, { r }),
      (err: unknown) => this.reply(child, callId, { e: hostErrorToWire(err) }),
    );
  }

  /** Replies that settle in the same microtask run go in one message. */
  private reply(child: Child, callId: number, reply: { r?: unknown; e?: unknown }): void {
    if (!child.alive) return;
    child.replies.push([callId, reply]);
    if (child.replyScheduled) return;
    child.replyScheduled = true;
    queueMicrotask(() => {
      child.replyScheduled = false;
      const r = child.replies;
      child.replies = [];
      if (child.alive) this.send(child, { t: 'replies', r });
    });
  }

  private onExit(slot: number, child: Child, code: number | null, signal: NodeJS.Signals | null): void {
    child.alive = false;
    if (this.children[slot] === child) this.children[slot] = undefined;
    if (this.disposed) return;
    const jobs = [...child.jobs.values()];
    child.jobs.clear();
    if (jobs.length > 0) {
      const reason = `exit code ${code ?? '-'}, signal ${signal ?? '-'}${/heap|memory/i.test(child.stderr) ? ', out of memory' : ''}`;
      this.options.log(`script-runtime: a script process ended (${reason}); ${jobs.length} job(s) were in it; starting a new one`);
    }
    // A process that dies says nothing: V8's fatal out-of-memory error is the usual cause.
    this.settleLost(jobs, undefined, child);
    // Replaced at once, so that the next request finds a process ready.
    this.spawn(slot);
    this.schedule();
  }

  /**
   * Jobs lost with an isolate or a process: the one to blame fails with its own error (a job that
   * was alone is to blame whatever was reported); those that had made a host call fail with
   * ScriptRestartedError; the others run again, each alone when nobody could be blamed.
   */
  private settleLost(jobs: PoolJob[], fatal: { kind: FatalKind; culprit: number; detail: string } | undefined, child: Child): void {
    let culprit = fatal && fatal.culprit >= 0 ? jobs.find((job) => job.id === fatal.culprit) : undefined;
    if (!culprit && jobs.length === 1) culprit = jobs[0];
    for (const job of jobs) {
      if (job === culprit) job.reject(this.blame(job, fatal, child));
      else if (job.hostCalled || job.attempts >= MAX_ATTEMPTS) job.reject(new ScriptRestartedError(job.script.filename));
      else {
        job.attempts++;
        job.suspect = culprit === undefined;
        this.queue.push(job);
      }
    }
  }

  private blame(job: PoolJob, fatal: { kind: FatalKind; detail: string } | undefined, child: Child): ScriptError {
    const location = { filename: job.script.filename };
    if (fatal?.kind === 'timeout') return new ScriptTimeoutError(`script exceeded the CPU time limit of ${this.options.timeoutMs} ms`, location, true);
    if (fatal === undefined || fatal.kind === 'memory' || /heap|memory/i.test(child.stderr)) {
      return new ScriptMemoryError(`script exceeded the memory limit of ${this.options.memoryLimitMb} MB`, location, true);
    }
    return new ScriptRuntimeError(`the script broke its isolate: ${fatal.detail}`, location);
  }
}
