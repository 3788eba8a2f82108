import { Cron } from 'croner';
import type { Logger, ScheduledJobs } from '@svc/core';

/** setTimeout's longest delay (2^31-1 ms, about 24.8 days): longer waits are made of several. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * How long the claim of one planned time lives in Redis: longer than any delay between two
 * processes' timers for the same time (a loaded machine, a clock a little off), after which a
 * process would take an old time for a new one. Keys are small; a schedule every second keeps
 * about 600 of them.
 */
export const CLAIM_TTL_MS = 10 * 60_000;

/** A parsed schedule: the times it names. */
export interface Schedule {
  /** The pattern as written in config.json. */
  readonly pattern: string;
  readonly timezone: string;
  /** The first planned time strictly after `after`; undefined when there is none (a date that never comes). */
  next(after: Date): Date | undefined;
}

/**
 * Parses a cron schedule: 5 fields (minute hour day-of-month month day-of-week), or 6 with
 * seconds first, or a nickname (@hourly, @daily, @weekly, @monthly, @yearly), read in `timezone`
 * (an IANA name such as 'Europe/Paris'; default UTC). As in standard cron, when both day fields
 * are restricted a day matching either runs. A bad pattern or time zone, or a pattern that never
 * comes (0 0 30 2 *), throws an Error naming the resource.
 */
export function parseSchedule(resource: string, pattern: string, timezone = 'UTC'): Schedule {
  // Worded "setting <name> ..." so that the dashboard shows the error beside the field.
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw new Error(`resource ${resource}: setting timezone "${timezone}" is not a time zone (an IANA name such as UTC or Europe/Paris)`);
  }
  let cron: Cron;
  let first: Date | null;
  try {
    cron = new Cron(pattern, { timezone, paused: true, mode: '5-or-6-parts' });
    first = cron.nextRun();
  } catch (err) {
    throw new Error(`resource ${resource}: setting schedule "${pattern}" is not a valid cron schedule (${(err as Error).message})`, { cause: err });
  }
  if (first === null) throw new Error(`resource ${resource}: setting schedule "${pattern}" never runs (no such date ahead)`);
  return {
    pattern,
    timezone,
    next: (after) => cron.nextRun(after) ?? undefined,
  };
}

/** What one scheduled run did, for the log. */
export type RunOutcome = 'ok' | 'cancelled' | 'failed';

/** Options of {@link startSchedule}. */
export interface ScheduleOptions {
  /** The resource's name, for claims and the log. */
  resource: string;
  schedule: Schedule;
  jobs: ScheduledJobs;
  logger: Logger;
  /** Runs the job for one planned time; rejects when it fails. Answers how it ended. */
  run(planned: Date): Promise<RunOutcome>;
}

/** A running schedule. */
export interface ScheduleHandle {
  /** Stops the timers and waits for a run under way. */
  stop(): Promise<void>;
}

/**
 * Runs `run` at each time of the schedule, once across the processes that share the claims. The
 * next time is computed from the clock when a time comes (never by adding intervals, which
 * drift); a time that comes while the previous run is still going is skipped and logged, so runs
 * never pile up, in this process or across processes (a claim held while a run goes on). Each
 * run, skip and failure is one log line with the resource, the planned time, the duration and
 * the outcome as fields. Timers stop when `jobs.signal` aborts or `stop()` is called.
 */
export function startSchedule(options: ScheduleOptions): ScheduleHandle {
  const { resource, schedule, jobs, logger } = options;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> | undefined;
  const runningKey = `running:${resource}`;

  const halt = (): void => {
    stopped = true;
    clearTimeout(timer);
    timer = undefined;
  };
  const fields = (planned: Date, extra: Record<string, unknown>): Record<string, unknown> => ({
    resource,
    schedule: schedule.pattern,
    timezone: schedule.timezone,
    planned: planned.toISOString(),
    ...extra,
  });

  /** Waits for `planned`, in steps setTimeout can make. */
  const wait = (planned: Date): void => {
    if (stopped) return;
    const delay = planned.getTime() - Date.now();
    timer = delay > MAX_TIMER_MS ? setTimeout(() => wait(planned), MAX_TIMER_MS) : setTimeout(() => fire(planned), Math.max(0, delay));
    // A schedule alone does not keep a process alive: the server does.
    timer.unref();
  };
  /** Arms the timer for the first time after `after` (and after now: a timer may fire a little early). */
  const armAfter = (after: Date): void => {
    if (stopped) return;
    const now = new Date();
    const next = schedule.next(now > after ? now : after);
    if (next === undefined) {
      logger.info(`schedule ${resource}: no time left in "${schedule.pattern}", the job will not run again`, { resource, schedule: schedule.pattern });
      return;
    }
    wait(next);
  };
  const fire = (planned: Date): void => {
    timer = undefined;
    if (stopped) return;
    armAfter(planned);
    if (running) {
      logger.warn(`schedule ${resource} ${planned.toISOString()}: skipped, the previous run is still going`, fields(planned, { outcome: 'skipped', reason: 'overlap' }));
      return;
    }
    running = attempt(planned)
      // A claim that throws (a host's own ScheduledJobs) is a failed time, not a crash.
      .catch((err: unknown) => logger.error(`schedule ${resource} ${planned.toISOString()}: ${(err as Error).message}`, fields(planned, { outcome: 'failed', error: (err as Error).message })))
      .finally(() => (running = undefined));
  };
  const attempt = async (planned: Date): Promise<void> => {
    // Another process has this time: it runs it.
    if (!(await jobs.claim(`run:${resource}:${planned.toISOString()}`, CLAIM_TTL_MS))) return;
    // A run of another process (or of the previous version, just reloaded) may still be going.
    if (!(await jobs.claim(runningKey, jobs.runWallMs + 60_000))) {
      logger.warn(`schedule ${resource} ${planned.toISOString()}: skipped, the previous run is still going`, fields(planned, { outcome: 'skipped', reason: 'overlap' }));
      return;
    }
    const started = performance.now();
    const ms = (): number => Math.round(performance.now() - started);
    try {
      const outcome = await options.run(planned);
      logger.info(`schedule ${resource} ${planned.toISOString()}: ${outcome === 'ok' ? 'ran' : 'cancelled'} in ${ms()} ms`, fields(planned, { outcome, durationMs: ms() }));
    } catch (err) {
      const cause = (err as Error).cause instanceof Error ? ((err as Error).cause as Error) : (err as Error);
      logger.error(`schedule ${resource} ${planned.toISOString()}: failed after ${ms()} ms: ${cause.message}`, fields(planned, { outcome: 'failed', durationMs: ms(), error: cause.message }));
    } finally {
      await jobs.release(runningKey);
    }
  };

  jobs.signal.addEventListener('abort', halt, { once: true });
  if (jobs.signal.aborted) halt();
  // Times are counted from when the server answers: a run before would find no server.
  void jobs.ready.then(() => armAfter(new Date()));
  return {
    async stop() {
      halt();
      jobs.signal.removeEventListener('abort', halt);
      await running;
    },
  };
}
