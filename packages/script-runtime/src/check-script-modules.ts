import { fork } from 'node:child_process';
import type { ChildMessage, ParentMessage } from './internal/pool-messages.js';
import { MODULE_TIME_FACTOR } from './internal/isolate-worker.js';
import { builtinsForInit, entryPoint } from './internal/script-entry.js';
import type { ScriptModule } from './types.js';

/** Largest bundled source of one module, bytes: every isolate holds each module (and its source). */
export const MAX_MODULE_BYTES = 4 * 1024 * 1024;
/** Largest bundled source of all modules together, bytes. */
export const MAX_MODULES_BYTES = 8 * 1024 * 1024;
/** Time a script process may take to start, beside the modules' own time limits, ms. */
const START_GRACE_MS = 10_000;

/** Throws when a module list cannot be given to a runtime (a bad name, too large). */
export function validateModules(modules: readonly ScriptModule[]): void {
  const names = new Set<string>();
  let total = 0;
  for (const module of modules) {
    if (typeof module.name !== 'string' || module.name === '' || typeof module.source !== 'string') throw new TypeError('a module needs a name and a source (strings)');
    if (names.has(module.name)) throw new TypeError(`module '${module.name}' is given twice`);
    names.add(module.name);
    const bytes = Buffer.byteLength(module.source);
    if (bytes > MAX_MODULE_BYTES) throw new Error(`module '${module.name}' is ${mb(bytes)} MB bundled; event scripts allow ${mb(MAX_MODULE_BYTES)} MB per module`);
    total += bytes;
  }
  if (total > MAX_MODULES_BYTES) throw new Error(`the modules of event scripts are ${mb(total)} MB bundled; at most ${mb(MAX_MODULES_BYTES)} MB in all`);
}

const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);

/**
 * Loads the modules once in a script process of their own, as every isolate of the runtime
 * will, and resolves when they all loaded: a module whose top-level code throws, loops or runs
 * out of memory rejects with a message naming it, instead of failing every run later. Nothing
 * runs in the calling process.
 */
export async function checkScriptModules(modules: readonly ScriptModule[], limits: { memoryLimitMb?: number; timeoutMs?: number } = {}): Promise<void> {
  validateModules(modules);
  if (modules.length === 0) return;
  const memoryLimitMb = Math.max(8, limits.memoryLimitMb ?? 64);
  const timeoutMs = limits.timeoutMs ?? 1000;
  const entry = entryPoint();
  const proc = fork(entry.file, [], { execArgv: entry.execArgv, serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-2000);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      // Each module has the time limit on its own; a process that says nothing past all of them is stuck.
      const limitMs = timeoutMs * MODULE_TIME_FACTOR * modules.length + START_GRACE_MS;
      const timer = setTimeout(() => reject(new Error(`the modules of event scripts did not load within ${limitMs} ms`)), limitMs);
      proc.on('message', (message: ChildMessage) => {
        if (message.t !== 'checked') return;
        clearTimeout(timer);
        if (message.error === '') resolve();
        else reject(new Error(message.error));
      });
      proc.on('exit', (code, signal) => {
        clearTimeout(timer);
        const memory = /heap|memory/i.test(stderr) ? `: out of memory (the scripts' limit is ${memoryLimitMb} MB)` : '';
        reject(new Error(`the modules of event scripts could not be loaded: their script process ended (exit code ${code ?? '-'}, signal ${signal ?? '-'})${memory}`));
      });
      proc.on('error', reject);
      const init: ParentMessage = { t: 'init', memoryLimitMb, timeoutMs, modules, ...builtinsForInit() };
      proc.send(init);
      proc.send({ t: 'check' } satisfies ParentMessage);
    });
  } finally {
    proc.kill('SIGKILL');
  }
}
