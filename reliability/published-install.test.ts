import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium } from '../apps/server/test/browser-helpers.js';
import { startCommand } from '../apps/server/test/helpers/startCommand.js';
import type { Started } from '../apps/server/test/helpers/startCommand.js';
import { PACKAGES, PATH, REPO } from '../apps/server/test/packedPackages.js';
import { buildImage, parseDockerfile, startImage, stopImage } from './deployFiles.js';
import { startRegistry } from './localRegistry.js';
import type { LocalRegistry } from './localRegistry.js';
import { releaseFromCopy } from './releaseCopy.js';
import type { Release } from './releaseCopy.js';

// Issue 40: the published form, as a user gets it. A local npm registry (Verdaccio) gets every
// public package through the release path a maintainer uses (releaseCopy.ts: changeset version and
// publish-packages in a throwaway copy); then, in folders under a home of their own whose npm and
// pnpm see only that registry (other packages come through it from the registry this machine's
// npm uses; the @svc scope only from what was published), a user types the README's commands:
// npx @svc/server create, npm install / pnpm install, npm start; runs a folder with npx; adds
// resource types (the first-party Event and a third-party one compiled with strict tsc against the
// published @svc/core); builds a Vite front end with @svc/client and `svc types`; runs the
// Dockerfile's steps; migrates a Deployd app. Nothing here reads the checkout but the release copy.

const has = (command: string, args: string[]) => spawnSync(command, args, { env: { ...process.env, PATH } }).status === 0;
const hasPnpm = has('pnpm', ['--version']);
const hasGit = has('git', ['--version']);
const runnable = hasPnpm && hasGit && chromiumAvailable('the published-install test');
if (!hasPnpm || !hasGit) {
  const why = `the published-install test needs ${hasPnpm ? 'git' : 'pnpm'} on PATH`;
  if (process.env.CI === 'true') throw new Error(`CI=true but ${why}`);
  process.stderr.write(`SKIPPED ${why}\n`);
}

/** The registry this machine's npm uses (the local registry's upstream for everything but @svc). */
function upstreamRegistry(): string {
  const got = spawnSync('npm', ['config', 'get', 'registry'], { env: { ...process.env, PATH }, encoding: 'utf8' });
  const url = got.stdout.trim();
  if (got.status !== 0 || !/^https?:\/\//.test(url)) throw new Error(`npm config get registry answered ${JSON.stringify(got.stdout)} ${got.stderr}`);
  return url.endsWith('/') ? url : `${url}/`;
}

/** The machine's PATH without the checkout's node_modules/.bin folders, the test's node first. */
const USER_PATH = [dirname(process.execPath), ...(process.env.PATH ?? '').split(delimiter).filter((p) => p && !p.startsWith(REPO))].join(delimiter);

function nodeHeaders(): Record<string, string> {
  // Native modules that must compile (none should: isolated-vm and bcrypt ship prebuilt binaries)
  // would build against this node's headers, as .ci/run sets for the checkout.
  const home = dirname(dirname(process.execPath));
  return existsSync(join(home, 'include', 'node', 'node_version.h')) ? { npm_config_nodedir: home } : {};
}

const ROOT_KEY = `k${'0123456789abcdef'.repeat(3)}`;

/** CPU seconds (user + system) a process has used so far, from /proc (0 where there is none). */
function processCpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after "pid (comm) ".
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** The children's user + system CPU seconds from the last line bash's `times` printed. */
function childrenCpu(out: string): number {
  const last = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(out.trim());
  return last ? Number(last[1]) * 60 + Number(last[2]) + Number(last[3]) * 60 + Number(last[4]) : NaN;
}

/** The checkout's changed and new files, as git lists them. */
function gitStatus(): string {
  return spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: REPO, encoding: 'utf8' }).stdout;
}

