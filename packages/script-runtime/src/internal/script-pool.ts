import { JobTable } from './job-table.js';
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import type { BudgetFailure, RunBudget } from '../budget.js';
import { CallbackError } from '../callback-error.js';
import { ScriptBusyError, ScriptMemoryError, ScriptRestartedError, ScriptRuntimeError, ScriptTimeoutError } from '../errors.js';
import type { ScriptError } from '../errors.js';
import type { HostApi, ScriptModule } from '../types.js';
import { hostErrorToWire } from './codec.js';
import type { CompiledScript } from './compiled-script.js';
import type { FatalKind } from './isolate-worker.js';
import type { ChildMessage, ParentMessage } from './pool-messages.js';
import type { JobOutput } from './wire.js';
import { builtinsForInit, entryPoint } from './script-entry.js';
import { readCpuMs, readProgress } from './process-progress.js';
import { judgeSilence, SILENCE_GRACE_MS } from './silence.js';
import type { SilenceFacts } from './silence.js';

/** Options of the pool of script processes. */
export interface PoolOptions {
  /** How many script processes (each one isolate). */
  size: number;
  memoryLimitMb: number;
  timeoutMs: number;
  /** Runs waiting for a script process at most; one client may hold half of them. */
  queueLimit: number;
  log: (line: string) => void;
  modules: readonly ScriptModule[];
  /** The program of a script process, when not script-host-main (tests: processes that hang). */
  entry?: { file: string; execArgv: string[]; args?: string[] };
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
  /** The budget of the request it belongs to, if any. */
  budget: RunBudget | undefined;
  /** Its client, and its client and resource: the queue it waits in ('' until it waits). */
  client: string;
  queueKey: string;
  /** Sent with the next flush without waiting in a queue (a cheap job while nothing waits). */
  direct: boolean;
  /** The process it was sent to; undefined while it waits. */
  child: Child | undefined;
  /** Counted as the one costly run of its process (see `costly`). */
  active: boolean;
  /** Host calls it waits for: meanwhile it takes no CPU and leaves its process to others. */
  waiting: number;
  /** CPU time it used, ms (in steps of at least 1 ms). */
  cpu: number;
}

interface Child {
  proc: ChildProcess;
  /** In flight here, by id (not a Map: see JobTable). */
  jobs: JobTable<PoolJob>;
  defined: Set<number>;
  /** Accepts jobs (false once it reported a fatal failure or exited). */
  alive: boolean;
  /** Runs one suspect job alone. */
  exclusive: boolean;
  stderr: string;
  replies: [number, { r?: unknown; e?: unknown; n?: unknown }][];
  replyScheduled: boolean;
  /** Messages with work sent, and how many it said it took in: the watchdog's evidence. */
  sent: number;
  acked: number;
  /** Since when it owes an answer without having said anything; undefined: it owes none. */
  silentSince: number | undefined;
  /** It has said nothing since it started (a cold start: the watchdog allows for it). */
  cold: boolean;
  /**
   * The watchdog's record of its current silence (the one that began at `since`): its CPU time
   * then, and since when it has neither used CPU nor been runnable (silence.ts judges it).
   */
  watched: { since: number; cpu0: number | undefined; lastCpu: number; stillSince: number | undefined } | undefined;
  /** The costly runs it runs now (at most COSTLY_PER_CHILD), by client and resource. */
  costly: PoolJob[];
  /** How it ended, for the errors of the jobs it took with it. */
  ended: string | undefined;
}

/** Restarts of one pool slot within a minute beyond which it waits before the next one. */
const RESTART_BURST = 20;
/** How many times a job is run again after the process it was in died for another run. */
const MAX_ATTEMPTS = 3;
/** Script processes run at the lowest priority: a looping script never takes the server's core (bench/RESULTS.md, containment). */
const CHILD_NICE = 19;
/**
 * A run of a script whose runs took this much CPU time (ms, moving average), or one not measured
 * yet, is costly: costly runs are spread so that no client or resource takes every process.
 */
