import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Logger } from '@svc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startApp } from '../src/index.js';
import type { RunningApp } from '../src/index.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const fixture = join(here, 'fixtures/out-of-tree-type');
const repo = join(here, '../../..');

let dir: string;
let app: string;
const running: RunningApp[] = [];
const logs: string[] = [];
const logger: Logger = {
  info: (m) => logs.push(`info ${m}`),
  warn: (m) => logs.push(`warn ${m}`),
  error: (m) => logs.push(`error ${m}`),
};

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-types-'));
  app = join(dir, 'app');
  await cp(fixture, dir, { recursive: true });
  logs.length = 0;
});
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
  await rm(dir, { recursive: true, force: true });
});

/** Links a workspace package into the app's node_modules, as a package manager would install it. */
async function linkWorkspacePackage(name: string, from: string): Promise<void> {
  const target = join(app, 'node_modules', name);
  await mkdir(dirname(target), { recursive: true });
  await symlink(from, target, 'dir');
}

/**
 * Installs the app's `file:` dependency the way a user would (`npm install`, offline: nothing is
 * fetched), copying the package into node_modules (--install-links) so that it resolves its peer
 * @svc/core from the app, like a published package. @svc/core is the workspace's build.
 */
async function install(): Promise<void> {
  if (!existsSync(join(repo, 'packages/core/dist/index.js'))) throw new Error('packages/core/dist is missing: run `pnpm build` first');
  try {
    await run('npm', ['install', '--no-audit', '--no-fund', '--offline', '--install-links', '--legacy-peer-deps', '--ignore-scripts', '--no-package-lock'], { cwd: app, timeout: 60_000 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // No npm on this machine (a bare Node): copy the package where npm would have put it.
    await cp(join(dir, 'svc-type-greeting'), join(app, 'node_modules/svc-type-greeting'), { recursive: true });
  }
  await linkWorkspacePackage('@svc/core', join(repo, 'packages/core'));
}

async function start(env: 'development' | 'production' = 'development'): Promise<RunningApp> {
  const r = await startApp({ appDir: app, port: 0, host: '127.0.0.1', env, logger });
  running.push(r);
  return r;
}

async function get(r: RunningApp, path: string, init: RequestInit = {}): Promise<{ status: number; body: unknown; headers: Headers }> {
  const res = await fetch(`${r.url}${path}`, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as unknown) : undefined };
}

async function writeConfig(resource: string, config: Record<string, unknown>): Promise<void> {
  await mkdir(join(app, 'resources', resource), { recursive: true });
  await writeFile(join(app, 'resources', resource, 'config.json'), JSON.stringify(config));
}

async function editType(from: string, to: string): Promise<void> {
  const file = join(app, 'node_modules/svc-type-greeting/index.js');
  const source = await readFile(file, 'utf8');
  if (!source.includes(from)) throw new Error(`fixture type has no ${from}`);
  await writeFile(file, source.replace(from, to));
}

describe('an out-of-tree resource type installed with a file: dependency', () => {
  it('loads from the app package.json, gets its validated settings and defaults, and answers requests', async () => {
    await install();
    expect(existsSync(join(app, 'node_modules/svc-type-greeting/index.js'))).toBe(true);
    const r = await start();
    expect(await get(r, '/hello/Ada')).toMatchObject({ status: 200, body: { message: 'Hello, Ada!', resource: '/hello', greeted: 1 } });
    expect(await get(r, '/hello')).toMatchObject({ status: 200, body: { message: 'Hello, world!', greeted: 2 } });
    expect(await get(r, '/hello-shout/bob')).toMatchObject({ status: 200, body: { message: 'HEY, BOB?', resource: '/hello-shout' } });
    const post = await get(r, '/hello/Ada', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    expect(post.body).toEqual({ status: 405, statusCode: 405, message: 'hello only greets on GET' });
    expect(logs).toContain('info hello: greeting ready');
    await r.close();
    running.length = 0;
    expect(logs).toContain('info hello: greeted 2 times');
  });

  it("runs the type's event script (get.js): setResult() changes the answer, cancel() refuses", async () => {
    await install();
    await writeFile(join(app, 'resources/hello/get.js'), "cancelIf(who === 'nobody', 'who?', 404);\nsetResult(message + ' Welcome back.');\n");
    const r = await start();
    expect((await get(r, '/hello/Ada')).body).toMatchObject({ message: 'Hello, Ada! Welcome back.' });
    expect(await get(r, '/hello/nobody')).toMatchObject({ status: 404, body: { status: 404, message: 'who?' } });
    expect((await get(r, '/hello-shout/bob')).body).toMatchObject({ message: 'HEY, BOB?' });
  });

  it('a config naming a type that is not installed stops start-up', async () => {
    await install();
    await writeConfig('mailer', { type: 'Mailgun', domain: 'example.com' });
    await expect(start()).rejects.toThrow('resource mailer: type Mailgun is not installed; add its package');
  });

  it('a package listed in package.json but not installed stops start-up', async () => {
    await expect(start()).rejects.toThrow("package svc-type-greeting is listed in package.json but not installed; run your package manager's install");
  });

  it.each([
    { name: 'a missing required setting', config: { type: 'Greeting' }, error: 'resource hello: setting greeting is required (string)' },
    { name: 'a setting of the wrong type', config: { type: 'Greeting', greeting: 42 }, error: 'resource hello: setting greeting must be a string, not 42' },
    { name: 'a value outside the enum', config: { type: 'Greeting', greeting: 'Hi', punctuation: ';' }, error: 'resource hello: setting punctuation must be one of !, ., ?' },
    { name: 'a boolean given as a string', config: { type: 'Greeting', greeting: 'Hi', shout: 'yes' }, error: 'resource hello: setting shout must be a boolean, not "yes"' },
  ])('bad settings stop start-up naming the field: $name', async ({ config, error }) => {
    await install();
    await writeConfig('hello', config);
    await expect(start()).rejects.toThrow(error);
  });

  it('a core range that excludes the running @svc/core stops start-up', async () => {
    await install();
    await editType("core: '^0.1.0'", "core: '^99.0.0'");
    const version = (JSON.parse(await readFile(join(repo, 'packages/core/package.json'), 'utf8')) as { version: string }).version;
    await expect(start()).rejects.toThrow(`svc-type-greeting: resource type Greeting supports @svc/core ^99.0.0, but this server runs ${version}`);
  });

  it('a declared entry that does not default-export a resource type stops start-up', async () => {
    await install();
    await editType('export default defineResourceType(', 'export const greeting = defineResourceType(');
    await expect(start()).rejects.toThrow('svc-type-greeting: ./index.js does not default-export a defineResourceType(...) value');
  });

  it("unknown config keys of a custom resource are ignored with a warning; Deployd's typeLabel, order and path quietly", async () => {
    await install();
    await writeConfig('hello', { type: 'Greeting', greeting: 'Hi', typeLabel: 'Hello', order: 3, path: '/hello', colour: 'red' });
    const r = await start();
    expect((await get(r, '/hello/x')).body).toMatchObject({ message: 'Hi, x!' });
    expect(logs).toContain('warn resource hello: ignoring config keys colour');
    expect(logs.filter((line) => line.includes('ignoring') && /typeLabel|order|path/.test(line))).toEqual([]);
  });
});

describe('the first-party type packages load the same way (svc.resourceTypes in their package.json)', () => {
  it('@svc/type-event and @svc/type-email are found among the app dependencies', async () => {
    for (const pkg of ['core', 'type-event', 'type-email']) {
      if (!existsSync(join(repo, `packages/${pkg}/dist/index.js`))) throw new Error(`packages/${pkg}/dist is missing: run \`pnpm build\` first`);
    }
    await rm(join(app, 'resources'), { recursive: true });
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'first-party', private: true, dependencies: { '@svc/type-event': '^0.1.0', '@svc/type-email': '^0.1.0' } }));
    await linkWorkspacePackage('@svc/core', join(repo, 'packages/core'));
    await linkWorkspacePackage('@svc/type-event', join(repo, 'packages/type-event'));
    await linkWorkspacePackage('@svc/type-email', join(repo, 'packages/type-email'));
    await writeConfig('ping', { type: 'Event' });
    await writeConfig('mail', { type: 'Email', host: '127.0.0.1', productionOnly: true });
    const r = await start();
    const ping = await get(r, '/ping', { method: 'PUT' });
    expect(ping.status).toBe(404);
    const mail = await get(r, '/mail', { method: 'POST', headers: { 'content-type': 'application/json', 'svc-ssh-key': 'dev' }, body: JSON.stringify({ from: 'a@example.com', to: 'b@example.com', text: 'x' }) });
    expect(mail).toMatchObject({ status: 200, body: { sent: false } });
  });
});
