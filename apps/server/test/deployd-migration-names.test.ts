import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
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

describe('the bare dpd rewrite on a hostile minified line', () => {
  it('a 600 kB line of 100,000 bare dpd finishes and rewrites each', () => {
    const line = `f(${'dpd,'.repeat(100_000)}dpd);${' '.repeat(200_000)}`;
    const out = rewriteBareDpd(line);
    expect(out.match(/\bsvc\b/g)).toHaveLength(100_001);
    expect(out).not.toMatch(/\bdpd\b/);
  });
});
