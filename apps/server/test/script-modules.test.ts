import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryLogger, runApp, writeApp } from './helpers/app.js';
import { runSvc, startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';
import { startApp } from '@svc/server';

// Issue 22: require() in event scripts of the modules app.json scripts.modules names, bundled from
// the app's node_modules; everything else refused. And migrate-deployd naming them.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/deployd-modules-app', import.meta.url));

/** A package in the app's node_modules: name -> { file: source }. */
function pkg(name: string, files: Record<string, string>, main = 'index.js'): Record<string, string | object> {
  const out: Record<string, string | object> = { [`node_modules/${name}/package.json`]: { name, version: '1.0.0', main } };
  for (const [file, source] of Object.entries(files)) out[`node_modules/${name}/${file}`] = source;
  return out;
}

const COLLECTION = { type: 'Collection', properties: { title: { type: 'string' }, out: { type: 'string' } } };

/** Starts an app that should not start; answers why. */
async function startFails(files: Record<string, string | object>): Promise<string> {
  const dir = await writeApp(files);
  try {
    const app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger: memoryLogger() }).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
    if (!(app instanceof Error)) {
      await app.close();
      throw new Error('the app started');
    }
    return app.message;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('require() in event scripts', () => {
  it('a named module (with its own dependencies and files) works; anything else is refused with how to name it', async () => {
    const app = await runApp({
      'app.json': { scripts: { modules: ['greet'] } },
      ...pkg('greet', { 'index.js': `var up = require('upper'); var fmt = require('./fmt'); module.exports = function (n) { return fmt(up(n)); };` }),
      ...pkg('upper', { 'index.js': `module.exports = function (s) { return String(s).toUpperCase(); };` }),
      'node_modules/greet/fmt.js': `module.exports = function (s) { return 'Hello, ' + s + '!'; };`,
      'resources/things/config.json': COLLECTION,
      'resources/things/post.js': `
        if (this.title === 'fs') require('fs');
        else if (this.title === 'node:child_process') require('node:child_process');
        else if (this.title === 'upper') require('upper');
        else this.out = require('greet')(this.title);`,
    });
    try {
      const ok = await app.request('POST', '/things', { title: 'ada' });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ out: 'Hello, ADA!' });
      const fs = await app.request('POST', '/things', { title: 'fs' });
      expect(fs.status).toBe(500);
      expect(JSON.stringify(fs.body)).toContain("module 'fs' is a Node built-in and cannot be used in event scripts");
      const cp = await app.request('POST', '/things', { title: 'node:child_process' });
      expect(JSON.stringify(cp.body)).toContain("module 'node:child_process' is a Node built-in and cannot be used in event scripts");
      // A dependency bundled into greet is not itself allowed.
      const unnamed = await app.request('POST', '/things', { title: 'upper' });
      expect(JSON.stringify(unnamed.body)).toContain("module 'upper' is not allowed: add it to app.json scripts.modules");
    } finally {
      await app.close();
    }
  });

  it('a package with only an ES module entry answers its namespace, frozen', async () => {
    const app = await runApp({
      'app.json': { scripts: { modules: ['esm-only'] } },
      'node_modules/esm-only/package.json': { name: 'esm-only', version: '1.0.0', type: 'module', exports: { '.': { import: './index.js' } } },
      'node_modules/esm-only/index.js': `export function hi(n) { return 'hi ' + n; } export default 42;`,
      'resources/things/config.json': COLLECTION,
      'resources/things/post.js': `var m = require('esm-only'); this.out = m.hi(this.title) + ' ' + m.default + ' ' + (m.hi.leak || 'clean'); m.hi.leak = 'leaked';`,
    });
    try {
      for (let i = 0; i < 2; i++) expect((await app.request('POST', '/things', { title: 'ada' })).body).toMatchObject({ out: 'hi ada 42 clean' });
    } finally {
      await app.close();
    }
  });

  it('a module sees no host: a process of its own, no global require, built-ins not offered refused when used, a frozen realm; its exports are frozen for every run', async () => {
    const app = await runApp({
      'app.json': { scripts: { modules: ['probe'] } },
      ...pkg('probe', {
        'index.js': `var seen = { process: typeof process, env: JSON.stringify(process.env), pid: process.pid, globalRequire: typeof globalThis.require, fetch: typeof fetch };
try { require('child_process').exec('id'); seen.cp = 'ran'; } catch (e) { seen.cp = 'refused'; }
module.exports = { seen: seen, counter: { n: 0 } };`,
      }),
      'resources/things/config.json': COLLECTION,
      'resources/things/post.js': `var p = require('probe'); p.counter.n++; p.injected = 'x'; this.out = JSON.stringify([p.seen, p.counter.n, p.injected]);`,
    });
    try {
      for (let i = 0; i < 2; i++) {
        const res = await app.request('POST', '/things', { title: 'a' });
        // The sandbox's process (nothing of the server's) and fetch (through the outbound guard).
        expect(JSON.parse((res.body as { out: string }).out)).toEqual([{ process: 'object', env: '{"NODE_ENV":"production"}', pid: 0, globalRequire: 'undefined', fetch: 'function', cp: 'refused' }, 0, null]);
      }
    } finally {
      await app.close();
    }
  });

  it('refuses to start on a module that is a built-in, not installed, not a package name, or outside the app folder', async () => {
    expect(await startFails({ 'app.json': { scripts: { modules: ['fs'] } } })).toContain("module 'fs' is a Node built-in and cannot be used in event scripts");
    expect(await startFails({ 'app.json': { scripts: { modules: ['../secret'] } } })).toContain('is not an npm package name');
    expect(await startFails({ 'app.json': { scripts: { modules: ['nothere'] } } })).toContain("module 'nothere' is not installed in the app folder's node_modules (run npm install nothere in the app folder)");
    // A package that reaches out with ../ , and a link out of the app folder.
    const outside = await mkdtemp(join(tmpdir(), 'svc-outside-'));
    try {
      await writeFile(join(outside, 'secret.js'), `module.exports = 'secret';`);
      const escapes = await startFails({
        'app.json': { scripts: { modules: ['sneaky'] } },
        ...pkg('sneaky', { 'index.js': `module.exports = require(${JSON.stringify(join(outside, 'secret.js'))}) + require('../../../../../../../../..${join(outside, 'secret.js')}');` }),
      });
      expect(escapes).toContain("module 'sneaky' cannot be bundled for event scripts");
      expect(escapes).toContain('outside the app folder');
      const dir = await writeApp({ 'app.json': { scripts: { modules: ['linked'] } } });
      try {
        await mkdir(join(outside, 'linked'));
        await writeFile(join(outside, 'linked', 'package.json'), JSON.stringify({ name: 'linked', version: '1.0.0' }));
        await writeFile(join(outside, 'linked', 'index.js'), `module.exports = 'outside';`);
        await mkdir(join(dir, 'node_modules'));
        await symlink(join(outside, 'linked'), join(dir, 'node_modules', 'linked'), 'dir');
        const err = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', logger: memoryLogger() }).then(
          async (app) => {
            await app.close();
            return 'started';
          },
          (e: unknown) => (e as Error).message,
        );
        expect(err).toContain('outside the app folder');
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      // Packages of parent folders (the repository's node_modules here) are not looked up either.
      expect(await startFails({ 'app.json': { scripts: { modules: ['semver'] } } })).toContain("module 'semver' is not installed in the app folder's node_modules");
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('refuses to start on a module whose top-level code throws, loops forever or needs a built-in', async () => {
    expect(await startFails({ 'app.json': { scripts: { modules: ['thrower'] } }, ...pkg('thrower', { 'index.js': `throw new Error('no config found');` }) })).toMatch(
      /module 'thrower' cannot be loaded for event scripts: it threw: .*no config found/,
    );
    expect(await startFails({ 'app.json': { scripts: { modules: ['looper'], timeoutMs: 100 } }, ...pkg('looper', { 'index.js': `while (true) {}` }) })).toContain(
      "module 'looper' cannot be loaded for event scripts: its top-level code ran longer than 5 times the script time limit (500 ms)",
    );
    expect(await startFails({ 'app.json': { scripts: { modules: ['needsfs'] } }, ...pkg('needsfs', { 'index.js': `module.exports = require('fs').readFileSync('/etc/passwd');` }) })).toContain(
      "module 'needsfs' cannot be loaded for event scripts: it threw: module 'fs' is a Node built-in",
    );
  });
});

async function until(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('development reload of app.json scripts.modules', { timeout: 60_000 }, () => {
  it('a module added to the list is loaded without a restart; one that fails to load keeps the previous version serving', async () => {
    const dir = await writeApp({
      'app.json': { scripts: { modules: ['one'] } },
      ...pkg('one', { 'index.js': `module.exports = 'one';` }),
      ...pkg('two', { 'index.js': `module.exports = 'two';` }),
      ...pkg('broken', { 'index.js': `throw new Error('broken module');` }),
      'resources/things/config.json': COLLECTION,
      'resources/things/post.js': `try { this.out = require('one') + '+' + require('two'); } catch (e) { this.out = e.message; }`,
    });
    let svc: SvcProcess | undefined;
    try {
      svc = await startSvc([dir]);
      const url = svc.url;
      const out = async (): Promise<unknown> => {
        const res = await fetch(`${url}/things`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'x' }) });
        return ((await res.json()) as { out?: unknown }).out;
      };
      expect(await out()).toBe("module 'two' is not allowed: add it to app.json scripts.modules");
      await writeFile(join(dir, 'app.json'), JSON.stringify({ scripts: { modules: ['one', 'two'] } }));
      await until(async () => (await out()) === 'one+two');
      await writeFile(join(dir, 'app.json'), JSON.stringify({ scripts: { modules: ['one', 'two', 'broken'] } }));
      const logs = (): string => (svc as SvcProcess).stdout() + (svc as SvcProcess).stderr();
      await until(async () => /reload failed, still serving the previous version: .*module 'broken' cannot be loaded for event scripts: it threw: .*broken module/.test(logs()));
      expect(await out()).toBe('one+two');
    } finally {
      await svc?.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('svc migrate-deployd: a Deployd app whose scripts require modules, with a Fileupload resource', { timeout: 60_000 }, () => {
  let root: string;
  let app: string;
  let stdout: string;
  let svc: SvcProcess | undefined;

  beforeAll(async () => {
    if (!existsSync(join(REPO, 'packages/type-fileupload/dist/index.js'))) throw new Error('@svc/type-fileupload is not built: run `pnpm build` first');
    root = await mkdtemp(join(tmpdir(), 'svc-deployd-modules-'));
    app = join(root, 'newsroom');
    await cp(FIXTURE, app, { recursive: true });
    // In place: node_modules (with the vendored slugger) moves into the migrated app.
    const result = await runSvc(['migrate-deployd', app]);
    expect(result.code, result.stderr).toBe(0);
    stdout = result.stdout;
  });
  afterAll(async () => {
    await svc?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('names the required packages of package.json in app.json scripts.modules and says what the others cost', async () => {
    expect(stdout).toContain("resources/articles/post.js, resources/files/upload.js: require('slugger'): in package.json: added to app.json scripts.modules");
    expect(stdout).toContain('app.json: scripts.modules ["slugger"]');
    expect(stdout).toContain("resources/articles/put.js: require('moment'): not in package.json, so not mapped; the script fails where it requires it (the request answers 500) (npm install moment in the app folder, then add \"moment\" to app.json scripts.modules)");
    expect(stdout).toContain("resources/articles/delete.js: require('fs'): a Node built-in: no host access from svc scripts");
    expect(stdout).toContain('package.json: dpd-fileupload -> @svc/type-fileupload');
    expect(JSON.parse(await readFile(join(app, 'app.json'), 'utf8'))).toEqual({ scripts: { modules: ['slugger'] } });
  });

  it('the migrated app starts; its scripts use the module and uploads work', async () => {
    // What `npm install` does for the new dependencies: the workspace's packages.
    await mkdir(join(app, 'node_modules', '@svc'), { recursive: true });
    for (const [name, dir] of [['server', 'apps/server'], ['type-fileupload', 'packages/type-fileupload']] as const) {
      await symlink(join(REPO, dir), join(app, 'node_modules', '@svc', name), 'dir');
    }
    svc = await startSvc([app]);
    const post = await fetch(`${svc.url}/articles`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'Grüße & Café' }) });
    expect(post.status).toBe(200);
    const article = (await post.json()) as { id: string; slug: string };
    expect(article.slug).toBe('gruesse-and-cafe');
    // moment was not installed: that event fails, as the report said.
    const put = await fetch(`${svc.url}/articles/${article.id}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ published: '2026-11-25' }) });
    expect(put.status).toBe(500);

    const data = new FormData();
    data.append('file', new Blob(['hello'], { type: 'text/plain' }), 'Read Me.txt');
    const upload = await fetch(`${svc.url}/files`, { method: 'POST', body: data });
    expect(upload.status).toBe(200);
    const [rec] = (await upload.json()) as Record<string, unknown>[];
    expect(rec).toMatchObject({ filename: 'Read Me.txt', filesize: 5 });
    expect(await readFile(join(app, 'upload', 'Read Me.txt'), 'utf8')).toBe('hello');
    // On Upload asks the module: a name it makes nothing of is refused.
    const nameless = new FormData();
    nameless.append('file', new Blob(['x']), '***');
    const refused = await fetch(`${svc.url}/files`, { method: 'POST', body: nameless });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('the file name needs a letter or a digit');
    const empty = new FormData();
    empty.append('file', new Blob([]), 'empty.txt');
    expect((await fetch(`${svc.url}/files`, { method: 'POST', body: empty })).status).toBe(400);
  });
});

describe('svc migrate-deployd: third-party modules it cannot map', () => {
  it('says what the app loses for a resource type without an svc package and for requires it cannot name', async () => {
    const dir = await writeApp({
      'app.dpd': '',
      'package.json': { dependencies: { deployd: '^1.2.0', 'dpd-mailchimp': '^1.0.0' } },
      'resources/news/config.json': { type: 'Mailchimp' },
      'resources/items/config.json': { type: 'Collection', properties: {} },
      'resources/items/post.js': `var helpers = require('./helpers'); var dpd = require('deployd');`,
    });
    try {
      const result = await runSvc(['migrate-deployd', dir, '--dry-run']);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('package.json: dpd-mailchimp -> no equivalent');
      expect(result.stdout).toContain('resources/news: type Mailchimp: no equivalent among svc packages: svc does not start while /news has this type (the app loses that resource and its events');
      expect(result.stdout).toContain("resources/items/post.js: require('./helpers'): a file, not a package");
      expect(result.stdout).toContain("resources/items/post.js: require('deployd'): Deployd's own module: no equivalent in svc scripts");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