describe.runIf(runnable)('the published packages, from a local registry, as a user installs and runs them', () => {
  let dir: string;
  let registry: LocalRegistry;
  let release: Release;
  let user: string;
  let env: Record<string, string>;
  let browser: Browser | undefined;
  let checkoutStatus: string;
  const running: Started[] = [];

  /** Runs a command as the user: only `env`, never the test's own environment. */
  function sh(command: string, args: string[], cwd: string, extra: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
    return new Promise((resolve) => {
      const child = spawn(command, args, { cwd, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.on('error', (err) => resolve({ code: -1, out: `${out}${String(err)}` }));
      child.on('exit', (code) => resolve({ code, out }));
    });
  }
  async function ok(command: string, args: string[], cwd: string, extra: Record<string, string> = {}): Promise<string> {
    const done = await sh(command, args, cwd, extra);
    if (done.code !== 0) throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited with ${done.code}:\n${done.out}`);
    return done.out;
  }
  async function serve(command: string, args: string[], cwd: string, extra: Record<string, string> = {}): Promise<{ url: string; server: Started }> {
    const server = await startCommand(command, args, cwd, { ...env, SVC_WATCH: '0', ...extra }, 120_000);
    running.push(server);
    return { url: `http://127.0.0.1:${server.port}`, server };
  }
  async function stopServer(server: Started): Promise<void> {
    running.splice(running.indexOf(server), 1);
    await server.stop();
  }
  async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown; headers: Headers }> {
    const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined, headers: res.headers };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-published-'));
    checkoutStatus = gitStatus();
    registry = await startRegistry(join(dir, 'registry'), upstreamRegistry());
    release = await releaseFromCopy(join(dir, 'release', 'svc'), registry.url, registry.token);
    // The user: a home of their own (no ~/.npmrc of this machine), npm and pnpm pointed at the
    // local registry, caches that start empty.
    const home = join(dir, 'home');
    user = join(dir, 'user');
    await mkdir(home, { recursive: true });
    await mkdir(user, { recursive: true });
    // (pnpm's store is under this home too: ~/.local/share/pnpm.)
    await writeFile(join(home, '.npmrc'), [`registry=${registry.url}`, 'fund=false', 'audit=false', 'update-notifier=false', ''].join('\n'));
    env = { PATH: USER_PATH, HOME: home, TMPDIR: tmpdir(), ...nodeHeaders() };
  }, 900_000);
  afterAll(async () => {
    await browser?.close();
    for (const server of running.splice(0)) await server.stop();
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the release versions every package, writes the changelogs and publishes them all with version ranges between them', async () => {
    expect(Object.keys(release.versions).sort()).toHaveLength(PACKAGES.length);
    expect(release.serverChangelog).toMatch(/^# @svc\/server\n/);
    for (const [name, version] of Object.entries(release.versions)) {
      const doc = await json(`${registry.url}${name.replace('/', '%2f')}`);
      expect(doc.status, name).toBe(200);
      const meta = doc.body as { 'dist-tags': { latest: string }; versions: Record<string, { dependencies?: Record<string, string> }> };
      expect(meta['dist-tags'].latest, name).toBe(version);
      expect(JSON.stringify(meta.versions[version]?.dependencies ?? {}), name).not.toContain('workspace:');
    }
    // Nothing of the checkout changed: versions and changelogs exist only in the copy.
    expect(gitStatus()).toBe(checkoutStatus);
  });

  it('npx @svc/server create my-app; npm install; npm start: sign-up, login, a rule, a live query and the dashboard in chromium', async () => {
    const made = await ok('npx', ['@svc/server', 'create', 'my-app'], user);
    expect(made).toContain('created my-app');
    const app = join(user, 'my-app');
    const pkg = JSON.parse(await readFile(join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies).toEqual({ '@svc/server': `^${release.versions['@svc/server']}` });
    await ok('npm', ['install'], app);
    // The installed server is the published one, not a link to anything.
    const installed = join(app, 'node_modules', '@svc', 'server');
    expect(lstatSync(installed).isSymbolicLink()).toBe(false);
    expect(JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')).version).toBe(release.versions['@svc/server']);

    const { url, server } = await serve('npm', ['start', '--', '--port', '0'], app);
    const ann = (await json(`${url}/users`, { method: 'POST', body: JSON.stringify({ username: 'ann', password: 'pw-ann-12' }) })).body as { id: string };
    expect(ann.id).toMatch(/^[0-9a-f]{16}$/);
    const login = await fetch(`${url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ann', password: 'pw-ann-12' }) });
    expect(login.status).toBe(200);
    const cookie = (login.headers.getSetCookie().find((c) => c.startsWith('sid=')) ?? '').split(';')[0] as string;
    // The scaffolded rules: no create without a login, none in another user's name.
    expect((await json(`${url}/todos`, { method: 'POST', body: JSON.stringify({ title: 'anonymous' }) })).status).toBe(403);
    expect((await json(`${url}/todos`, { method: 'POST', headers: { cookie }, body: JSON.stringify({ title: 'forged', owner: 'someone-else' }) })).status).toBe(403);

    browser = await launchChromium();
    const page = await browser.newPage();
    page.setDefaultTimeout(30_000);
    await page.goto(`${url}/`);
    await page.addScriptTag({ url: '/svc.js' });
    await page.evaluate(() => {
      const g = globalThis as unknown as { seen: string[]; svc: { todos: { subscribe(q: object, fn: (event: { type: string }, todos: { title: string }[]) => void): unknown } } };
      g.seen = [];
      g.svc.todos.subscribe({}, (event, todos) => g.seen.push(`${event.type}:${todos.map((t) => t.title).join(',')}`));
    });
    await page.waitForFunction(() => (globalThis as unknown as { seen: string[] }).seen.length > 0);
    const made1 = await json(`${url}/todos`, { method: 'POST', headers: { cookie }, body: JSON.stringify({ title: 'from the registry', owner: ann.id }) });
    expect(made1.status).toBe(200);
    await page.waitForFunction(() => (globalThis as unknown as { seen: string[] }).seen.some((s) => s.startsWith('create:') && s.includes('from the registry')));

    // The dashboard ships in @svc/dashboard: its page lists the app's resources.
    await page.goto(`${url}/dashboard/`);
    await page.waitForSelector('.res:has-text("todos")');
    await page.waitForSelector('.res:has-text("users")');
    await page.close();
    await stopServer(server);
  }, 600_000);

  it('from an empty folder to a running app with a warm npm cache: create, install, start (time printed)', async () => {
    const folder = join(user, 'quick');
    await mkdir(folder);
    const registryCpu = processCpuSeconds(registry.pid);
    const started = performance.now();
    // The README's commands; `times` adds what they cost in CPU, which a loaded machine does not inflate.
    const out = await ok('bash', ['-c', 'npx @svc/server create app && cd app && npm install; status=$?; times; exit $status'], folder);
    const installed = performance.now();
    const { url, server } = await serve('npm', ['start', '--', '--port', '0'], join(folder, 'app'));
    const seconds = (performance.now() - started) / 1000;
    // Reported, not asserted (a loaded machine runs 2-3x slower): issue 40 asks for under 60 s.
    process.stdout.write(
      `[published-install] empty folder to a running app, warm npm cache: ${seconds.toFixed(1)} s (create + install ${((installed - started) / 1000).toFixed(1)} s, start ${((performance.now() - installed) / 1000).toFixed(1)} s); CPU: npx and npm ${childrenCpu(out).toFixed(1)} s, the registry ${(processCpuSeconds(registry.pid) - registryCpu).toFixed(1)} s; load average ${loadavg()[0]?.toFixed(1)}\n`,
    );
    expect((await fetch(`${url}/todos`)).status).toBe(200);
    await stopServer(server);
  }, 300_000);

  it('the same app installs with pnpm and starts with pnpm start', async () => {
    await ok('npx', ['@svc/server', 'create', 'with-pnpm'], user);
    const app = join(user, 'with-pnpm');
    await ok('pnpm', ['install'], app);
    expect(existsSync(join(app, 'pnpm-lock.yaml'))).toBe(true);
    const { url, server } = await serve('pnpm', ['start', '--port', '0'], app);
    expect((await json(`${url}/users`, { method: 'POST', body: JSON.stringify({ username: 'bo', password: 'pw-bo-1234' }) })).status).toBe(200);
    expect((await fetch(`${url}/dashboard/`)).status).toBe(200);
    await stopServer(server);
  }, 300_000);

  it('an existing app folder runs with one command: npx @svc/server <dir>', async () => {
    const app = join(user, 'existing');
    await mkdir(join(app, 'resources', 'notes'), { recursive: true });
    await writeFile(join(app, 'resources', 'notes', 'config.json'), JSON.stringify({ type: 'Collection', properties: { text: { type: 'string', required: true } } }));
    const { url, server } = await serve('npx', ['@svc/server', 'existing', '--port', '0'], user);
    const made = await json(`${url}/notes`, { method: 'POST', body: JSON.stringify({ text: 'no install needed' }) });
    expect(made.status).toBe(200);
    expect((await json(`${url}/notes`)).body).toEqual([made.body]);
    await stopServer(server);
  }, 300_000);

  it('resource types: @svc/type-event and a third-party type compiled by strict tsc against the published @svc/core', async () => {
    const core = release.versions['@svc/core'] as string;
    // A third party's package, in TypeScript, written as docs/resource-types.md says.
    const typePkg = join(user, 'svc-type-hello');
    await mkdir(join(typePkg, 'src'), { recursive: true });
    await writeFile(
      join(typePkg, 'package.json'),
      JSON.stringify(
        {
          name: 'svc-type-hello',
          version: '1.0.0',
          type: 'module',
          exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' }, './package.json': './package.json' },
          files: ['dist'],
          svc: { resourceTypes: ['./dist/index.js'] },
          peerDependencies: { '@svc/core': `^${core}` },
          devDependencies: { '@svc/core': `^${core}`, '@types/node': '^24', typescript: '~5.9.3' },
        },
        null,
        2,
      ),
    );
    await writeFile(
      join(typePkg, 'src', 'index.ts'),
      [
        "import { SvcError, coreRangeOf, defineResourceType } from '@svc/core';",
        '',
        'export default defineResourceType({',
        "  name: 'Hello',",
        '  core: coreRangeOf(import.meta.url),',
        "  settings: { greeting: { type: 'string', required: true, description: 'The word to greet with' } },",
        '  create(context) {',
        '    const greeting = String(context.settings.greeting);',
        '    return {',
        '      async handle(ctx) {',
        "        if (ctx.method !== 'GET') throw new SvcError('METHOD_NOT_ALLOWED', 'only GET');",
        "        const who: string = ctx.parts[0] ?? 'world';",
        '        return { status: 200, body: { message: `${greeting}, ${who}` } };',
        '      },',
        '    };',
        '  },',
        '});',
        '',
      ].join('\n'),
    );
    const compilerOptions = { strict: true, noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true, skipLibCheck: false, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', declaration: true, outDir: 'dist', rootDir: 'src', types: ['node'] };
    await writeFile(join(typePkg, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['src'] }, null, 2));
    await ok('npm', ['install'], typePkg);
    const compiled = await sh('npx', ['tsc', '-p', 'tsconfig.json'], typePkg);
    expect(compiled.code, compiled.out).toBe(0);
    const packed = (await ok('npm', ['pack', '--silent'], typePkg)).trim().split('\n').at(-1) as string;

    // Added to an app that `npx @svc/server create` made and npm installed (the empty-folder case's), as a
    // user adds types to the app they run: the install below adds them to its node_modules.
    const app = join(user, 'quick', 'app');
    await cp(join(typePkg, packed), join(app, packed));
    // The tools that type-check the app's own code below, declared as the app's dev dependencies
    // (what `npm install --save-dev typescript@~5.9.3 @types/node@^24 @svc/core@^<core>` writes),
    // so that the one install that adds the two resource types installs them too.
    const appPkgFile = join(app, 'package.json');
    const appPkg = JSON.parse(await readFile(appPkgFile, 'utf8')) as Record<string, unknown>;
    await writeFile(appPkgFile, JSON.stringify({ ...appPkg, devDependencies: { '@svc/core': `^${core}`, '@types/node': '^24', typescript: '~5.9.3' } }, null, 2));
    await ok('npm', ['install', '@svc/type-event', `./${packed}`], app);
    const appDeps = (JSON.parse(await readFile(appPkgFile, 'utf8')) as { dependencies: Record<string, string> }).dependencies;
    expect(Object.keys(appDeps).sort()).toEqual(['@svc/server', '@svc/type-event', 'svc-type-hello']);
    await mkdir(join(app, 'resources', 'hello'), { recursive: true });
    await writeFile(join(app, 'resources', 'hello', 'config.json'), JSON.stringify({ type: 'Hello', greeting: 'Hi' }));
    await mkdir(join(app, 'resources', 'tick'), { recursive: true });
    await writeFile(join(app, 'resources', 'tick', 'config.json'), JSON.stringify({ type: 'Event' }));
    await writeFile(join(app, 'resources', 'tick', 'get.js'), "setResult({ tick: query.n * 2 });\n");
    // The app's own code that imports the packages, type-checked too: @svc/type-event's and
    // @svc/core's published types under strict tsc (core's types use Node's: @types/node).
    await writeFile(join(app, 'check.ts'), ["import eventType from '@svc/type-event';", "import { isResourceType } from '@svc/core';", 'export const ok: boolean = isResourceType(eventType);', ''].join('\n'));
    await writeFile(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'] }, files: ['check.ts'] }));
    const appChecked = await sh('npx', ['tsc', '-p', 'tsconfig.json'], app);
    expect(appChecked.code, appChecked.out).toBe(0);

    const { url, server } = await serve('npm', ['start', '--', '--port', '0'], app);
    expect((await json(`${url}/hello/ann`)).body).toEqual({ message: 'Hi, ann' });
    expect((await json(`${url}/tick?n=21`)).body).toEqual({ tick: 42 });
    await stopServer(server);
  }, 600_000);

  it('a Vite front end builds with the published @svc/client and the app\'s generated types, and reads the app in chromium', async () => {
    const app = join(user, 'my-app');
    const front = join(user, 'front');
    await mkdir(join(front, 'src'), { recursive: true });
    await ok('npm', ['run', 'types', '--', '--out', join(front, 'src', 'svc-types.ts')], app);
    await writeFile(join(front, 'package.json'), JSON.stringify({ name: 'front', private: true, type: 'module' }, null, 2));
    await ok('npm', ['install', `@svc/client@^${release.versions['@svc/client']}`, 'vite@^7', 'typescript@~5.9.3'], front);
    await writeFile(join(front, 'index.html'), '<!doctype html><html><body><p id="out">loading</p><script type="module" src="/src/main.ts"></script></body></html>\n');
    await writeFile(
      join(front, 'src', 'main.ts'),
      [
        "import { createClient } from '@svc/client';",
        "import { resources } from './svc-types';",
        "import type { Todos, Types } from './svc-types';",
        '',
        'const svc = createClient<Types>(location.origin, { resources });',
        'const todos: Todos[] = await svc.todos.get({});',
        "const out = document.querySelector('#out');",
        "if (out) out.textContent = `todos: ${todos.map((t) => t.title).join(', ')}`;",
        '',
      ].join('\n'),
    );
    await writeFile(join(front, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', lib: ['es2022', 'dom'], module: 'esnext', moduleResolution: 'bundler', types: [] }, include: ['src'] }));
    const checked = await sh('npx', ['tsc', '-p', 'tsconfig.json'], front);
    expect(checked.code, checked.out).toBe(0);
    await ok('npx', ['vite', 'build', '--base', './'], front);
    expect(await readdir(join(front, 'dist'))).toEqual(expect.arrayContaining(['index.html', 'assets']));

    // Served from the app's public folder, the built page reads the app.
    await cp(join(front, 'dist'), join(app, 'public', 'front'), { recursive: true });
    const { url, server } = await serve('npm', ['start', '--', '--port', '0'], app);
    browser ??= await launchChromium();
    const page = await browser.newPage();
    await page.goto(`${url}/front/index.html`);
    await page.waitForSelector('#out:has-text("todos: from the registry")', { timeout: 30_000 });
    await page.close();
    await stopServer(server);
  }, 600_000);

  it("docs/deploy/Dockerfile's install and start steps, run without Docker against the registry", async () => {
    // The app of the first case, as a user builds it: installed, so its package-lock.json goes into
    // the deps stage (deploy-files.test.ts builds a created app with none), its data/ and
    // node_modules left out by .dockerignore.
    const app = join(user, 'my-app');
    expect(existsSync(join(app, 'package-lock.json'))).toBe(true);
    await cp(join(REPO, 'docs', 'deploy', 'Dockerfile'), join(app, 'Dockerfile'));
    await cp(join(REPO, 'docs', 'deploy', '.dockerignore'), join(app, '.dockerignore'));
    const stages = parseDockerfile(await readFile(join(app, 'Dockerfile'), 'utf8'));
    // The RUN steps see the user's environment: its home, so npm reads the local registry.
    const image = await buildImage(stages, join(dir, 'image'), app, env);
    const installed = JSON.parse(await readFile(join(image.workdir, 'node_modules', '@svc', 'server', 'package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe(release.versions['@svc/server']);
    const server = await startImage(image, { ...env, PORT: '0', SVC_ROOT_KEYS: ROOT_KEY });
    try {
      expect(server.out()).toMatch(/production/);
      const base = `http://127.0.0.1:${server.port}`;
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      expect((await fetch(`${base}/dashboard/api/app`, { headers: { 'svc-ssh-key': ROOT_KEY } })).status).toBe(200);
    } finally {
      expect(await stopImage(server.child, image.stopSignal)).toBe(0);
    }
  }, 600_000);

  it('a Deployd 1.2 app: npx @svc/server migrate-deployd, npm install, npm start', async () => {
    const dpd = join(user, 'deployd-app');
    await cp(join(REPO, 'apps', 'server', 'test', 'fixtures', 'deployd-app'), dpd, { recursive: true });
    const migrated = await ok('npx', ['@svc/server', 'migrate-deployd', 'deployd-app', '--out', 'migrated'], user);
    expect(migrated).toMatch(/package\.json: deployd -> @svc\/server/);
    const app = join(user, 'migrated');
    const pkg = JSON.parse(await readFile(join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies['@svc/server']).toBe(`^${release.versions['@svc/server']}`);
    await ok('npm', ['install'], app);
    const { url, server } = await serve('npm', ['start', '--', '--port', '0'], app);
    // The Deployd app's own event scripts run: On Post needs a login, and its Event resource counts todos.
    expect((await json(`${url}/todos`, { method: 'POST', body: JSON.stringify({ title: 'anonymous' }) })).status).toBe(401);
    expect((await json(`${url}/stats`)).body).toEqual({ count: 0 });
    await stopServer(server);
  }, 600_000);
});
