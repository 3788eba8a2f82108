import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import type { Logger } from '@svc/core';
import eventType from '@svc/type-event';
import { migrateDeployd, rewriteBareDpd } from '../src/migrateDeployd.js';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';

// Issue 22, items 10 and 11: dpd-event wrote "type": "EventResource" (8 of 36 apps failed to start
// on it alone), and public files hand the dpd object on as a value (`.constant("dpd", dpd)`), which
// the rewrite of `dpd.` / `dpd(` left as it was.

describe('a bare dpd used as a value becomes svc; every other dpd is left alone', () => {
  it.each([
    ['angular.module("app").constant("dpd", dpd);', 'angular.module("app").constant("dpd", svc);'],
    ["app.value('api', dpd)", "app.value('api', svc)"],
    ['var api = dpd;', 'var api = svc;'],
    ['window.api = dpd', 'window.api = svc'],
    ['return dpd;', 'return svc;'],
    ['if (typeof dpd === "undefined") fail();', 'if (typeof svc === "undefined") fail();'],
    ['use([dpd, other]);', 'use([svc, other]);'],
    ['var client = window.x || dpd;', 'var client = window.x || svc;'],
    ['const get = () => dpd;', 'const get = () => svc;'],
    ['x = { api: dpd };', 'x = { api: svc };'],
  ])('%s', (before, after) => {
    expect(rewriteBareDpd(before)).toBe(after);
  });

  it.each([
    ['a string', 'require("dpd-event"); var name = "dpd"; var s = \'(dpd)\';'],
    ['a string holding a value-like dpd', 'alert("see (dpd) and x = dpd;");'],
    ['inside other words', 'var mydpd = 1, dpd_x = 2, $dpd = 3, dpd2 = 4; f(mydpd, dpd_x);'],
    ['a property', 'f(window.dpd); obj.dpd = 1;'],
    ['an object key', 'x = { dpd: 1 }; y = { a: 1, dpd: 2 };'],
    ['a declaration', 'var dpd = window.dpd; let a, dpd = 1;'],
    ['a parameter Angular injects by name', '.controller("Todos", function ($scope, dpd) {'],
    ['a named function parameter', 'function load(dpd) { return 1; }'],
    ['an arrow function parameter', 'const f = (a, dpd) => a;'],
    ['prose', '<p>Written for dpd, the Deployd client (the dpd object).</p>'],
    ['a path or module name', 'import x from "./dpd"; url = "/dpd/x"; a-dpd-b;'],
  ])('%s', (_name, line) => {
    expect(rewriteBareDpd(line)).toBe(line);
  });
});

describe('svc migrate-deployd: EventResource and bare dpd', () => {
  let dir: string | undefined;
  let running: RunningApp | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('maps "EventResource" to "Event" (the rest of config.json as written), rewrites .constant("dpd", dpd), prints each change; the app then serves', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-migrate-names-'));
    const app = join(dir, 'app');
    await mkdir(join(app, 'resources', 'tick'), { recursive: true });
    await mkdir(join(app, 'resources', 'todos'), { recursive: true });
    await mkdir(join(app, 'public'), { recursive: true });
    await writeFile(join(app, 'app.dpd'), '');
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'old', dependencies: { deployd: '^1.2.0', 'dpd-event': '^1.1.2' } }));
    const eventConfig = '{\n\t"type": "EventResource",\n\t"typeLabel": "Event",\n\t"order": 2,\n\t"path": "/tick"\n}';
    await writeFile(join(app, 'resources', 'tick', 'config.json'), eventConfig);
    await writeFile(join(app, 'resources', 'tick', 'put.js'), 'setResult({ put: parts[0] });\n');
    await writeFile(join(app, 'resources', 'tick', 'delete.js'), 'this.deleted = parts[0];\n');
    await writeFile(join(app, 'resources', 'todos', 'config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string', typeLabel: 'string' } } }));
    await writeFile(join(app, 'public', 'app.js'), 'angular.module("app", []).constant("dpd", dpd);\nrequire("dpd-event");\n');
    const printed: string[] = [];
    const report = await migrateDeployd({ dir: app, print: (line) => printed.push(line) });

    expect(printed).toContain("resources/tick/config.json: type EventResource -> Event (Deployd's name of the Event type)");
    expect(printed).toContain('public/app.js:1: angular.module("app", []).constant("dpd", dpd);  ->  angular.module("app", []).constant("dpd", svc);');
    expect(report.modules.some((line) => line.includes('type EventResource'))).toBe(false);
    expect(await readFile(join(app, 'resources', 'tick', 'config.json'), 'utf8')).toBe(eventConfig.replace('EventResource', 'Event'));
    expect(await readFile(join(app, 'public', 'app.js'), 'utf8')).toBe('angular.module("app", []).constant("dpd", svc);\nrequire("dpd-event");\n');

    const logs: string[] = [];
    const logger: Logger = { info: (m) => logs.push(`info ${m}`), warn: (m) => logs.push(`warn ${m}`), error: (m) => logs.push(`error ${m}`) };
    running = await startApp({ appDir: app, port: 0, host: '127.0.0.1', env: 'development', logger, resourceTypes: [eventType] });
    const put = await fetch(`${running.url}/tick/7`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ put: '7' });
    const del = await fetch(`${running.url}/tick/8`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ deleted: '8' });
    const get = await fetch(`${running.url}/tick`);
    expect(get.status).toBe(404);
    expect(await get.json()).toEqual({ status: 404, statusCode: 404, message: 'resource not found' });
    expect(logs.filter((line) => !line.startsWith('info '))).toEqual([]);
  });

  it('a config.json naming the type twice is written anew with only its type changed', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-migrate-names-'));
    const app = join(dir, 'app');
    await mkdir(join(app, 'resources', 'odd'), { recursive: true });
    await writeFile(join(app, 'resources', 'odd', 'config.json'), JSON.stringify({ type: 'EventResource', note: { type: 'EventResource' } }));
    await migrateDeployd({ dir: app, print: () => undefined });
    expect(JSON.parse(await readFile(join(app, 'resources', 'odd', 'config.json'), 'utf8'))).toEqual({ type: 'Event', note: { type: 'EventResource' } });
  });
});

