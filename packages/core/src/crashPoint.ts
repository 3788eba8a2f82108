/** Read once: a read of process.env looks the environment up each time (~1 µs, on write paths here). */
const CRASH_AT = process.env.SVC_TEST_CRASH_AT;

/**
 * For crash tests only: kills this process at once (kill -9, no cleanup) when the environment
 * variable SVC_TEST_CRASH_AT (set when the process starts) names this step, so that a test can
 * stop a multi-step change at an exact point instead of guessing a delay. Unset, it does nothing.
 */
export function crashPoint(step: string): void {
  if (CRASH_AT === step) process.kill(process.pid, 'SIGKILL');
}
