import { describe, expect, test } from 'vitest';
import type { RunInput } from '@svc/script-runtime';
import { setup, shared as sharedRuntime } from './helpers.js';

const ON_GET = `
  if (!isMe(this.owner)) hide('secret');
  if (this.done) { this.label = 'done: ' + this.title; } else { protect('title'); }
  if (this.bad) cancel('bad one', 404);
  errorIf(this.n > 5, 'n', 'too big');
  tmp = this.n;
  this.n2 = tmp * 2;
`;

function inputs(count: number): RunInput[] {
  const locals = { me: { id: 'u1' }, query: {} };
  return Array.from({ length: count }, (_, i) => ({
    thisObj: { id: `t${i}`, title: `todo ${i}`, done: i % 2 === 0, owner: i % 3 ? 'u1' : 'u2', secret: 'x', n: i % 8, bad: i % 7 === 3 },
    locals,
  }));
}

describe('runBatch', () => {
  test('gives the same results as one run per object', async () => {
    const { runtime } = sharedRuntime();
    const script = runtime.compile(ON_GET, 'todos/get.js');
    const list = inputs(50);
    const batch = await runtime.runBatch(script, list);
    const single = await Promise.all(list.map((input) => runtime.run(script, input)));
    expect(batch).toEqual(single);
    expect(batch.filter((r) => r.cancelled).length).toBe(7);
  });

  test('works with host calls, per-object hosts and labels', async () => {
    const { runtime, lines } = setup();
    const script = runtime.compile("this.tag = await tag(this.id); console.log(this.id);", 'tags.js');
    const list = ['a', 'b', 'c'].map((id) => ({ thisObj: { id }, locals: {}, label: `L${id}`, host: { tag: (x: unknown) => `${String(x)}-${id}` } }));
    const results = await runtime.runBatch(script, list);
    expect(results.map((r) => r.thisObj.tag)).toEqual(['a-a', 'b-b', 'c-c']);
    expect(lines.sort()).toEqual(['[La] a', '[Lb] b', '[Lc] c']);
  });

  test('an empty list gives an empty result', async () => {
    const { runtime } = sharedRuntime();
    expect(await runtime.runBatch(runtime.compile('1', 'x.js'), [])).toEqual([]);
  });

  test('the first error in input order rejects the batch', async () => {
    const { runtime } = sharedRuntime();
    const script = runtime.compile("if (this.fail) throw new Error('fail ' + this.i);", 'fails.js');
    const list = [0, 1, 2, 3].map((i) => ({ thisObj: { i, fail: i >= 2 }, locals: {} }));
    await expect(runtime.runBatch(script, list)).rejects.toMatchObject({ message: 'fail 2', filename: 'fails.js' });
  });

  test('1,000 objects in one batch', async () => {
    const { runtime } = sharedRuntime();
    const results = await runtime.runBatch(runtime.compile(ON_GET, 'todos/get.js'), inputs(1000));
    expect(results).toHaveLength(1000);
    expect(results[4]).toEqual({
      thisObj: { id: 't4', title: 'todo 4', done: true, owner: 'u1', secret: 'x', n: 4, bad: false, label: 'done: todo 4', n2: 8 },
      hidden: [],
      protected: [],
      // What the run changed, for callers that patch the input's serialisation (issue 21).
      assigned: ['label', 'n2'],
    });
  });
});

describe('concurrency', () => {
  test('100 concurrent runs, half with async host calls, all correct', async () => {
    const { runtime } = sharedRuntime();
    const script = runtime.compile(`
      mine = this.i;
      if (this.i % 2) { this.v = await double(this.i); } else { this.v = this.i * 2; }
      if (mine !== this.i) throw new Error('scope leak');
      if (this.i % 10 === 0) cancel('tenth ' + this.i);
    `, 'concurrent.js');
    const host = { double: (n: unknown) => new Promise((r) => setTimeout(() => r((n as number) * 2), Math.random() * 10)) };
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => runtime.run(script, { thisObj: { i }, locals: {}, host })),
    );
    results.forEach((r, i) => {
      expect(r.thisObj).toEqual(i % 10 === 0 ? { i, v: i * 2 } : { i, v: i * 2 });
      expect(r.cancelled?.message).toBe(i % 10 === 0 ? `tenth ${i}` : undefined);
    });
  });
});

describe('runEach', () => {
  test('gives the same results as runBatch with the shared input on every object', async () => {
    const { runtime } = sharedRuntime();
    const script = runtime.compile("if (this.n === 2) cancel('two'); this.twice = this.n * 2; if (isMe(this.owner)) hide('owner');", 'each.js');
    const shared = { locals: { me: { id: 'u1' } }, label: 'each' };
    const objects = () => [{ n: 1, owner: 'u1' }, { n: 2 }, { n: 3, owner: 'u2' }, {}];
    const each = await runtime.runEach(script, shared, objects());
    const batch = await runtime.runBatch(script, objects().map((thisObj) => ({ thisObj, ...shared })));
    expect(each).toEqual(batch);
    expect(each.map((r) => r.thisObj.twice)).toEqual([2, undefined, 6, null]);
    expect(each[1]?.cancelled).toEqual({ message: 'two', status: 400 });
    expect(each[0]?.hidden).toEqual(['owner']);
  });

  test('inPlace changes the given objects; without it they stay as they were', async () => {
    const { runtime } = sharedRuntime();
    const script = runtime.compile('this.seen = true;', 'seen.js');
    const kept = [{ a: 1 }];
    const changed = [{ a: 1 }];
    await runtime.runEach(script, { locals: {} }, kept);
    const results = await runtime.runEach(script, { locals: {} }, changed, { inPlace: true });
    expect(kept).toEqual([{ a: 1 }]);
    expect(changed).toEqual([{ a: 1, seen: true }]);
    expect(results[0]?.thisObj).toBe(changed[0]);
    expect(await runtime.runEach(script, { locals: {} }, [])).toEqual([]);
  });
});