// Issue 38 (12): Deployd loaded a type from node_modules whether package.json declared it or not;
// svc loads only the types of dependencies. A resource of a type svc has as a package gets that
// package in package.json, declared before or not, and the migrated app starts.
describe('svc migrate-deployd: the type packages the resources use', () => {
  const REPO = fileURLToPath(new URL('../../..', import.meta.url));
  let dir: string | undefined;
  let running: RunningApp | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  /** A Deployd app with an EventResource, an Email and a Fileupload resource; `pkg`: its package.json, if any. */
  async function deploydApp(pkg: object | undefined): Promise<string> {
    dir = await mkdtemp(join(tmpdir(), 'svc-migrate-types-'));
    const app = join(dir, 'app');
    const files: Record<string, string> = {
      'app.dpd': '',
      'resources/tick/config.json': JSON.stringify({ type: 'EventResource' }),
      'resources/mail/config.json': JSON.stringify({ type: 'Email', host: '127.0.0.1', port: 2525, ssl: false, defaultFromAddress: 'app@example.com', productionOnly: true }),
      'resources/files/config.json': JSON.stringify({ type: 'Fileupload', directory: 'upload', authorization: false }),
      ...(pkg ? { 'package.json': JSON.stringify(pkg) } : {}),
    };
    for (const [rel, text] of Object.entries(files)) {
      await mkdir(join(app, rel, '..'), { recursive: true });
      await writeFile(join(app, rel), text);
    }
    return app;
  }

  /** What `npm install` gives the migrated app: the workspace's type packages. */
  async function install(app: string): Promise<void> {
    await mkdir(join(app, 'node_modules', '@svc'), { recursive: true });
    for (const name of ['type-event', 'type-email', 'type-fileupload']) await symlink(join(REPO, 'packages', name), join(app, 'node_modules', '@svc', name), 'dir');
  }

  it.each([
    ['declares only deployd', { name: 'old', dependencies: { deployd: '^1.2.0' }, devDependencies: { 'dpd-email': '^0.2.0' } }],
    ['has no package.json', undefined],
  ])('an app that %s gets @svc/type-event, -email and -fileupload as dependencies, and starts', async (_name, pkg) => {
    const app = await deploydApp(pkg);
    const printed: string[] = [];
    await migrateDeployd({ dir: app, print: (line) => printed.push(line), version: '1.2.3' });
    const written = JSON.parse(await readFile(join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies?: Record<string, string> };
    expect(written.dependencies).toMatchObject({ '@svc/type-event': '^1.2.3', '@svc/type-email': '^1.2.3', '@svc/type-fileupload': '^1.2.3' });
    expect(Object.keys(written.devDependencies ?? {})).toEqual([]);
    expect(printed.join('\n')).toMatch(/dependencies\.@svc\/type-event \(type Event of \/tick/);
    expect(printed.join('\n')).toMatch(/dependencies\.@svc\/type-fileupload \(type Fileupload of \/files/);
    await install(app);
    // No resourceTypes given: the types come from the app's package.json, as `svc <app>` loads them.
    running = await startApp({ appDir: app, port: 0, host: '127.0.0.1', env: 'development', logger: silentLogger });
    // The Event resource's own answer to a GET without get.js (no script process: a loaded machine's cold start is another matter).
    const tick = await fetch(`${running.url}/tick/7`);
    expect(await tick.json()).toEqual({ status: 404, statusCode: 404, message: 'resource not found' });
    expect((await fetch(`${running.url}/files`)).status).toBe(200);
  });

  it('a package already declared stays as it was', async () => {
    const app = await deploydApp({ name: 'old', dependencies: { '@svc/type-event': '^0.9.0', 'dpd-fileupload': '^0.0.17', 'dpd-email': '^0.2.0' } });
    await migrateDeployd({ dir: app, print: () => undefined, version: '1.2.3' });
    const written = JSON.parse(await readFile(join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(written.dependencies).toEqual({ '@svc/type-event': '^0.9.0', '@svc/type-fileupload': '^1.2.3', '@svc/type-email': '^1.2.3' });
  });
});

describe('the bare dpd rewrite on a hostile minified line', () => {
  it('a 600 kB line of 100,000 bare dpd finishes and rewrites each', () => {
    const line = `f(${'dpd,'.repeat(100_000)}dpd);${' '.repeat(200_000)}`;
    const out = rewriteBareDpd(line);
    expect(out.match(/\bsvc\b/g)).toHaveLength(100_001);
    expect(out).not.toMatch(/\bdpd\b/);
  });
});
