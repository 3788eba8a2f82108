/** Read once: a read of process.env looks the environment up each time (~1 µs, once per write here). */
const CRASH_AT = process.env.SVC_TEST_CRASH_AT;

/**
 * For crash tests only: kills this process at once (kill -9, no cleanup) when SVC_TEST_CRASH_AT
 * names the step (as the server's own crash points do). Unset, it does nothing.
 */
export function crashPoint(step: string): void {
  if (CRASH_AT === step) process.kill(process.pid, 'SIGKILL');
}
