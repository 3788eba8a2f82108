import { describe, expect, test } from 'vitest';
import { ScriptInputError, ScriptMemoryError, ScriptRestartedError, ScriptTimeoutError } from '@svc/script-runtime';
import { deferred, setup } from './helpers.js';

// Each case is an attack that got through when scripts ran in the server process in one shared,
// unsealed isolate (issue 10). The runtime must contain it and blame the run that caused it.

describe('scripts run off the event loop', () => {
  test('an endless loop does not stall the event loop of the process that asked for the run', async () => {
    const { exec } = setup({ timeoutMs: 600 });
    const started = performance.now();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const err = await exec('while (true) {}').catch((e: unknown) => e);
    clearInterval(timer);
    expect(err).toBeInstanceOf(ScriptTimeoutError);
    expect(err).toMatchObject({ culprit: true });
    const elapsed = performance.now() - started;
    // A blocked loop would have ticked once or twice at most over the whole run.
    expect(ticks).toBeGreaterThan(elapsed / 10 / 4);
  });

  test('a harmless run is answered while another process loops; after the timeout the pool serves again', async () => {
    const { exec } = setup({ timeoutMs: 2000, isolates: 2 });
    let loopEnded = false;
    const loop = exec('while (true) {}').catch((e: unknown) => e).finally(() => { loopEnded = true; });
    await new Promise((r) => setTimeout(r, 100));
    expect((await exec('this.ok = 1;')).thisObj.ok).toBe(1);
    // Answered by the other process while the loop still runs (no clock: a loaded machine is slow).
    expect(loopEnded).toBe(false);
    expect(await loop).toBeInstanceOf(ScriptTimeoutError);
    expect((await exec('this.ok = 2;')).thisObj.ok).toBe(2);
  });
});

describe('nothing crosses runs: the realm is sealed', () => {
  test.each([
    ['Object.prototype.isAdmin = true;', 'typeof ({}).isAdmin'],
    ['Array.prototype.evil = 1;', 'typeof [].evil'],
    ['Math.evil = 1;', 'typeof Math.evil'],
    ['JSON.evil = 1;', 'typeof JSON.evil'],
    ['Function.prototype.evil = 1;', 'typeof (function () {}).evil'],
    ['Object.getPrototypeOf(async function () {}).evil = 1;', 'typeof Object.getPrototypeOf(async function () {}).evil'],
    ['Reflect.evil = 1;', 'typeof Reflect.evil'],
    ['globalThis.evil = 1;', 'typeof globalThis.evil'],
    ['Object.defineProperty(Object.prototype, "evil", { value: 1 });', 'typeof ({}).evil'],
  ])('%s is not seen by the next run', async (attack, probe) => {
    const { exec } = setup({ isolates: 1 });
    await exec(`try { ${attack} } catch (e) {}`);
    expect((await exec(`this.seen = ${probe};`)).thisObj.seen).toBe('undefined');
  });

  test('a deep merge of a request body with a __proto__ key cannot make anyone an admin', async () => {
    const { exec } = setup({ isolates: 1 });
    const merge = `
      function merge(target, source) {
        for (var key in source) {
          if (source[key] && typeof source[key] === 'object') { if (!target[key]) target[key] = {}; merge(target[key], source[key]); }
          else target[key] = source[key];
        }
        return target;
      }
      merge(this, body.patch);`;
    await exec(merge, { locals: { body: JSON.parse('{"patch": {"__proto__": {"isAdmin": true}}}') as Record<string, unknown> } });
    const guard = "if (!me || !me.isAdmin) cancel('admins only', 403); this.secret = 'x';";
    const result = await exec(guard, { locals: { me: { id: 'u1' } } });
    expect(result.cancelled).toEqual({ message: 'admins only', status: 403 });
  });

  test('the override pattern still works on ordinary objects', async () => {
    const { exec } = setup();
    const result = await exec(`
      var o = {}; o.toString = function () { return 'mine'; }; o.constructor = 'c'; o.valueOf = function () { return 7; };
      var e = new Error('x'); e.name = 'Custom'; e.message = 'changed';
      var a = []; a.toString = function () { return 'arr'; };
      this.out = [String(o), o.constructor, o + 1, e.name, e.message, String(a)];`);
    expect(result.thisObj.out).toEqual(['mine', 'c', 8, 'Custom', 'changed', 'arr']);
  });

  test('WebAssembly, SharedArrayBuffer and Atomics are not in the script realm', async () => {
    const { exec } = setup();
    const result = await exec("this.t = [typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics];");
    expect(result.thisObj.t).toEqual(['undefined', 'undefined', 'undefined']);
  });

  test('replacing JSON.stringify or Array.prototype.push neither breaks the runtime nor the next run', async () => {
    const { exec } = setup({ isolates: 1 });
    await exec("try { JSON.stringify = function () { return 'broken'; }; } catch (e) {} try { Array.prototype.push = null; } catch (e) {} this.x = 1;");
    const result = await exec("var a = []; a.push(1); this.s = JSON.stringify({ a: a });");
    expect(result.thisObj.s).toBe('{"a":[1]}');
  });
});

