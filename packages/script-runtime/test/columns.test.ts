import { describe, expect, test } from 'vitest';
import { RunBudget, ScriptTimeoutError } from '@svc/script-runtime';
import type { RunChanges, RunResult, Script, ScriptRuntime } from '@svc/script-runtime';
import { setup, shared } from './helpers.js';

/** Objects as runColumns takes them: the values of `keys`, object after object. */
function columns(objects: readonly Record<string, unknown>[], keys: readonly string[]): unknown[] {
  const values: unknown[] = [];
  for (const object of objects) for (const key of keys) values.push(Object.hasOwn(object, key) ? object[key] : undefined);
  return values;
}

/** What runEach's result says about a run, in runColumns's terms. */
function changesOf(result: RunResult): RunChanges {
  const out: RunChanges = { hidden: result.hidden, protected: result.protected };
  if (result.assigned !== undefined) {
    out.assigned = result.assigned;
    out.values = result.assigned.map((key) => result.thisObj[key]);
  }
  if (result.deleted !== undefined) out.deleted = result.deleted;
  if (result.cancelled !== undefined) out.cancelled = result.cancelled;
  if (result.errors !== undefined) out.errors = result.errors;
  if (result.setResultCalled) {
    out.setResultCalled = true;
    out.result = result.result;
  }
  return out;
}

/** runColumns over `objects`, beside runEach over the same objects cut down to what the script reads. */
async function both(runtime: ScriptRuntime, script: Script, objects: Record<string, unknown>[], shared = {}): Promise<[RunChanges[], RunChanges[]]> {
  const keys = script.reads as readonly string[];
  expect(keys).toBeDefined();
  const cut = objects.map((o) => Object.fromEntries(keys.filter((k) => Object.hasOwn(o, k)).map((k) => [k, o[k]])));
  const input = { locals: { me: { id: 'u1' }, query: {} }, ...shared };
  const viaColumns = await runtime.runColumns(script, input, keys, columns(objects, keys), objects.length);
  const viaObjects = (await runtime.runEach(script, input, cut)).map(changesOf);
  return [viaColumns, viaObjects];
}

const todos = (count: number): Record<string, unknown>[] =>
  Array.from({ length: count }, (_, i) => ({ id: `t${i}`, title: `todo ${i}`, done: i % 2 === 0, owner: i % 3 ? 'u1' : 'u2', n: i % 8, tags: i % 4 ? ['a'] : undefined, extra: 'not read' }));

