import { describe, expect, test } from 'vitest';
import { analyzeSource } from '../src/internal/analyze.js';
import { encodeJob, encodeRun } from '../src/internal/codec.js';
import type { RunInput } from '../src/types.js';
import { shared } from './helpers.js';

// What crosses into the isolate: only the variables and the properties of `this` a script names,
// with `this` coming back as changes against what was sent (see analyze.ts and wire.ts).

describe('source analysis', () => {
  test('this.<name> uses give the property list; names include every identifier', () => {
    const usage = analyzeSource("if (this.done) hide('secret'); this.label = this . title + '!'; this.meta.n++;");
    expect(usage.thisProps).toEqual(['done', 'label', 'title', 'meta']);
    expect(usage.names?.has('hide')).toBe(true);
    expect(usage.deferred).toBe(false);
  });

  test.each([
    ['JSON.stringify(this)'],
    ["this['title'] = 1"],
    ['for (var k in this) {}'],
    ['const { a } = this'],
    ['this?.a'],
    ['this.hasOwnProperty("a")'],
    ['this.__proto__'],
    ["if (changed('title')) {}"],
    ['// this is a comment'],
  ])('%s needs the whole object', (source) => {
    expect(analyzeSource(source).thisProps).toBeUndefined();
  });

  test('eval sees everything; isMe and changed read me and previous', () => {
    expect(analyzeSource("eval('me')")).toEqual({ names: undefined, thisProps: undefined, deferred: true });
    expect(analyzeSource('isMe(this.owner)').names?.has('me')).toBe(true);
    expect(analyzeSource("changed('a')").names?.has('previous')).toBe(true);
  });

  test.each([['await x'], ['p.then(f)'], ['try {} catch (e) {}'], ['Promise.all([])'], ['(async () => 1)()']])('%s is deferred', (source) => {
    expect(analyzeSource(source).deferred).toBe(true);
  });

  // Issue 38 item 8: names are JavaScript's, escapes decoded and any Unicode letter included.
  test('names written with unicode escapes, and names beyond ASCII, are the names JavaScript reads', () => {
    const usage = analyzeSource("\\u0068ide('secret'); caf\\u00e9 = 1; \\u{74}otal++; this.\\u0074itle = this.n\\u{e4}me; ä = 2; i\\u0073Me(x);");
    for (const name of ['hide', 'café', 'total', 'ä', 'isMe', 'me']) expect(usage.names?.has(name), name).toBe(true);
    expect([...(usage.assigned ?? [])].sort()).toEqual(['café', 'total', 'ä']);
    expect(usage.thisProps).toEqual(['title', 'näme']);
    expect(analyzeSource("\\u0065val('me')").names).toBeUndefined();
    expect(analyzeSource('x.th\\u0065n(f)').deferred).toBe(true);
    // `this` inside a longer name is not `this`.
    expect(analyzeSource('thisÄ.x = 1; this.a = 1;').thisProps).toEqual(['a']);
  });
});

