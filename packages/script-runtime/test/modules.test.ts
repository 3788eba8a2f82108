import { describe, expect, test } from 'vitest';
import { checkScriptModules, ScriptRuntimeError } from '@svc/script-runtime';
import type { ScriptModule } from '@svc/script-runtime';
import { setup } from './helpers.js';

/** A small module as the server bundles one: CommonJS with module, exports and require in scope. */
const PAD: ScriptModule = {
  name: 'left-pad',
  source: `var calls = 0;
module.exports = function leftPad(s, n, c) { calls++; s = String(s); while (s.length < n) s = (c || ' ') + s; return s; };
module.exports.config = { fill: ' ' };
module.exports.calls = function () { return calls; };`,
};

describe('require() of named modules', () => {
  test('a named module works, and every require in an isolate gets the same frozen exports', async () => {
    const { exec } = setup({ isolates: 1, modules: [PAD] });
    const out = await exec(`var pad = require('left-pad'); this.padded = pad('7', 3, '0'); this.same = pad === require('left-pad');
      this.frozen = Object.isFrozen(pad) && Object.isFrozen(pad.config);
      pad.config.fill = 'x'; pad.evil = 1; this.fill = pad.config.fill; this.added = pad.evil;
      try { (function () { 'use strict'; pad.config.fill = 'x'; })(); } catch (e) { this.threw = e instanceof TypeError; }`);
    // Scripts are sloppy: the writes do nothing; strict code gets a TypeError.
    expect(out.thisObj).toEqual({ padded: '007', same: true, frozen: true, fill: ' ', threw: true });
    // Another run sees the module as it was loaded.
    expect((await exec(`this.fill = require('left-pad').config.fill; this.evil = require('left-pad').evil;`)).thisObj).toEqual({ fill: ' ' });
  });

  test('prototypes of exported classes and what getters answer are frozen too', async () => {
    const source = `class Point { constructor(x) { this.x = x; } twice() { return this.x * 2; } }
var helper = function () { return 1; };
Object.defineProperty(exports, 'helper', { get: function () { return helper; }, enumerable: true });
exports.Point = Point;`;
    const { exec } = setup({ isolates: 1, modules: [{ name: 'geo', source }] });
    const first = await exec(`var m = require('geo'); m.Point.prototype.twice = function () { return 'hacked'; }; m.helper.evil = 1;
      this.t = new m.Point(2).twice(); this.evil = m.helper.evil === undefined; this.frozen = Object.isFrozen(m.helper) && Object.isFrozen(m.Point.prototype);`);
    expect(first.thisObj).toEqual({ t: 4, evil: true, frozen: true });
  });

  test('Node built-ins svc does not offer are refused by name, with and without node:', async () => {
    const { exec } = setup({ isolates: 1, modules: [PAD] });
    for (const name of ['fs', 'node:fs', 'child_process', 'net']) {
      const err = await exec(`require(${JSON.stringify(name)})`).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ScriptRuntimeError);
      expect((err as Error).message).toContain(`module '${name}' is a Node built-in and cannot be used in event scripts`);
    }
  });

  test('a module not named is refused with how to name it, also without any module', async () => {
    const { exec } = setup({ isolates: 1 });
    const err = await exec(`require('lodash')`).catch((e: unknown) => e);
    expect((err as Error).message).toContain(`module 'lodash' is not allowed: add it to app.json scripts.modules`);
    expect((await exec(`this.t = typeof require;`)).thisObj.t).toBe('function');
  });

  test('require works in async scripts and host callbacks', async () => {
    const { exec } = setup({ isolates: 1, modules: [PAD] });
    const out = await exec(`var v = await ping(); this.p = require('left-pad')(v, 4, '-');`, { host: { ping: () => 42 } });
    expect(out.thisObj.p).toBe('--42');
  });

  test('a module gets no host access: no process, built-ins not offered only as stand-ins that throw, a sealed realm', async () => {
    const probe: ScriptModule = {
      name: 'probe',
      source: `var r = {};
r.process = typeof process; r.globalRequire = typeof globalThis.require; r.fetch = typeof fetch;
try { require('fs').readFileSync('/etc/passwd'); r.fs = 'read'; } catch (e) { r.fs = e.message; }
try { Object.prototype.polluted = 1; } catch (e) {}
r.proto = ({}).polluted === undefined ? 'frozen' : 'changed';
try { globalThis.leak = 1; } catch (e) {}
r.leak = typeof globalThis.leak;
module.exports = r;`,
    };
    const { exec } = setup({ isolates: 1, modules: [probe] });
    const out = await exec(`var r = require('probe'); this.r = JSON.parse(JSON.stringify(r)); this.polluted = ({}).polluted;`);
    expect(out.thisObj).toEqual({
      r: { process: 'undefined', globalRequire: 'undefined', fetch: 'undefined', fs: "module 'fs' is a Node built-in that event scripts cannot use (fs.readFileSync)", proto: 'frozen', leak: 'undefined' },
    });
  });
});

describe('checkScriptModules', () => {
  test('modules that load pass', async () => {
    await checkScriptModules([PAD]);
  });

  test('a module whose top-level code throws fails with its name and the error', async () => {
    await expect(checkScriptModules([{ name: 'bad', source: `throw new Error('broken at load')` }])).rejects.toThrow(/module 'bad' cannot be loaded for event scripts: it threw: .*broken at load/);
  });

  test('a module that uses a Node built-in svc does not offer at load fails (one that only names it loads)', async () => {
    await expect(checkScriptModules([{ name: 'needs-fs', source: `module.exports = require('fs').readFileSync('/etc/passwd')` }])).rejects.toThrow(
      /module 'needs-fs' cannot be loaded.*module 'fs' is a Node built-in that event scripts cannot use \(fs\.readFileSync\)/,
    );
    await expect(checkScriptModules([{ name: 'names-fs', source: `module.exports = require('fs').readFileSync` }])).resolves.toBeUndefined();
  });

  test('a module that loops forever at load fails within the time limit', async () => {
    await expect(checkScriptModules([{ name: 'loop', source: `while (true) {}` }], { timeoutMs: 100 })).rejects.toThrow(/module 'loop' cannot be loaded.*ran longer than 5 times the script time limit \(500 ms\)/);
  });

  test('a module that exhausts the heap at load fails', async () => {
    const err = await checkScriptModules([{ name: 'bomb', source: `var a = []; while (true) a.push(new Array(1e6).fill(1));` }], { memoryLimitMb: 16, timeoutMs: 5000 }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/bomb.*out of memory|out of memory/);
  });

  test('a huge module is refused before anything runs', async () => {
    await expect(checkScriptModules([{ name: 'huge', source: `//${'x'.repeat(5 * 1024 * 1024)}` }])).rejects.toThrow(/module 'huge' is 5\.0 MB bundled; event scripts allow 4\.0 MB per module/);
  });

  test('a source that closes its wrapper still only runs in the sealed isolate', async () => {
    const source = `}); Object.prototype.y = 2; Array.prototype.push = null; (function () { `;
    const { exec } = setup({ isolates: 1, modules: [{ name: 'closer', source }] });
    const out = await exec(`var a = []; a.push(1); this.v = require('closer'); this.y = ({}).y; this.n = a.length;`);
    expect(out.thisObj).toEqual({ v: {}, n: 1 });
  });
});
