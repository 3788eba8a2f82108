/** Waits until `check` holds, polling; fails after `ms` (generous: machines run slower under load). */
export async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Lets in-flight messages arrive (to show that one did not). */
export function settle(ms = 250): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
