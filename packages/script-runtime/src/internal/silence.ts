import { MODULE_TIME_FACTOR } from './isolate-worker.js';
import type { ProcessProgress } from './process-progress.js';

/** A process that owes an answer and says nothing for its time limit plus this long is looked at. */
export const SILENCE_GRACE_MS = 2000;
/**
 * CPU time a new process may use before its first answer, besides its modules: Node and the
 * isolate start (from the sources under vitest, types are stripped too). Well over what either
 * costs on a slow machine; a process stuck from the start is found this much later.
 */
export const COLD_START_CPU_MS = 3000;
/** Without /proc (not Linux): how much longer a new process may be silent, by the wall clock. */
export const COLD_START_WALL_MS = 10_000;
/** How long a silent process must neither run nor wait for a CPU before it counts as hung. */
export const STILL_MS = 1000;

/** What the pool knows of a script process that owes an answer (it was sent work and said nothing since). */
export interface SilenceFacts {
  /** How long it has owed an answer without a word, ms (wall clock). */
  silentMs: number;
  /** It has said nothing since it started: Node, the isolate and the modules may still be loading. */
  cold: boolean;
  /** The kernel's view (process-progress.ts); undefined where there is none: the wall clock alone decides. */
  progress:
    | {
        state: ProcessProgress['state'];
        /** CPU time it used since it began to owe the answer, ms. */
        cpuMs: number;
        /** How long it has neither used CPU nor been runnable, ms. */
        stillMs: number;
      }
    | undefined;
}

/** The limits a process is judged by. */
export interface SilenceLimits {
  /** The scripts' time limit, ms: no call into the isolate lasts longer. */
  timeoutMs: number;
  /** Modules loaded into each new isolate (each may run MODULE_TIME_FACTOR times the time limit). */
  modules: number;
}

/**
 * Whether a silent script process is stuck, and why (undefined: not known to be, leave it). Its
 * own progress decides, not the wall clock, which a busy machine stretches at will (on 2 cores at
 * load 8-12, a process at the lowest priority may get no CPU for seconds):
 * - it used more CPU time, since it began to owe, than any healthy answer takes (the time limit,
 *   the grace, its modules, and a start when it is new): busy without answering, as a loop that
 *   the isolate's time limit does not reach;
 * - it is stopped (SIGSTOP, a debugger): it will not run again by itself;
 * - it neither runs nor waits for a CPU, and has not for STILL_MS: it waits for something that
 *   does not come;
 * - runnable, it waits for a CPU: it is judged by the CPU time it is given, however long that takes.
 * Nothing is judged before the time limit plus the grace has passed on the wall clock. Without
 * /proc, that wall-clock limit decides alone, longer for a new process and for modules.
 */
export function judgeSilence(facts: SilenceFacts, limits: SilenceLimits): string | undefined {
  const wallMs = limits.timeoutMs + SILENCE_GRACE_MS;
  if (facts.silentMs <= wallMs) return undefined;
  const modulesMs = limits.modules * MODULE_TIME_FACTOR * limits.timeoutMs;
  const progress = facts.progress;
  if (progress === undefined) {
    const limit = wallMs + modulesMs + (facts.cold ? COLD_START_WALL_MS : 0);
    return facts.silentMs > limit ? `it stopped answering for ${Math.round(facts.silentMs)} ms` : undefined;
  }
  // Its exit is on the way: the pool's exit handler settles its jobs.
  if (progress.state === 'gone') return undefined;
  const cpuLimit = wallMs + modulesMs + (facts.cold ? COLD_START_CPU_MS : 0);
  if (progress.cpuMs > cpuLimit) return `it stopped answering while it used ${Math.round(progress.cpuMs)} ms of CPU time`;
  if (progress.state === 'stopped') return `it stopped answering for ${Math.round(facts.silentMs)} ms: it was stopped (a signal or a debugger)`;
  if (progress.state === 'asleep' && progress.stillMs >= STILL_MS) return `it stopped answering for ${Math.round(facts.silentMs)} ms: asleep with work waiting`;
  return undefined;
}
