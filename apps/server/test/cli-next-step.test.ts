import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runSvc } from './cli.js';

// Issue 23, item 9: `svc create` said "run it with: svc <dir>", which is no command in the svc
// repository (svc is not on the PATH there).
const repo = fileURLToPath(new URL('../../../', import.meta.url));
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc next step '));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs a shell command line in the repository until it prints its port; answers whether it did. */
function listens(line: string): Promise<boolean> {
  return new Promise((resolve) => {
    // A group of its own: the line may start svc's launcher, which runs the server in a child;
    // the whole group is stopped, so no server outlives the test.
    const child = spawn('sh', ['-c', `exec ${line} --port 0`], { cwd: repo, env: { ...process.env, SVC_WATCH: '0' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const stop = () => {
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        // already gone
      }
    };
    let out = '';
    const timer = setTimeout(stop, 20_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (/listening on port \d+/.test(out)) stop();
    });
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(/listening on port \d+/.test(out));
    });
  });
}

describe('svc create: the next-step line', () => {
  it('started by path from the repository, it names that path, and the line runs as printed (a folder with spaces too)', async () => {
    const app = join(dir, 'my app');
    const arg = relative(repo, app);
    const created = await new Promise<{ stdout: string; code: number | null }>((resolve) => {
      const child = spawn(process.execPath, ['--no-node-snapshot', 'apps/server/bin/svc.js', 'create', arg], { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.on('exit', (code) => resolve({ stdout, code }));
    });
    expect(created.code).toBe(0);
    const line = /run it with: (.*)\n/.exec(created.stdout)?.[1] ?? '';
    expect(line).toBe(`node apps/server/bin/svc.js '${arg}'`);
    expect(await listens(line)).toBe(true);
  });

  it('under the repository\'s `pnpm svc` script it says pnpm svc', async () => {
    const pkg = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const created = await runSvc(['create', join(dir, 'app')], { npm_lifecycle_event: 'svc', npm_lifecycle_script: pkg.scripts.svc ?? '' });
    expect(created.stdout).toContain(`run it with: pnpm svc ${join(dir, 'app').includes(' ') ? `'${join(dir, 'app')}'` : join(dir, 'app')}\n`);
  });
});
