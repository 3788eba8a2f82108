/**
 * For crash tests only: SVC_TEST_CRASH_AT naming this step kills the process here (kill -9, no
 * cleanup), so that a test can stop the server between two writes it cannot otherwise time.
 * Unset, it does nothing. Read at each call: in-process tests set it while running.
 */
export function crashPoint(step: string): void {
  if (process.env.SVC_TEST_CRASH_AT === step) process.kill(process.pid, 'SIGKILL');
}
