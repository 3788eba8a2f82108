// The start that the engine bench scripts (engine-start.js, engine-scale.js, engine-pocketbase.js)
// share: their arguments, where the checkout and its svc are, a timed log on stderr, servers
// stopped on Ctrl-C, the machine's description, and this process pinned off the server's core.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './args.js';
import { machine } from './machine.js';
import { pinning, pinSelf, stopAll } from './procs.js';

/**
 * Parses `process.argv` by `spec` (see parseArgs), pins this process to the load core when the
 * machine has two cores and taskset, and stops every spawned process on SIGINT/SIGTERM.
 * @param {Record<string, 'string' | 'number' | 'boolean'>} spec
 */
export function startEngineBench(spec) {
  const args = parseArgs(process.argv.slice(2), spec);
  const repo = fileURLToPath(new URL('../..', import.meta.url));
  const svcBin = join(repo, 'apps/server/bin/svc.js');
  /** @param {string} line */
  const log = (line) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => stopAll().finally(() => process.exit(130)));
  const mach = machine();
  const pin = pinning();
  if (pin) pinSelf(pin.load);
  return { args, repo, svcBin, log, mach, pin };
}
