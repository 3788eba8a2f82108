import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSvc } from './cli.js';
import { startCommand } from './helpers/startCommand.js';
import { run } from './packedPackages.js';

// Issue 40: before the packages are on the public registry, an app that `svc create` makes from a
// checkout must install with no registry at all. It links to the checkout: `file:` for npm, and
// `link:` for pnpm through pnpm.overrides. Here both installs see only a registry address where
// nothing listens, a cache and a store of their own, so anything they fetched would fail.

const SERVER_DIR = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const hasPnpm = spawnSync('pnpm', ['--version'], { env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` } }).status === 0;
if (!hasPnpm) {
  if (process.env.CI === 'true') throw new Error('CI=true but pnpm is not on PATH: the pnpm half of the checkout-app test cannot run');
  process.stderr.write('SKIPPED the pnpm install of an app made from the checkout: no pnpm on PATH\n');
}

/** A loopback port where nothing listens (taken, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('an app made by svc create from the checkout', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-checkout-app-'));
    await mkdir(join(dir, 'home'));
    // Nothing of this machine's npm or pnpm settings, caches or stores: a registry nobody answers.
    env = {
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
      HOME: join(dir, 'home'),
      npm_config_registry: `http://127.0.0.1:${await closedPort()}/`,
      npm_config_cache: join(dir, 'npm-cache'),
      npm_config_store_dir: join(dir, 'pnpm-store'),
      npm_config_fetch_retries: '0',
      npm_config_update_notifier: 'false',
      SVC_WATCH: '0',
    };
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('links to the checkout (file: for npm, link: for pnpm), and create --help says how it installs once published', async () => {
    const app = join(dir, 'linked');
    expect((await runSvc(['create', app])).code).toBe(0);
    const pkg = JSON.parse(await readFile(join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; pnpm: { overrides: Record<string, string> } };
    expect(pkg.dependencies).toEqual({ '@svc/server': `file:${SERVER_DIR}` });
    expect(pkg.pnpm.overrides).toEqual({ '@svc/server': `link:${SERVER_DIR}` });
    const help = await runSvc(['create', '--help']);
    expect(help.stdout).toContain('npx @svc/server create <dir>');
    expect(help.stdout).toMatch(/once the packages are published, replace both with "\^<version>"/);
  }, 120_000);

  it('installs with npm without a registry and serves with npm start', async () => {
    const app = join(dir, 'with-npm');
    expect((await runSvc(['create', app])).code).toBe(0);
    const installed = await run('npm', ['install', '--no-audit', '--no-fund'], app, env as Record<string, string>);
    expect(installed.code, installed.out).toBe(0);
    const server = await startCommand('npm', ['start', '--', '--port', '0'], app, env);
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/todos`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual([]);
    } finally {
      await server.stop();
    }
  }, 120_000);

  it.runIf(hasPnpm)('installs with pnpm without a registry and serves with pnpm start', async () => {
    const app = join(dir, 'with-pnpm');
    expect((await runSvc(['create', app])).code).toBe(0);
    const installed = await run('pnpm', ['install'], app, env as Record<string, string>);
    expect(installed.code, installed.out).toBe(0);
    const server = await startCommand('pnpm', ['start', '--port', '0'], app, env);
    try {
      expect((await fetch(`http://127.0.0.1:${server.port}/todos`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  }, 120_000);
});
