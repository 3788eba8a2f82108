import { readdirSync, readFileSync } from 'node:fs';

/**
 * What the kernel says of a script process (Linux /proc), for the pool's watchdog: a process that
 * owes an answer is judged by what it did with the CPU it was given, not by the wall clock, which
 * a busy machine stretches (script processes run at the lowest priority).
 */
export interface ProcessProgress {
  /** CPU time of all its threads (ended ones included) since it started, ms. */
  cpuMs: number;
  /**
   * 'runnable': a thread runs or waits for a CPU (or for the disk); 'stopped': by a signal
   * (SIGSTOP) or a debugger; 'asleep': every thread waits for something else; 'gone': it ended.
   */
  state: 'runnable' | 'stopped' | 'asleep' | 'gone';
}

/** USER_HZ: /proc counts CPU time in ticks of 1/100 s on every Linux ABI (the kernel's HZ is another matter). */
const TICKS_PER_SECOND = 100;

let available: boolean | undefined;

/** True where /proc tells CPU times and states (Linux); elsewhere the watchdog has the wall clock only. */
export function progressAvailable(): boolean {
  if (available === undefined) {
    try {
      available = process.platform === 'linux' && fieldsOf(readFileSync('/proc/self/stat', 'latin1')) !== undefined;
    } catch {
      available = false;
    }
  }
  return available;
}

/** The process's CPU time so far, ms; undefined when it is gone or there is no /proc. */
export function readCpuMs(pid: number): number | undefined {
  if (!progressAvailable()) return undefined;
  const fields = readStat(`/proc/${pid}/stat`);
  return fields === undefined ? undefined : cpuOf(fields);
}

/** The process's CPU time and state; undefined where there is no /proc. */
export function readProgress(pid: number): ProcessProgress | undefined {
  if (!progressAvailable()) return undefined;
  const fields = readStat(`/proc/${pid}/stat`);
  const main = fields?.[0];
  if (fields === undefined || main === 'Z' || main === 'X' || main === 'x') return { cpuMs: fields === undefined ? 0 : cpuOf(fields), state: 'gone' };
  return { cpuMs: cpuOf(fields), state: stateOf(pid, main) };
}

/** The state of the whole process: the states of its threads (the main one may wait while another runs). */
function stateOf(pid: number, main: string | undefined): ProcessProgress['state'] {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 'gone';
  }
  let stopped = main === 'T' || main === 't';
  let runnable = false;
  for (const tid of threads) {
    // A thread that ended meanwhile has no file any more: it tells nothing.
    const state = readStat(`/proc/${pid}/task/${tid}/stat`)?.[0];
    if (state === 'T' || state === 't') stopped = true;
    else if (state === 'R' || state === 'D') runnable = true;
  }
  if (stopped) return 'stopped';
  return runnable ? 'runnable' : 'asleep';
}

function readStat(path: string): string[] | undefined {
  try {
    return fieldsOf(readFileSync(path, 'latin1'));
  } catch {
    return undefined;
  }
}

/** The fields after `pid (comm)`: the name may hold spaces and parentheses, so they follow the last ')'. */
function fieldsOf(stat: string): string[] | undefined {
  const end = stat.lastIndexOf(')');
  if (end < 0) return undefined;
  const fields = stat.slice(end + 2).split(' ');
  return fields.length > 12 ? fields : undefined;
}

/** utime + stime (fields 14 and 15 of stat(5), 11 and 12 after the name). */
function cpuOf(fields: readonly string[]): number {
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}
