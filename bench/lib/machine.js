// What machine a run happened on, for the results file and RESULTS.md.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';

function sh(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

export function machine() {
  let cpuModel;
  try {
    cpuModel = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1];
  } catch {
    // not Linux
  }
  return {
    nproc: Number(sh('nproc', [])) || os.availableParallelism(),
    cpuModel: cpuModel ?? os.cpus()[0]?.model ?? 'unknown',
    node: process.version,
    kernel: `${os.type()} ${os.release()} ${os.arch()}`,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100),
  };
}