describe('this crosses as changes', () => {
  test('properties the script does not name are kept as they were, in order', async () => {
    const { exec } = shared();
    const input = { a: 1, b: { deep: [1, 2] }, c: 'x' };
    const result = await exec('this.a = this.a + 1; this.d = true;', { thisObj: input });
    expect(result.thisObj).toEqual({ a: 2, b: { deep: [1, 2] }, c: 'x', d: true });
    expect(Object.keys(result.thisObj)).toEqual(['a', 'b', 'c', 'd']);
    expect(result.thisObj.b).toBe(input.b);
    expect(input).toEqual({ a: 1, b: { deep: [1, 2] }, c: 'x' });
  });

  test('deleted properties and properties set to undefined or a function are gone', async () => {
    const { exec } = shared();
    const result = await exec('delete this.a; this.b = undefined; this.c = function () {};', { thisObj: { a: 1, b: 2, c: 3, d: 4 } });
    expect(result.thisObj).toEqual({ d: 4 });
  });

  test('changes inside nested values are seen', async () => {
    const { exec } = shared();
    const result = await exec("this.tags.push('x'); this.meta.n++;", { thisObj: { tags: ['a'], meta: { n: 1, m: [0] }, other: { z: 1 } } });
    expect(result.thisObj).toEqual({ tags: ['a', 'x'], meta: { n: 2, m: [0] }, other: { z: 1 } });
  });

  test('a script that changes nothing gets its input object back', async () => {
    const { exec } = shared();
    const input = { a: 1, nested: { b: 2 } };
    expect((await exec('var x = this.a + this.nested.b;', { thisObj: input })).thisObj).toBe(input);
  });

  test('a script that uses this as a whole sees every property', async () => {
    const { exec } = shared();
    const result = await exec("this.keys = Object.keys(this).join(','); this.b2 = this['b'];", { thisObj: { a: 1, b: 2 } });
    expect(result.thisObj).toEqual({ a: 1, b: 2, keys: 'a,b', b2: 2 });
  });

  test('an own __proto__ property stays a property', async () => {
    const { exec } = shared();
    const input = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
    const result = await exec("this['__proto__'] = { polluted: 'yes' }; this.a = 2;", { thisObj: input });
    expect(Object.getPrototypeOf(result.thisObj)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(result.thisObj, '__proto__')).toBe(true);
    expect(result.thisObj.a).toBe(2);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test('a batch of objects of different shapes', async () => {
    const { runtime } = shared();
    const script = runtime.compile('this.n = (this.n || 0) + 1; if (this.drop) delete this.x;', 'shapes.js');
    const objects = [{ x: 1 }, { n: 5, x: 2 }, { y: 3 }, { x: 4, drop: true }, { n: 1 }, { x: 1 }];
    const results = await runtime.runBatch(script, objects.map((thisObj) => ({ thisObj, locals: {} })));
    expect(results.map((r) => r.thisObj)).toEqual([{ x: 1, n: 1 }, { n: 6, x: 2 }, { y: 3, n: 1 }, { drop: true, n: 1 }, { n: 2 }, { x: 1, n: 1 }]);
  });

  test('locals the script does not name are not needed; eval still reaches them', async () => {
    const { exec } = shared();
    const locals = { me: { id: 'u1' }, query: { q: 1 } };
    expect((await exec("this.v = eval('me.id + query.q');", { locals })).thisObj).toEqual({ v: 'u11' });
    expect((await exec('this.v = isMe("u1");', { locals })).thisObj).toEqual({ v: true });
  });
});

describe('runs share crossings', () => {
  test('300 runs started in one tick, with their own locals and objects, all answer their own', async () => {
    const { runtime } = shared();
    const script = runtime.compile('this.sum = this.n + me.k; if (this.n % 3 === 0) cancel("no", 401);', 'many.js');
    const runs = Array.from({ length: 300 }, (_, n) => runtime.run(script, { thisObj: { n }, locals: { me: { k: n * 10 } } }));
    const results = await Promise.all(runs);
    results.forEach((result, n) => {
      expect(result.thisObj.sum).toBe(n * 11);
      expect(result.cancelled).toEqual(n % 3 === 0 ? { message: 'no', status: 401 } : undefined);
    });
  });

  test('a script awaiting a promise that never settles fails instead of hanging', async () => {
    const { exec } = shared();
    await expect(exec('this.a = 1; await new Promise(function () {});')).rejects.toThrow('waiting for a promise that never settles');
    expect((await exec('this.b = 1;')).thisObj).toEqual({ b: 1 });
  });

  test('a microtask continuation of a deferred script still counts', async () => {
    const { exec } = shared();
    const result = await exec('var self = this; Promise.resolve(2).then(function (v) { self.v = v; });');
    expect(result.thisObj).toEqual({ v: 2 });
  });
});

describe('synchronous runs share one scope and one set of API functions', () => {
  test('nothing set on a Script API function or on console reaches the next run', async () => {
    const { runtime } = shared();
    const script = runtime.compile(
      "this.before = typeof hide.mark + '/' + typeof console.mark; hide.mark = 1; console.mark = 2; console.log = null; hide('x');",
      'shared-api.js',
    );
    const results = await runtime.runBatch(script, [{ thisObj: {}, locals: {} }, { thisObj: {}, locals: {} }]);
    expect(results.map((r) => r.thisObj.before)).toEqual(['undefined/undefined', 'undefined/undefined']);
    expect(results.map((r) => r.hidden)).toEqual([['x'], ['x']]);
  });

  test('a Script API function put on a built-in prototype by one run does not reach the next (the realm is sealed)', async () => {
    const { runtime } = shared();
    const script = runtime.compile("if (this.first) Object.prototype.keep = hide; else this.seen = typeof ({}).keep;", 'kept.js');
    const results = await runtime.runBatch(script, [{ thisObj: { first: true }, locals: {} }, { thisObj: {}, locals: {} }]);
    expect(results.map((r) => r.thisObj.seen)).toEqual([undefined, 'undefined']);
  });
});

describe('single-run encoding', () => {
  // encodeRun is encodeJob's fast path for one run: the isolate must get the same job.
  const inputs: RunInput[] = [
    { thisObj: { title: 'a', done: false, n: 1 }, locals: {} },
    { thisObj: { title: 'a', gone: undefined, f: () => 1, nested: { x: [1, { y: null }] } }, locals: { me: undefined, query: { q: 1 }, other: 'x' }, label: 'todos On Get' },
    { thisObj: JSON.parse('{"__proto__":{"x":1},"a":1}') as Record<string, unknown>, locals: { previous: {} }, host: { emit: () => undefined, 'svc.todos.get': () => undefined }, label: 'l' },
    { thisObj: { b: 2, a: 1 }, locals: { ctx: { headers: {} } }, host: {} },
  ];
  test.each([['this.seen = true;'], ['if (this.done) hide("title"); console.log(me, query)'], ['JSON.stringify(this); emit("x")'], ["eval('1')"]])('%s', (source) => {
    const usage = analyzeSource(source);
    for (const input of inputs) {
      // Twice: the second run reuses the tables text of the first.
      for (let i = 0; i < 2; i++) expect(JSON.parse(encodeRun(3, 7, input, usage).json)).toEqual(JSON.parse(encodeJob(3, 7, [input], usage).json));
    }
  });
});