describe('runColumns', () => {
  test('gives the changes runEach makes: new, existing and nested properties, deletes, hide, cancel, error()', async () => {
    const { runtime } = shared();
    const script = runtime.compile(
      `
      if (!isMe(this.owner)) hide('owner');
      this.seen = String(this.title).length > 0;
      if (this.done) this.title = this.title.toUpperCase();
      if (this.n === 3) delete this.done;
      if (this.n === 5) this.meta = { by: [this.n, { deep: true }] };
      if (this.tags) this.tags.push('b');
      if (this.n === 7) cancel('seven', 404);
      errorIf(this.n === 6, 'n', 'six');
      `,
      'todos/get.js',
    );
    const [viaColumns, viaObjects] = await both(runtime, script, todos(40));
    expect(viaColumns).toEqual(viaObjects);
    expect(viaColumns[5]).toMatchObject({ assigned: ['tags', 'seen', 'meta'], values: [['a', 'b'], true, { by: [5, { deep: true }] }] });
    expect(viaColumns[3]).toMatchObject({ deleted: ['done'] });
    expect(viaColumns[7]?.cancelled).toEqual({ message: 'seven', status: 404 });
    expect(viaColumns[6]?.errors).toEqual({ n: 'six' });
    expect(viaColumns[0]?.hidden).toEqual(['owner']);
  });

  test('objects without some of the properties, and runs that change nothing', async () => {
    const { runtime } = shared();
    const script = runtime.compile('if (this.title === undefined) this.title = "none"; this.k = this.k;', 'x/get.js');
    const objects = [{ id: 'a' }, { id: 'b', title: 't' }, { id: 'c', title: null }, { id: 'd', k: 1 }, { id: 'e', k: 1 }];
    const [viaColumns, viaObjects] = await both(runtime, script, objects);
    expect(viaColumns).toEqual(viaObjects);
    expect(viaColumns[1]).toEqual({ hidden: [], protected: [] });
  });

  test('host calls and awaits', async () => {
    const { runtime } = shared();
    const script = runtime.compile('this.tag = await tag(this.id);', 'tags/get.js');
    const [viaColumns, viaObjects] = await both(runtime, script, todos(5), { host: { tag: (x: unknown) => `#${String(x)}` } });
    expect(viaColumns).toEqual(viaObjects);
    expect(viaColumns.map((c) => c.values?.[0])).toEqual(['#t0', '#t1', '#t2', '#t3', '#t4']);
  });

  test('the first run that throws rejects, as runEach does', async () => {
    const { runtime } = shared();
    const script = runtime.compile("if (this.n >= 2) throw new Error('fail ' + this.n);", 'fails/get.js');
    await expect(runtime.runColumns(script, { locals: {} }, ['n'], [0, 1, 2, 3], 4)).rejects.toMatchObject({ message: 'fail 2', filename: 'fails/get.js' });
  });

  test('a thrown string cancels that object only', async () => {
    const { runtime } = shared();
    const script = runtime.compile("if (this.n === 1) throw 'no';", 'throws/get.js');
    const out = await runtime.runColumns(script, { locals: {} }, ['n'], [0, 1, 2], 3);
    expect(out.map((c) => c.cancelled ?? null)).toEqual([null, { message: 'no', status: 400 }, null]);
  });

  test('"__proto__" and other unusual names as values and keys', async () => {
    const { runtime } = shared();
    const script = runtime.compile('this.copy = this.v; this["x"] = 1;', 'odd/get.js');
    // `this["x"]` uses `this` as a whole: no columns.
    expect(script.reads).toBeUndefined();
    const named = runtime.compile('this.copy = this.v;', 'odd/get.js');
    const v = JSON.parse('{"__proto__":{"admin":true},"constructor":1}') as Record<string, unknown>;
    const [viaColumns, viaObjects] = await both(runtime, named, [{ v }, { v: [1, { __proto__: null }] }]);
    expect(viaColumns).toEqual(viaObjects);
    expect(Object.hasOwn(viaColumns[0]?.values?.[0] as object, '__proto__')).toBe(true);
  });

  test('1,000 objects, an outcome repeated for most of them', async () => {
    const { runtime } = shared();
    const script = runtime.compile('this.seen = String(this.title).length > 0;', 'todos/get.js');
    const [viaColumns, viaObjects] = await both(runtime, script, todos(1000));
    expect(viaColumns).toHaveLength(1000);
    expect(viaColumns).toEqual(viaObjects);
  });

  test('refuses a script that uses `this` as a whole, and values of the wrong length', async () => {
    const { runtime } = shared();
    await expect(runtime.runColumns(runtime.compile('JSON.stringify(this)', 'w/get.js'), { locals: {} }, [], [], 1)).rejects.toThrow(TypeError);
    await expect(runtime.runColumns(runtime.compile('this.a = 1', 'w/get.js'), { locals: {} }, ['a'], [1, 2], 1)).rejects.toThrow(TypeError);
  });

  test("a spent request budget stops the request's runs", async () => {
    const { runtime } = shared();
    const budget = new RunBudget({ cpuMs: 60_000, wallMs: 60_000 });
    budget.cancel('the client went away before the answer');
    const script = runtime.compile('this.seen = true;', 'todos/get.js');
    await expect(runtime.runColumns(script, { locals: {}, budget }, ['seen'], [undefined], 1)).rejects.toBeInstanceOf(ScriptTimeoutError);
  });

  test('a run over its time limit fails the job, and the runtime goes on', async () => {
    const { runtime } = setup({ timeoutMs: 200 });
    const script = runtime.compile('if (this.n === 1) while (true) {}', 'spin/get.js');
    await expect(runtime.runColumns(script, { locals: {} }, ['n'], [0, 1], 2)).rejects.toBeInstanceOf(ScriptTimeoutError);
    expect(await runtime.runColumns(script, { locals: {} }, ['n'], [0, 2], 2)).toEqual([
      { hidden: [], protected: [] },
      { hidden: [], protected: [] },
    ]);
  });
});
