import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SVC_BIN = fileURLToPath(new URL('../bin/svc.js', import.meta.url));

/** A `svc` process started by a test, and how to stop it. */
export interface SvcProcess {
  child: ChildProcess;
  port: number;
  url: string;
  stdout(): string;
  stderr(): string;
  /** Sends a signal and answers the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Runs `svc <args>` to completion. */
export function runSvc(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', SVC_BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Opens the write rules of a collection `svc create` made (drops its config.json `rules`), for
 * tests of faults and load that write anonymously: they test shutdowns and disks, not rules.
 */
export async function openRules(app: string, collection = 'todos'): Promise<void> {
  const file = join(app, 'resources', collection, 'config.json');
  const { rules: _rules, ...config } = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  await writeFile(file, `${JSON.stringify(config, null, 2)}\n`);
}

/** Starts `svc <app> --port 0 ...` and waits for `listening on port <n>` (15 s unless `timeoutMs`). */
export function startSvc(args: string[], env: Record<string, string> = {}, timeoutMs = 15_000): Promise<SvcProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', SVC_BIN, ...args, '--port', '0'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc did not start in ${timeoutMs / 1000} s\n${out}\n${err}`));
    }, timeoutMs);
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`svc exited with ${code}\n${out}\n${err}`));
    });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on port (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      const port = Number(m[1]);
      resolve({
        child,
        port,
        url: `http://127.0.0.1:${port}`,
        stdout: () => out,
        stderr: () => err,
        stop(signal = 'SIGTERM') {
          return new Promise((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done(child.exitCode);
            child.once('exit', (code) => done(code));
            child.kill(signal);
          });
        },
      });
    });
  });
}