describe('a run that kills its isolate takes down only its own process', () => {
  test('a dictionary-growing object (a V8 fatal out-of-memory error) fails that run only', async () => {
    const { exec } = setup({ memoryLimitMb: 32, isolates: 1, timeoutMs: 10_000 });
    const err = await exec("var o = {}, i = 0; while (true) o['k' + i++] = { a: i, b: 'v' + i };").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScriptMemoryError);
    expect(err).toMatchObject({ culprit: true });
    expect((await exec('this.ok = true;')).thisObj.ok).toBe(true);
  });

  test('runs that were in the same process and made no host call run again and succeed', async () => {
    const { runtime, exec } = setup({ memoryLimitMb: 32, isolates: 1, timeoutMs: 10_000 });
    const bomb = exec("var o = {}, i = 0; while (true) o['k' + i++] = { a: i, b: 'v' + i };").catch((e: unknown) => e);
    const innocent = runtime.compile('this.ok = true;', 'innocent.js');
    const others = Promise.all([1, 2, 3].map(() => runtime.run(innocent, { thisObj: {}, locals: {} })));
    expect(await bomb).toBeInstanceOf(ScriptMemoryError);
    expect((await others).map((r) => r.thisObj.ok)).toEqual([true, true, true]);
  });

  test('a run that had made a host call fails with ScriptRestartedError; the one to blame with its own error', async () => {
    const { runtime, exec } = setup({ timeoutMs: 500, isolates: 1 });
    const gate = deferred();
    const called = deferred();
    const wait = () => (called.resolve(1), gate.promise);
    const waiting = runtime.run(runtime.compile('await wait();', 'waiting.js'), { thisObj: {}, locals: {}, host: { wait } }).catch((e: unknown) => e);
    await called.promise;
    const loop = await exec('while (true) {}').catch((e: unknown) => e);
    gate.resolve(1);
    expect(loop).toBeInstanceOf(ScriptTimeoutError);
    expect(await waiting).toBeInstanceOf(ScriptRestartedError);
  });

  test('a promise chain that loops is blamed on its own run, and a harmless run sent in the same tick is answered', async () => {
    const { runtime } = setup({ timeoutMs: 500, isolates: 1 });
    const chain = runtime.compile('await 1; Promise.resolve().then(function () { while (true) {} }); await 2;', 'chain.js');
    const harmless = runtime.compile('this.ok = true;', 'harmless.js');
    const results = await Promise.all([
      runtime.run(chain, { thisObj: {}, locals: {} }).catch((e: unknown) => e),
      ...Array.from({ length: 9 }, () => runtime.run(harmless, { thisObj: {}, locals: {} }).catch((e: unknown) => e)),
    ]);
    expect(results[0]).toBeInstanceOf(ScriptTimeoutError);
    expect(results[0]).toMatchObject({ filename: 'chain.js' });
    for (const r of results.slice(1)) expect(r).toMatchObject({ thisObj: { ok: true } });
  });

  test('WebAssembly memory cannot be allocated outside the heap limit', async () => {
    const { exec } = setup();
    const err = await exec('new WebAssembly.Memory({ initial: 1024 });').catch((e: unknown) => e);
    expect(String((err as Error).message)).toMatch(/WebAssembly|undefined/);
  });
});

describe('input a script cannot take', () => {
  test('request data nested 10,000 deep is refused with ScriptInputError before anything runs', async () => {
    const { exec } = setup();
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 10_000; i++) deep = deep.k = {};
    const err = await Promise.resolve()
      .then(() => exec('this.x = ctx;', { locals: { ctx: root } }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScriptInputError);
    expect(err).toMatchObject({ code: 'SCRIPT_INPUT' });
  });
});
