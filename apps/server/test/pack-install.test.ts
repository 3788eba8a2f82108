import { spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGES, PATH, REPO, packAll, run, tarballDependencies } from './packedPackages.js';

// Issue 15 (2): every published package is packed the way a release publishes it (pnpm pack,
// which turns workspace: ranges into versions), the tarballs are installed into an empty folder
// with npm, and an app runs from them: what a user gets from the registry.

const hasPnpm = spawnSync('pnpm', ['--version'], { env: { ...process.env, PATH } }).status === 0;
if (!hasPnpm) {
  if (process.env.CI === 'true') throw new Error('CI=true but pnpm is not on PATH: the pack-and-install test cannot run');
  process.stderr.write('SKIPPED the pack-and-install test: no pnpm on PATH\n');
}

describe.skipIf(!hasPnpm)('the packed packages install with npm and run an app', () => {
  let dir: string;
  let tarballs: string[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-pack-'));
    tarballs = await packAll(join(dir, 'tarballs'));
    const deps = tarballDependencies(tarballs, './tarballs');
    // overrides: the packages' own ranges on each other (^0.1.0) resolve to these tarballs too.
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'packed-svc', private: true, type: 'module', dependencies: deps, overrides: deps }, null, 2));
    const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], dir);
    if (installed.code !== 0) throw new Error(`npm install of the tarballs failed:\n${installed.out}`);
  }, 240_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('every package is packed with versions instead of workspace: ranges, a README and a LICENSE', async () => {
    expect(tarballs).toHaveLength(PACKAGES.length);
    for (const file of tarballs) {
      const list = spawnSync('tar', ['-tzf', join(dir, 'tarballs', file)], { encoding: 'utf8' }).stdout.split('\n');
      expect(list, file).toEqual(expect.arrayContaining(['package/package.json', 'package/README.md', 'package/LICENSE']));
      const manifest = spawnSync('tar', ['-xzOf', join(dir, 'tarballs', file), 'package/package.json'], { encoding: 'utf8' }).stdout;
      expect(manifest, file).not.toContain('workspace:');
    }
  });

  it('svc from the installed packages creates an app and serves it, event scripts included', async () => {
    const svcBin = join(dir, 'node_modules', '@svc', 'server', 'bin', 'svc.js');
    expect((await run(process.execPath, [svcBin, 'create', 'app'], dir)).code).toBe(0);
    await writeFile(join(dir, 'app', 'resources', 'todos', 'post.js'), "this.seenByScript = true;\n");
    const server = spawn(process.execPath, [svcBin, 'app', '--port', '0'], { cwd: dir, env: { ...process.env, PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`no start in 20 s:\n${out}`)), 20_000);
        const read = (d: Buffer) => {
          out += d.toString();
          const m = /listening on port (\d+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        };
        server.stdout.on('data', read);
        server.stderr.on('data', read);
        server.on('exit', () => reject(new Error(`svc exited:\n${out}`)));
      });
      // As root: the collections `svc create` makes need a login to create (their default rules).
      const res = await fetch(`http://127.0.0.1:${port}/todos`, { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': 'development' }, body: JSON.stringify({ title: 'from the tarballs' }) });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ title: 'from the tarballs', seenByScript: true });
      expect((await fetch(`http://127.0.0.1:${port}/svc.js`)).status).toBe(200);
      // The dashboard's built files come with @svc/dashboard.
      const page = await fetch(`http://127.0.0.1:${port}/dashboard/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('app.js');
      const script = await fetch(`http://127.0.0.1:${port}/dashboard/app.js`);
      expect(script.status).toBe(200);
      expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    } finally {
      server.kill('SIGTERM');
    }
  }, 60_000);

  it('@svc/client installs alone and type-checks in a strict front end (bundler and nodenext), without @svc/core', async () => {
    const front = join(dir, 'front');
    await mkdir(front);
    const client = tarballs.find((f) => f.startsWith('svc-client-')) as string;
    await writeFile(join(front, 'package.json'), JSON.stringify({ name: 'front', private: true, type: 'module', dependencies: { '@svc/client': `file:../tarballs/${client}` } }));
    const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], front);
    expect(installed.code, installed.out).toBe(0);
    expect(await readdir(join(front, 'node_modules', '@svc'))).toEqual(['client']);
    await writeFile(
      join(front, 'main.ts'),
      [
        "import { createClient } from '@svc/client';",
        "import type { CollectionDef, SvcClient, SvcErrorBody } from '@svc/client';",
        "import { createClient as fromBrowser } from '@svc/client/browser';",
        'interface Todo { id: string; title: string; done: boolean }',
        'type Types = { resources: { todos: CollectionDef<Todo> } };',
        "const svc: SvcClient<Types> = createClient<Types>('http://127.0.0.1:2403');",
        "export const titles = svc.todos.get({ done: false }).then((list) => list.map((t) => t.title));",
        "export const failed = (e: SvcErrorBody): number => e.statusCode;",
        "export const other = fromBrowser('');",
      ].join('\n'),
    );
    const tsc = join(REPO, 'node_modules', '.bin', 'tsc');
    for (const [module, resolution] of [['esnext', 'bundler'], ['nodenext', 'nodenext']]) {
      const compilerOptions = { noEmit: true, strict: true, skipLibCheck: false, target: 'es2022', lib: ['es2022', 'dom'], module, moduleResolution: resolution, types: [] };
      await writeFile(join(front, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['main.ts'] }));
      const checked = await run(tsc, ['-p', 'tsconfig.json'], front);
      expect(checked.code, `${resolution}: ${checked.out}`).toBe(0);
    }
  }, 120_000);

  it('publint --strict finds nothing in any package; attw finds nothing in @svc/client (ESM-only, Node >= 22.12)', async () => {
    // publint reads the tarballs packed above: what is published. Given a package's folder, it
    // would run its own pnpm pack of it again (about 3 s each, 12 of them) to list the same files.
    for (const file of tarballs) {
      const linted = await run(join(REPO, 'node_modules', '.bin', 'publint'), ['--strict', join(dir, 'tarballs', file)], REPO);
      expect(linted.code, `${file}: ${linted.out}`).toBe(0);
      expect(linted.out, file).toContain('All good!');
    }
    const client = tarballs.find((f) => f.startsWith('svc-client-')) as string;
    const typesChecked = await run(join(REPO, 'node_modules', '.bin', 'attw'), [join(dir, 'tarballs', client), '--profile', 'esm-only'], REPO);
    expect(typesChecked.code, typesChecked.out).toBe(0);
  }, 120_000);

  it('@svc/client imports on its own from the installed packages', async () => {
    const res = await run(process.execPath, ['--input-type=module', '-e', "const m = await import('@svc/client'); console.log(typeof m.createClient);"], dir);
    expect(res.out.trim()).toBe('function');
  });
});
