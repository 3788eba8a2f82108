import { describe, expect, test } from 'vitest';
import { setup, shared } from './helpers.js';

// Built-in globals a source names and never assigns are bound statically around the script's body
// (wrap-source.ts), instead of being looked up through the scope at every use. Nothing a script
// can observe may change: values, typeof, implicit globals of the same names, error positions.

describe('built-in globals in scripts', () => {
  test('are the real built-ins', async () => {
    const { exec } = shared();
    const out = await exec(
      "this.a = String(this.n) + Number('2') + Math.max(1, 3) + JSON.stringify([undefined, NaN, Infinity]) + typeof undefined + typeof Intl0;" +
        'this.b = [Array.isArray([]), Object.keys({ x: 1 })[0], new Date(0).toISOString(), parseInt("7", 10), isNaN(NaN), encodeURIComponent("a b"), new Map([[1, 2]]).get(1)];' +
        'this.c = Object.getPrototypeOf(String("x")) === String.prototype && (function () { return this; })() === undefined ? "strict?" : "sloppy";',
      { thisObj: { n: 1 } },
    );
    expect(out.thisObj).toEqual({
      n: 1,
      a: '123[null,null,null]undefinedundefined',
      b: [true, 'x', '1970-01-01T00:00:00.000Z', 7, true, 'a%20b', 2],
      c: 'sloppy',
    });
  });

  test('one a script assigns is looked up as before: the global object is frozen, the assignment does nothing', async () => {
    const { runtime } = shared();
    const script = runtime.compile("if (this.first) { String = function () { return 'mine'; }; } this.s = String(1);", 'x/get.js');
    const [a, b] = await runtime.runBatch(script, [{ thisObj: { first: true }, locals: {} }, { thisObj: { first: false }, locals: {} }]);
    expect(a?.thisObj.s).toBe('1');
    expect(b?.thisObj.s).toBe('1');
  });

  test('a script declaring a built-in name has its own', async () => {
    const { exec } = shared();
    expect((await exec("var Math = { max: function () { return 'own'; } }; this.m = Math.max(1, 2);")).thisObj.m).toBe('own');
    expect((await exec("function JSON() { return 'fn'; } this.j = JSON();")).thisObj.j).toBe('fn');
    expect((await exec("let undefined = 3; this.u = undefined;")).thisObj.u).toBe(3);
  });

  test('errors keep the script’s own line and column', async () => {
    const { exec, runtime } = setup();
    await expect(exec('this.a = String(1); null.x')).rejects.toMatchObject({ line: 1, column: 26 });
    await expect(exec('this.a = Math.max(1);\n  null.x')).rejects.toMatchObject({ line: 2, column: 8 });
    expect(() => runtime.compile('var s = String(1); var = 1;', 'a.js')).toThrow(expect.objectContaining({ line: 1, column: 24 }));
  });

  test('a script cannot change Error.stackTraceLimit for later runs; errors keep their position', async () => {
    const { exec } = setup({ isolates: 1 });
    const out = await exec('Error.stackTraceLimit = 0; this.limit = Error.stackTraceLimit; this.ok = Object.getOwnPropertyDescriptor(Error, "stackTraceLimit").writable;');
    expect(out.thisObj).toEqual({ limit: 10, ok: false });
    await expect(exec('"use strict"; Error.stackTraceLimit = 0;')).rejects.toMatchObject({ message: expect.stringContaining('read only') });
    await expect(exec('var a = 1;\n  null.x')).rejects.toMatchObject({ line: 2, column: 8 });
  });

  test('a source that names the wrapper’s own names is wrapped as before', async () => {
    const { exec } = shared();
    expect((await exec('var __svcBuiltIns = 1; this.s = String(__svcBuiltIns);')).thisObj.s).toBe('1');
    expect((await exec('this.s = typeof __svcScope + String(2);')).thisObj.s).toBe('object2');
  });
});
