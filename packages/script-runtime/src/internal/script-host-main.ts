/**
 * Entry point of a script process: one isolate, driven by an IsolateWorker, talking to the server
 * process over the IPC channel (see script-pool.ts for the other side and the messages).
 *
 * Scripts run here, not in the server process, so that nothing they do can stop the server: an
 * endless loop keeps only this process busy, and V8's fatal out-of-memory errors (which no isolate
 * limit catches: a growing dictionary object aborts the whole process) end only this process. On
 * any failed call the worker reports whom to blame and the jobs that were in its isolate, and goes
 * on with a new isolate; a process that dies (fatal out-of-memory) is replaced by the pool.
 */
import { CompiledScript } from './compiled-script.js';
import type { ScriptModule } from '../types.js';
import { IsolateWorker } from './isolate-worker.js';
import { useBuiltinSources } from './node-builtins-bundle.js';
import type { FatalKind } from './isolate-worker.js';
import type { ChildMessage, ParentMessage } from './pool-messages.js';

const send = process.send?.bind(process);
if (!send) throw new Error('script-host-main must be started by the script pool (no IPC channel)');

const owner = {};
const scripts = new Map<number, CompiledScript>();
const calls = new Map<number, (reply: { r?: unknown; e?: unknown; n?: unknown }) => void>();
let nextCall = 1;
let worker: IsolateWorker | undefined;
let limits: { memoryLimitMb: number; timeoutMs: number; modules: readonly ScriptModule[] } = { memoryLimitMb: 64, timeoutMs: 1000, modules: [] };
/** Jobs given to the current worker and not finished: those a failed isolate takes with it. */
const inflight = new Set<number>();

/** What goes to the server with the next message: one message per event-loop turn at most. */
/** Outcomes of finished jobs: JSON `[jobId, JobOutput]` entries, as the isolate wrote them. */
let outDone: string[] = [];
let outHost: [number, number, number, string, unknown[]][] = [];
let outLog: string[] = [];
let outFailed: [number, string][] = [];
let flushScheduled = false;
/** CPU time per job not reported yet, ms: sent once a job's reaches a millisecond. */
const charges = new Map<number, number>();
/** Messages with work (jobs, replies) received: every one is answered, so the server knows this process is alive. */
let received = 0;
let acked = 0;
let alive = false;

function flush(): void {
  flushScheduled = false;
  let c: [number, number][] | undefined;
  for (const [jobId, ms] of charges) {
    if (ms >= 1) {
      (c ??= []).push([jobId, Math.round(ms * 10) / 10]);
      charges.delete(jobId);
    } else if (!inflight.has(jobId)) charges.delete(jobId);
  }
  if (outDone.length + outHost.length + outLog.length + outFailed.length === 0 && c === undefined && acked === received && !alive) return;
  alive = false;
  acked = received;
  const message: ChildMessage = { t: 'out', d: outDone.join(','), h: outHost, l: outLog, f: outFailed, a: acked };
  if (c !== undefined) message.c = c;
  outDone = [];
  outHost = [];
  outLog = [];
  outFailed = [];
  send?.(message);
}

function schedule(): void {
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flush);
}

/**
 * The isolate failed: report whom to blame and which jobs it took with it (the pool fails or runs
 * them again), then go on with a new isolate. Creating one costs a few ms; a new process ~100 ms.
 */
function onFatal(kind: FatalKind, culprit: number, detail: string): void {
  flush();
  const message: ChildMessage = { t: 'fatal', kind, culprit, detail, jobs: [...inflight], a: received };
  acked = received;
  inflight.clear();
  send?.(message);
  worker = start();
}

function start(): IsolateWorker {
  return new IsolateWorker({
    ...limits,
    log: (line) => {
      outLog.push(line);
      schedule();
    },
    hostCall: (jobId, hostIdx, name, args) =>
      new Promise((resolve) => {
        const callId = nextCall++;
        calls.set(callId, resolve);
        outHost.push([callId, jobId, hostIdx, name, args]);
        schedule();
      }),
    done: (jobIds, outputs) => {
      for (const jobId of jobIds) inflight.delete(jobId);
      outDone.push(outputs);
      schedule();
    },
    fatal: onFatal,
    charge: (jobId, ms) => {
      charges.set(jobId, (charges.get(jobId) ?? 0) + ms);
    },
    progress: () => {
      alive = true;
      schedule();
    },
  });
}

process.on('message', (raw: unknown) => {
  const message = raw as ParentMessage;
  switch (message.t) {
    case 'init':
      limits = { memoryLimitMb: message.memoryLimitMb, timeoutMs: message.timeoutMs, modules: message.modules };
      if (message.builtins) useBuiltinSources(message.builtins);
      worker = start();
      break;
    case 'check': {
      let error = '';
      try {
        worker?.load();
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      send?.({ t: 'checked', error } satisfies ChildMessage);
      break;
    }
    case 'jobs': {
      if (!worker) return;
      received++;
      for (const [id, filename, source] of message.defs) {
        if (!scripts.has(id)) scripts.set(id, new CompiledScript(id, filename, source, owner));
      }
      for (const [jobId, scriptId, json] of message.jobs) {
        const script = scripts.get(scriptId);
        try {
          if (!script) throw new Error(`script ${scriptId} was never sent to this process`);
          worker.define(script);
        } catch (err) {
          outFailed.push([jobId, err instanceof Error ? err.message : String(err)]);
          schedule();
          continue;
        }
        inflight.add(jobId);
        worker.run(jobId, json);
      }
      // After the worker's turn (setImmediate order): the answer carries the outcomes and the ack.
      schedule();
      break;
    }
    case 'drop':
      for (const jobId of message.j) {
        if (!inflight.delete(jobId)) continue;
        charges.delete(jobId);
        worker?.drop(jobId);
      }
      break;
    case 'replies':
      received++;
      schedule();
      for (const [callId, reply] of message.r) {
        const resolve = calls.get(callId);
        calls.delete(callId);
        resolve?.(reply);
      }
      break;
  }
});

// The server process is gone: nothing can use what runs here any more.
process.on('disconnect', () => process.exit(0));
