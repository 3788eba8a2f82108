import { describe, expect, test } from 'vitest';
import { deferred, shared } from './helpers.js';

describe('no scope is shared between runs', () => {
  test('an implicit global of one run is not visible in the next', async () => {
    const { runtime } = shared();
    const script = runtime.compile(`
      this.before = typeof leaked;
      leaked = this.n;
      this.after = leaked;
    `, 'leak.js');
    const first = await runtime.run(script, { thisObj: { n: 1 }, locals: {} });
    const second = await runtime.run(script, { thisObj: { n: 2 }, locals: {} });
    expect(first.thisObj).toEqual({ n: 1, before: 'undefined', after: 1 });
    expect(second.thisObj).toEqual({ n: 2, before: 'undefined', after: 2 });
  });

  test('implicit globals are not shared between different scripts either', async () => {
    const { exec } = shared();
    await exec('shared = 42;');
    // In another script the name is declared nowhere: typeof says so, and a read throws, as in JavaScript.
    expect((await exec('this.t = typeof shared;')).thisObj).toEqual({ t: 'undefined' });
    await expect(exec('this.x = shared;')).rejects.toThrow(/shared is not defined/);
  });

  test('two runs interleaved by async host calls keep their own globals', async () => {
    const { runtime } = shared();
    const gates = [deferred(), deferred()];
    const script = runtime.compile('mine = this.n; await wait(this.n); this.seen = mine;', 'interleave.js');
    const host = { wait: (i: unknown) => gates[i as number]?.promise };
    const a = runtime.run(script, { thisObj: { n: 0 }, locals: {}, host });
    const b = runtime.run(script, { thisObj: { n: 1 }, locals: {}, host });
    // b started after a and assigned `mine` too; release them in reverse order.
    await new Promise((r) => setTimeout(r, 5));
    gates[1]?.resolve(undefined);
    expect((await b).thisObj.seen).toBe(1);
    gates[0]?.resolve(undefined);
    expect((await a).thisObj.seen).toBe(0);
  });

  test('interleaved callback-style runs keep their own globals and this', async () => {
    const { runtime } = shared();
    const gates = [deferred(), deferred()];
    const script = runtime.compile('tag = this.n; wait(this.n, function () { this.seen = tag; });', 'interleave-cb.js');
    const host = { wait: (i: unknown) => gates[i as number]?.promise };
    const a = runtime.run(script, { thisObj: { n: 0 }, locals: {}, host });
    const b = runtime.run(script, { thisObj: { n: 1 }, locals: {}, host });
    gates[1]?.resolve(undefined);
    gates[0]?.resolve(undefined);
    expect((await a).thisObj.seen).toBe(0);
    expect((await b).thisObj.seen).toBe(1);
  });

  test('writes to globalThis do not reach the next run', async () => {
    const { exec } = shared();
    await exec('globalThis.g = 1; (function () { this.h = 2; })();');
    expect((await exec('this.out = [typeof globalThis.g, typeof globalThis.h];')).thisObj.out).toEqual(['undefined', 'undefined']);
  });

  test('var and function declarations stay local to the run', async () => {
    const { runtime } = shared();
    const script = runtime.compile('this.had = typeof counter; var counter = (counter || 0) + 1; function f() {} this.c = counter;', 'vars.js');
    // (`counter` is hoisted, so typeof is fine here.)
    await runtime.run(script, { thisObj: {}, locals: {} });
    expect((await runtime.run(script, { thisObj: {}, locals: {} })).thisObj).toEqual({ had: 'undefined', c: 1 });
  });

  test('locals given to one run are not visible in the next', async () => {
    const { runtime } = shared();
    const script = runtime.compile('this.q = typeof secret;', 'locals.js');
    expect((await runtime.run(script, { thisObj: {}, locals: { secret: 1 } })).thisObj.q).toBe('number');
    expect((await runtime.run(script, { thisObj: {}, locals: {} })).thisObj.q).toBe('undefined');
  });

  test('a script changing a shared locals object in a batch does not affect the next object', async () => {
    const { runtime } = shared();
    const script = runtime.compile('this.seen = query.n; query.n = 99;', 'batch-locals.js');
    const locals = { query: { n: 1 } };
    const results = await runtime.runBatch(script, [{ thisObj: {}, locals }, { thisObj: {}, locals }]);
    expect(results.map((r) => r.thisObj.seen)).toEqual([1, 1]);
    expect(locals.query.n).toBe(1);
  });

  test('the caller objects are copied, not changed', async () => {
    const { exec } = shared();
    const thisObj = { a: 1 };
    const me = { id: 'u1' };
    await exec('this.a = 2; me.id = "x";', { thisObj, locals: { me } });
    expect(thisObj).toEqual({ a: 1 });
    expect(me).toEqual({ id: 'u1' });
  });

  test('real globals stay reachable and Script API names cannot be replaced for the next run', async () => {
    const { exec } = shared();
    await exec('cancel = function () {}; JSON = null;');
    const result = await exec("this.s = JSON.stringify([Math.max(1, 2)]); cancel('still works');");
    expect(result.thisObj.s).toBe('[2]');
    expect(result.cancelled?.message).toBe('still works');
  });
});
