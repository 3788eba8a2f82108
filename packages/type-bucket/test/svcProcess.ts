import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SVC_BIN = fileURLToPath(new URL('../../../apps/server/bin/svc.js', import.meta.url));
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

/** A `svc` server in its own process, running an app that installed @svc/type-bucket. */
export interface SvcProcess {
  child: ChildProcess;
  url: string;
  /** Resident set size now and at its peak (VmRSS, VmHWM), in bytes. */
  memory(): Promise<{ rss: number; peak: number }>;
  close(): Promise<void>;
}

/**
 * Writes an app folder whose package.json depends on @svc/type-bucket (linked to this package,
 * so the server loads its build the way it loads any installed type) and runs `svc` on it.
 */
export async function startSvcWithBucket(config: Record<string, unknown>): Promise<SvcProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bucket-proc-'));
  await installBucketType(dir);
  await mkdir(join(dir, 'resources', 'files'), { recursive: true });
  await writeFile(join(dir, 'resources', 'files', 'config.json'), JSON.stringify({ type: 'Bucket', ...config }));
  const { child, url } = await runSvc(dir);
  return {
    child,
    url,
    async memory() {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
      return { rss: kb('VmRSS'), peak: kb('VmHWM') };
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((done) => child.once('exit', done));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Gives the app folder `dir` a package.json that depends on @svc/type-bucket, linked to this package's build. */
export async function installBucketType(dir: string): Promise<void> {
  if (!existsSync(join(PACKAGE_DIR, 'dist', 'index.js'))) throw new Error('@svc/type-bucket is not built: run `pnpm build` first');
  await writeFile(join(dir, 'package.json'), JSON.stringify({ private: true, dependencies: { '@svc/type-bucket': '*' } }));
  await mkdir(join(dir, 'node_modules', '@svc'), { recursive: true });
  await symlink(PACKAGE_DIR, join(dir, 'node_modules', '@svc', 'type-bucket'), 'dir');
}

/**
 * Runs `svc` on the app folder `dir` (with `env` added to this process's environment) until it
 * listens; the caller stops the process (the folder stays).
 */
export async function runSvc(dir: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; output(): string }> {
  const child = spawn(process.execPath, ['--no-node-snapshot', SVC_BIN, dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`svc did not start in 60 s\n${out}\n${err}`)), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`svc exited with ${code}\n${out}\n${err}`));
    });
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on port (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve(Number(m[1]));
    });
  });
  child.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  return { child, url: `http://127.0.0.1:${port}`, output: () => `${out}\n${err}` };
}