const COSTLY_MS = 20;
/** Costly runs that use one process's CPU at a time (others wait in the server, in fair order). */
const COSTLY_PER_CHILD = 1;
/** Jobs one process holds at most; more wait in the server. */
const MAX_PER_CHILD = 512;
/** How often the watchdog looks at silent processes and request deadlines. */
const WATCHDOG_MS = 250;

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
 *
 * Fairness: jobs wait in the server in one queue per client and resource, taken in turn. Cheap
 * jobs (by their script's measured CPU time) go out at once, batched, to the least busy process
 * with no costly run, preferably; a costly one (or one of a script not measured yet) goes only to
 * a process that runs no other costly one, and the costly runs of one client, or of one resource,
 * hold at most all processes but one: a flood of slow scripts from one client leaves a process to
 * everyone else.
 *
 * Budgets: each process reports the CPU time of each job; the job's request budget (RunBudget)
 * adds it up over every run of the request, and once that or its deadline is spent, or its client
 * went away, the request's jobs are dropped: those waiting here and those in a process.
 *
 * A process that owes an answer (it was sent jobs or replies) and says nothing is judged by its own
 * progress (silence.ts): one that used more CPU time than any answer takes, is stopped, or is
 * asleep with work waiting, is killed and replaced, and its jobs fail with a timeout error; one
 * that waits for a CPU on a busy machine is left to answer.
 */
export class ScriptPool {
  private readonly children: (Child | undefined)[];
  private readonly restarts: number[][];
  /** Waiting jobs, one queue per client and resource; Map order is the turn order. */
  private readonly queues = new Map<string, PoolJob[]>();
  /** Cheap jobs of this turn that skip the queues (see submit). */
  private direct: PoolJob[] = [];
  private waiting = 0;
  private readonly waitingByClient = new Map<string, number>();
  /** Moving average of the CPU time of a script's jobs, ms, by script id. */
  private readonly cost = new Map<number, number>();
  private scheduled = false;
  private disposed = false;
  private watchdog: NodeJS.Timeout | undefined;
  private readonly entry: { file: string; execArgv: string[]; args?: string[] };

  constructor(private readonly options: PoolOptions) {
    this.children = new Array<Child | undefined>(options.size).fill(undefined);
    this.entry = options.entry ?? entryPoint();
    this.restarts = Array.from({ length: options.size }, () => []);
  }

  /** Jobs waiting for a process now. */
  get queued(): number {
    return this.waiting;
  }

  /** The process ids of the script processes running now (tests stop or kill them). */
  pids(): number[] {
    return this.children.flatMap((child) => (child?.alive && child.proc.pid !== undefined ? [child.proc.pid] : []));
  }

  /**
   * False when the pool cannot run scripts: disposed, or a process slot left empty because its
   * processes kept dying (RESTART_BURST in a minute). Reads state only: no script runs, no message.
   */
  ready(): boolean {
    if (this.disposed) return false;
    const now = Date.now();
    return this.children.every((child, slot) => child?.alive === true || (this.restarts[slot] as number[]).filter((t) => now - t < 60_000).length < RESTART_BURST);
  }

  /** Queues a job; it is sent with the others of this event-loop turn. */
  submit(script: CompiledScript, id: number, json: string, hosts: HostApi[], budget?: RunBudget): Promise<JobOutput> {
    if (this.disposed) return Promise.reject(new Error('script runtime disposed'));
    const failure = budget?.failure;
    if (failure) return Promise.reject(this.budgetError(script, failure));
    const client = budget?.client ?? '';
    const waitingOfClient = this.waitingByClient.get(client) ?? 0;
    if (this.waiting >= this.options.queueLimit || waitingOfClient >= Math.max(1, Math.floor(this.options.queueLimit / 2))) {
      return Promise.reject(new ScriptBusyError(`too many script runs are waiting (${this.waiting}); try again later`, { filename: script.filename }));
    }
    return new Promise<JobOutput>((resolve, reject) => {
      const job: PoolJob = {
        id,
        script,
        json,
        hosts,
        resolve,
        reject,
        hostCalled: false,
        suspect: false,
        attempts: 0,
        budget,
        client,
        queueKey: '',
        direct: false,
        child: undefined,
        active: false,
        waiting: 0,
        cpu: 0,
      };
      // The common case costs no queue: a cheap job while nothing waits goes out with this turn's
      // flush, to the least busy process (as fair as it gets when nobody waits).
      if (this.waiting === 0 && !this.isCostly(job)) {
        job.direct = true;
        this.direct.push(job);
      } else this.enqueue(job);
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
    for (const list of this.queues.values()) for (const job of list) job.reject(error);
    for (const job of this.direct) job.reject(error);
    this.direct = [];
    this.queues.clear();
    this.waiting = 0;
    this.waitingByClient.clear();
    if (this.watchdog) clearInterval(this.watchdog);
  }

  private enqueue(job: PoolJob): void {
    job.direct = false;
    if (job.queueKey === '') job.queueKey = `${job.client}\n${job.script.group}`;
    let list = this.queues.get(job.queueKey);
    if (!list) this.queues.set(job.queueKey, (list = []));
    list.push(job);
    this.waiting++;
    this.waitingByClient.set(job.client, (this.waitingByClient.get(job.client) ?? 0) + 1);
  }

  private dequeued(job: PoolJob): void {
    this.waiting--;
    const n = (this.waitingByClient.get(job.client) ?? 1) - 1;
    if (n > 0) this.waitingByClient.set(job.client, n);
    else this.waitingByClient.delete(job.client);
  }

  private budgetError(script: CompiledScript, failure: BudgetFailure): ScriptTimeoutError {
    return new ScriptTimeoutError(failure.message, { filename: script.filename }, true);
  }

  /** Fails every job of a budget that failed (rare: a scan of every job is cheaper than tracking them). */
  private abortBudget(budget: RunBudget): void {
    const failure = budget.failure as BudgetFailure;
    for (const list of [...this.queues.values()]) for (const job of [...list]) if (job.budget === budget) this.abort(job, this.budgetError(job.script, failure));
    for (const job of [...this.direct]) if (job.budget === budget) this.abort(job, this.budgetError(job.script, failure));
    for (const child of this.children) {
      if (!child) continue;
      for (const job of [...child.jobs.values()]) if (job.budget === budget) this.abort(job, this.budgetError(job.script, failure));
    }
  }

  /** Fails a job of a request that gave up: out of its queue, or dropped in its process. */
  private abort(job: PoolJob, error: Error): void {
    const child = job.child;
    if (child === undefined && job.direct) {
      const at = this.direct.indexOf(job);
      if (at < 0) return;
      this.direct.splice(at, 1);
      job.direct = false;
      job.reject(error);
      return;
    }
    if (child === undefined) {
      const list = this.queues.get(job.queueKey);
      const at = list ? list.indexOf(job) : -1;
      if (!list || at < 0) return;
      list.splice(at, 1);
      if (list.length === 0) this.queues.delete(job.queueKey);
      this.dequeued(job);
      job.reject(error);
      // A dropped head stopped its queue in flush: nothing else may come to send the runs behind it.
      if (this.waiting > 0) this.schedule();
      return;
    }
    if (child.jobs.get(job.id) !== job) return;
    this.release(child, job);
    job.reject(error);
    this.send(child, { t: 'drop', j: [job.id] });
    this.schedule();
  }

  /** A job leaves its process (finished, failed, lost or dropped). */
  private release(child: Child, job: PoolJob): void {
    child.jobs.delete(job.id);
    if (job.suspect) child.exclusive = false;
    this.deactivate(job);
    job.child = undefined;
  }

  private deactivate(job: PoolJob): void {
    if (!job.active || !job.child) return;
    job.active = false;
    const at = job.child.costly.indexOf(job);
    if (at >= 0) job.child.costly.splice(at, 1);
  }

  private isCostly(job: PoolJob): boolean {
    const cost = this.cost.get(job.script.id);
    return cost === undefined || cost >= COSTLY_MS;
  }

  private schedule(): void {
    if (this.scheduled || this.disposed) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  /**
   * Sends what can go: the queues take turns, one job each per round, so that a client or
   * resource with many jobs waiting goes no faster than one with a single job.
   */
  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.disposed || (this.waiting === 0 && this.direct.length === 0)) return;
    for (let slot = 0; slot < this.children.length; slot++) if (!this.children[slot]) this.spawn(slot);
    const batches = new Map<Child, PoolJob[]>();
    if (this.direct.length > 0) {
      const direct = this.direct;
      this.direct = [];
      for (const job of direct) {
        job.direct = false;
        const child = this.leastBusy();
        if (!child) {
          this.enqueue(job);
          continue;
        }
        child.jobs.set(job);
        job.child = child;
        let batch = batches.get(child);
        if (!batch) batches.set(child, (batch = []));
        batch.push(job);
      }
    }
    const served: string[] = [];
    while (this.waiting > 0) {
      // Each round, a queue sends its cheap jobs at its head and at most one costly job.
      for (const [key, list] of this.queues) {
        let taken = 0;
        let costlyTaken = false;
        while (taken < list.length) {
          const job = list[taken] as PoolJob;
          const failure = job.budget?.failure;
          if (failure) break; // taken out below, with the rest of its request
          const costly = job.suspect || this.isCostly(job);
          if (costly && costlyTaken) break;
          const child = job.suspect ? this.idleChild(batches) : costly ? this.costlyChild(job) : this.leastBusy();
          if (!child) break;
          taken++;
          this.dequeued(job);
          child.jobs.set(job);
          job.child = child;
          if (costly) {
            costlyTaken = true;
            job.active = true;
            child.costly.push(job);
          }
          if (job.suspect) child.exclusive = true;
          let batch = batches.get(child);
          if (!batch) batches.set(child, (batch = []));
          batch.push(job);
        }
        if (taken > 0) {
          list.splice(0, taken);
          served.push(key);
        }
      }
      if (served.length === 0) break;
      // Queues that sent go to the back of the turn order.
      for (const key of served.splice(0)) {
        const list = this.queues.get(key) as PoolJob[];
        this.queues.delete(key);
        if (list.length > 0) this.queues.set(key, list);
      }
    }
    for (const [child, jobs] of batches) this.sendJobs(child, jobs);
    if (this.waiting > 0) {
      for (const list of [...this.queues.values()]) {
        const budget = list[0]?.budget;
        if (budget?.failure) this.abortBudget(budget);
      }
    }
    this.startWatchdog();
  };

  /** For a cheap job: the least busy process, one without a costly run first. */
  private leastBusy(): Child | undefined {
    let best: Child | undefined;
    for (const child of this.children) {
      if (!child?.alive || child.exclusive || child.jobs.size >= MAX_PER_CHILD) continue;
      const free = child.costly.length === 0;
      const bestFree = best?.costly.length === 0;
      if (!best || (free && !bestFree) || (free === bestFree && child.jobs.size < best.jobs.size)) best = child;
    }
    return best;
  }

  /**
   * For a costly job: a process with no costly run, unless its client's or its resource's costly
   * runs already hold every process but one (then it waits its turn).
   */
  private costlyChild(job: PoolJob): Child | undefined {
    // A script not measured yet runs alone in its process but takes no share: it may be cheap.
    if (this.cost.has(job.script.id)) {
      const share = Math.max(1, this.children.length - 1);
      let byClient = 0;
      let byGroup = 0;
      for (const child of this.children) {
        if (!child?.alive) continue;
        // Runs without a request (no budget) have no known client: only their resource counts.
        if (job.budget && child.costly.some((other) => other.client === job.client && this.cost.has(other.script.id))) byClient++;
        if (child.costly.some((other) => other.script.group === job.script.group && this.cost.has(other.script.id))) byGroup++;
      }
      if (byClient >= share || byGroup >= share) return undefined;
    }
    let best: Child | undefined;
    for (const child of this.children) {
      if (!child?.alive || child.exclusive || child.jobs.size >= MAX_PER_CHILD || child.costly.length >= COSTLY_PER_CHILD) continue;
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
    if (message.t === 'jobs' || message.t === 'replies') {
      child.sent++;
      child.silentSince ??= Date.now();
    }
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
    const proc = fork(this.entry.file, this.entry.args ?? [], {
      execArgv: this.entry.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    const child: Child = {
      proc,
      jobs: new JobTable<PoolJob>(),
      defined: new Set(),
      alive: true,
      exclusive: false,
      stderr: '',
      replies: [],
      replyScheduled: false,
      sent: 0,
      acked: 0,
      silentSince: undefined,
      cold: true,
      watched: undefined,
      costly: [],
      ended: undefined,
    };
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
    this.send(child, { t: 'init', memoryLimitMb: this.options.memoryLimitMb, timeoutMs: this.options.timeoutMs, modules: this.options.modules, ...builtinsForInit() });
    // An idle pool does not keep the server process alive.
    proc.unref();
    (proc.channel as { unref?: () => void } | undefined)?.unref?.();
  }

  private onMessage(child: Child, message: ChildMessage): void {
    // Only checkScriptModules asks for one.
    if (message.t === 'checked') return;
    child.acked = message.a;
    child.cold = false;
    // It spoke: it is not stuck, whatever it still owes.
    child.silentSince = child.acked >= child.sent ? undefined : Date.now();
    if (message.t === 'fatal') {
      const fatal = { kind: message.kind, culprit: message.culprit, detail: message.detail };
      const lost: PoolJob[] = [];
      for (const id of message.jobs) {
        const job = child.jobs.get(id);
        if (!job) continue;
        this.release(child, job);
        lost.push(job);
      }
      this.options.log(
        fatal.kind === 'starved'
          ? `script-runtime: a call was stopped by the wall clock after the machine kept its script process from running (${fatal.detail}); ${lost.length} job(s) were in it and run again; its isolate was replaced`
          : `script-runtime: an isolate failed (${fatal.kind}: ${fatal.detail}); ${lost.length} job(s) were in it; it was replaced`,
      );
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
    if (message.c) {
      for (const [jobId, ms] of message.c) {
        const job = child.jobs.get(jobId);
        if (!job) continue;
        job.cpu += ms;
        const budget = job.budget;
        if (budget === undefined) continue;
        budget.charge(ms);
        // Spent: every job of its request goes (this one included).
        if (budget.failure) this.abortBudget(budget);
      }
    }
    for (const request of message.h) this.hostCall(child, request);
    for (const [jobId, output] of done) {
      const job = child.jobs.get(jobId);
      if (!job) continue;
      this.release(child, job);
      const cost = this.cost.get(job.script.id);
      if (cost === undefined) this.cost.set(job.script.id, job.cpu);
      else if (cost !== 0 || job.cpu !== 0) this.cost.set(job.script.id, cost * 0.7 + job.cpu * 0.3 < 0.01 ? 0 : cost * 0.7 + job.cpu * 0.3);
      job.resolve(output);
    }
    for (const [jobId, text] of message.f) {
      const job = child.jobs.get(jobId);
      if (!job) continue;
      this.release(child, job);
      job.reject(new ScriptRuntimeError(text, { filename: job.script.filename }));
    }
    for (const line of message.l) {
      try {
        this.options.log(line);
      } catch (err) {
        console.error('script-runtime: the log function threw', err, line);
      }
    }
    if (this.waiting > 0) this.schedule();
  }

  private hostCall(child: Child, [callId, jobId, hostIdx, name, args]: [number, number, number, string, unknown[]]): void {
    const job = child.jobs.get(jobId);
    const host = job?.hosts[hostIdx];
    if (!job || !host) return; // the job failed meanwhile
    job.hostCalled = true;
    // While it waits it takes no CPU: its process may take another costly run (a nested call's).
    if (job.waiting++ === 0 && job.active) {
      this.deactivate(job);
      this.schedule();
    }
    const fn = Object.hasOwn(host, name) ? host[name] : undefined;
    // Host functions run after this message's jobs: one may itself run scripts (the svc client).
    const result = typeof fn === 'function' ? Promise.resolve().then(() => fn.apply(host, args)) : Promise.reject(new Error(`${name} is not available`));
    const back = (): void => {
      if (--job.waiting > 0 || job.child !== child || !child.jobs.has(job.id)) return;
      if (this.isCostly(job)) {
        job.active = true;
        child.costly.push(job);
      }
    };
    result.then(
      (r: unknown) => {
        back();
        this.reply(child, callId, r instanceof CallbackError ? { r: r.value, n: typeof r.error === 'string' ? r.error : hostErrorToWire(r.error) } : { r });
      },
      (err: unknown) => {
        back();
        this.reply(child, callId, { e: hostErrorToWire(err) });
      },
    );
  }

  /** Replies that settle in the same microtask run go in one message. */
  private reply(child: Child, callId: number, reply: { r?: unknown; e?: unknown; n?: unknown }): void {
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
    for (const job of jobs) this.release(child, job);
    const reason = `exit code ${code ?? '-'}, signal ${signal ?? '-'}${/heap|memory/i.test(child.stderr) ? ', out of memory' : ''}`;
    child.ended ??= reason;
    if (jobs.length > 0) {
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
    // Starved: a call stopped by the wall clock while the machine kept the process from running.
    // The run whose code it was (`stopped`) is to blame for nothing, yet: it runs again, once (a
    // loop is so stopped after at most two calls' limits, each at most MAX_STRETCH times its own).
    const blameless = fatal?.kind === 'starved';
    let culprit = fatal && fatal.culprit >= 0 ? jobs.find((job) => job.id === fatal.culprit) : undefined;
    if (!culprit && jobs.length === 1) culprit = jobs[0];
    const stopped = blameless ? culprit : undefined;
    if (blameless) culprit = undefined;
    for (const job of jobs) {
      if (job === culprit) job.reject(this.blame(job, fatal, child));
      else if (job === stopped && (job.hostCalled || job.attempts > 0)) {
        // Stopped by the clock again, or after a host call: a run that loops and one the machine
        // kept from running look alike from here; either ran past its limit by the clock.
        job.reject(new ScriptTimeoutError(`script ran past its time limit of ${this.options.timeoutMs} ms by the clock while the machine kept its script process from running`, { filename: job.script.filename }, true));
      } else if (job.hostCalled || job.attempts >= MAX_ATTEMPTS) job.reject(new ScriptRestartedError(job.script.filename));
      else {
        job.attempts++;
        job.suspect = !blameless && culprit === undefined;
        this.enqueue(job);
      }
    }
  }

  private blame(job: PoolJob, fatal: { kind: FatalKind; detail: string } | undefined, child: Child): ScriptError {
    const location = { filename: job.script.filename };
    if (fatal?.kind === 'timeout') return new ScriptTimeoutError(`script exceeded the CPU time limit of ${this.options.timeoutMs} ms`, location, true);
    if (fatal?.kind === 'memory' || /heap|memory/i.test(child.stderr)) {
      return new ScriptMemoryError(`script exceeded the memory limit of ${this.options.memoryLimitMb} MB`, location, true);
    }
    // Killed from outside, or crashed without a word: not known to be the script's memory.
    if (fatal === undefined) return new ScriptRuntimeError(`script process ended (${child.ended ?? 'no reason given'})`, location);
    return new ScriptRuntimeError(`the script broke its isolate: ${fatal.detail}`, location);
  }

  private startWatchdog(): void {
    if (this.watchdog || this.disposed) return;
    this.watchdog = setInterval(this.watch, WATCHDOG_MS).unref();
  }

  /**
   * Kills processes that owe an answer and stay silent (stopped, or stuck outside the isolate's
   * own time limit), and fails jobs whose request ran past its deadline. Stops when idle.
   */
  private readonly watch = (): void => {
    const now = Date.now();
    let busy = this.waiting > 0;
    for (const child of this.children) {
      if (!child?.alive) continue;
      if (child.jobs.size > 0) busy = true;
      for (const job of child.jobs.values()) if (job.budget?.failure) this.abortBudget(job.budget);
      if (child.silentSince !== undefined) this.judge(child, now);
    }
    for (const list of [...this.queues.values()]) for (const job of [...list]) if (job.budget?.failure) this.abortBudget(job.budget);
    if (!busy && this.watchdog) {
      clearInterval(this.watchdog);
      this.watchdog = undefined;
    }
  };

  /**
   * A silent process, judged by its own progress (silence.ts): its CPU time is read when its
   * silence begins, its state (a few procfs reads) only once the wall-clock limit has passed.
   */
  private judge(child: Child, now: number): void {
    const since = child.silentSince as number;
    const pid = child.proc.pid;
    if (child.watched?.since !== since) {
      const cpu0 = pid === undefined ? undefined : readCpuMs(pid);
      child.watched = { since, cpu0, lastCpu: cpu0 ?? 0, stillSince: undefined };
    }
    const silentMs = now - since;
    if (silentMs <= this.options.timeoutMs + SILENCE_GRACE_MS) return;
    const watched = child.watched;
    const seen = pid === undefined || watched.cpu0 === undefined ? undefined : readProgress(pid);
    let progress: SilenceFacts['progress'];
    if (seen !== undefined) {
      // Still: neither running nor runnable, and no CPU time since the last look (first look included).
      if (seen.state === 'runnable' || seen.cpuMs > watched.lastCpu) watched.stillSince = undefined;
      else watched.stillSince ??= now;
      watched.lastCpu = seen.cpuMs;
      progress = { state: seen.state, cpuMs: seen.cpuMs - (watched.cpu0 as number), stillMs: watched.stillSince === undefined ? 0 : now - watched.stillSince };
    }
    const why = judgeSilence({ silentMs, cold: child.cold, progress }, { timeoutMs: this.options.timeoutMs, modules: this.options.modules.length });
    if (why !== undefined) this.silent(child, why);
  }

  /** A process that stopped answering: its jobs fail now, and it is killed and replaced. */
  private silent(child: Child, why: string): void {
    const jobs = [...child.jobs.values()];
    child.alive = false;
    this.options.log(`script-runtime: a script process (pid ${child.proc.pid ?? '?'}) had work and ${why}; it was killed and replaced; ${jobs.length} job(s) were in it`);
    for (const job of jobs) {
      this.release(child, job);
      job.reject(new ScriptTimeoutError(`script process ended: ${why} (time limit ${this.options.timeoutMs} ms)`, { filename: job.script.filename }, true));
    }
    child.ended = 'killed: it stopped answering';
    child.proc.kill('SIGKILL');
    this.schedule();
  }
}
