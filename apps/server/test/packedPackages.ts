import { spawn } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The published packages as a user gets them from the registry: `pnpm pack` (which turns
// workspace: ranges into versions) into a folder, and the dependency map that installs them.

export const REPO = fileURLToPath(new URL('../../..', import.meta.url));
export const PACKAGES = ['packages/core', 'packages/script-runtime', 'packages/realtime', 'packages/client', 'packages/type-event', 'packages/type-email', 'packages/type-bucket', 'packages/type-importer', 'packages/type-fileupload', 'packages/type-webhook', 'packages/dashboard', 'apps/server'];
/** The node running the tests first on PATH, so that npm and native modules use it. */
export const PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`;

/**
 * The runner's environment without the npm_config_* that `npx`/`npm run`/`pnpm` put there (such as
 * npm_config_registry=https://registry.npmjs.org/): a child npm must read the registry its HOME's
 * .npmrc names, whatever launched the tests.
 */
function withoutNpmConfig(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !/^npm_config_/i.test(key)));
}

export function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: { ...withoutNpmConfig(process.env), PATH, npm_config_update_notifier: 'false', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', (err) => resolve({ code: -1, out: `${out}${String(err)}` }));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

/**
 * Packs every published package into `dest`; answers the tarballs' file names, sorted. Four packs
 * at a time: each is mostly a pnpm start waiting on the disk (about 1 s of CPU in 2.5 s), so the
 * twelve took 20-23 s instead of 29-30 s one by one (paired runs at a load of 12-14).
 */
export async function packAll(dest: string): Promise<string[]> {
  await mkdir(dest, { recursive: true });
  const queue = [...PACKAGES];
  const packer = async (): Promise<void> => {
    for (let pkg = queue.shift(); pkg !== undefined; pkg = queue.shift()) {
      const packed = await run('pnpm', ['pack', '--pack-destination', dest], join(REPO, pkg));
      if (packed.code !== 0) throw new Error(`pnpm pack in ${pkg} failed:\n${packed.out}`);
    }
  };
  await Promise.all([packer(), packer(), packer(), packer()]);
  return (await readdir(dest)).sort();
}

/** `@svc/<name>` -> `file:<prefix>/<tarball>`: for dependencies and overrides (so that the packages' own ranges on each other resolve to the tarballs too). */
export function tarballDependencies(tarballs: readonly string[], prefix: string): Record<string, string> {
  const deps: Record<string, string> = {};
  for (const file of tarballs) deps[`@svc/${file.replace(/^svc-/, '').replace(/-\d+\.\d+\.\d+.*\.tgz$/, '')}`] = `file:${prefix}/${file}`;
  return deps;
}
