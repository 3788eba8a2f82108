import { describe, expect, test } from 'vitest';
import { ScriptMemoryError, ScriptRuntimeError, ScriptSyntaxError, ScriptTimeoutError } from '@svc/script-runtime';
import { deferred, setup, shared } from './helpers.js';

const LOOP = 'this.started = true; while (true) {}';
const BOMB = 'var a = []; while (true) a.push(new Array(1e6).fill(1));';

describe('CPU time limit', () => {
  test('an endless loop fails that run within the limit; later runs succeed', async () => {
    const { runtime, exec } = setup({ timeoutMs: 200 });
    const loop = runtime.compile(LOOP, 'todos/loop.js');
    const startedAt = Date.now();
    const err = await runtime.run(loop, { thisObj: {}, locals: {} }).catch((e: unknown) => e);
    const elapsed = Date.now() - startedAt;
    expect(err).toBeInstanceOf(ScriptTimeoutError);
    expect(err).toMatchObject({ filename: 'todos/loop.js', code: 'SCRIPT_TIMEOUT', culprit: true });
    // Stopped by the limit, not earlier (no upper bound: a loaded machine may answer late).
    expect(elapsed).toBeGreaterThanOrEqual(150);
    expect((await exec('this.ok = true;')).thisObj.ok).toBe(true);
  });

  test('runs waiting on host calls while another run loops are not affected', async () => {
    const { runtime } = setup({ timeoutMs: 200 });
    const gate = deferred();
    const waiter = runtime.compile('this.v = await wait(); this.after = true;', 'waiter.js');
    const waiting = runtime.run(waiter, { thisObj: {}, locals: {}, host: { wait: () => gate.promise } });
    await expect(runtime.run(runtime.compile(LOOP, 'loop.js'), { thisObj: {}, locals: {} })).rejects.toBeInstanceOf(ScriptTimeoutError);
    gate.resolve(5);
    expect((await waiting).thisObj).toEqual({ v: 5, after: true });
  });

  test('an endless loop in a host callback fails that run', async () => {
    const { exec } = setup({ timeoutMs: 200 });
    const err = await exec('ping(function () { while (true) {} });', { host: { ping: () => 1 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScriptTimeoutError);
    expect((await exec('this.ok = 1')).thisObj.ok).toBe(1);
  });

  test('an endless loop in one object of a batch fails the batch; the next batch succeeds', async () => {
    const { runtime } = setup({ timeoutMs: 200 });
    const script = runtime.compile('if (this.bad) while (true) {} this.ok = true;', 'batch-loop.js');
    const inputs = [{ bad: false }, { bad: true }, { bad: false }].map((thisObj) => ({ thisObj, locals: {} }));
    await expect(runtime.runBatch(script, inputs)).rejects.toBeInstanceOf(ScriptTimeoutError);
    const good = await runtime.runBatch(script, [{ thisObj: {}, locals: {} }, { thisObj: {}, locals: {} }]);
    expect(good.map((r) => r.thisObj.ok)).toEqual([true, true]);
  });

  test('a batch whose total time exceeds the limit passes when each object stays under it', async () => {
    // 8 x 60 ms is past the 400 ms limit in total; each object keeps a wide margin under it, as
    // the limit is wall time and CI runs test files in parallel on 2 cores.
    const { runtime } = setup({ timeoutMs: 400 });
    const script = runtime.compile('var until = Date.now() + 60; while (Date.now() < until) {} this.ok = true;', 'slow.js');
    const results = await runtime.runBatch(script, Array.from({ length: 8 }, () => ({ thisObj: {}, locals: {} })));
    expect(results.every((r) => r.thisObj.ok)).toBe(true);
  });
});

describe('memory limit', () => {
  test('a memory bomb fails that run; the runtime keeps working with a new isolate', async () => {
    const { runtime, exec } = setup({ memoryLimitMb: 32, timeoutMs: 5000 });
    const kept = runtime.compile('this.kept = true;', 'kept.js');
    const err = await exec(BOMB).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScriptMemoryError);
    expect(err).toMatchObject({ code: 'SCRIPT_MEMORY', culprit: true });
    // A script compiled before the isolate died is recompiled in the new one.
    expect((await runtime.run(kept, { thisObj: {}, locals: {} })).thisObj.kept).toBe(true);
    expect((await exec('this.ok = 1;')).thisObj.ok).toBe(1);
  });

  test('a run in the dead process that had made a host call fails with ScriptRestartedError (503), not as the culprit', async () => {
    const { runtime, exec } = setup({ memoryLimitMb: 32, timeoutMs: 5000, isolates: 1 });
    const gate = deferred();
    const called = deferred();
    const wait = () => (called.resolve(1), gate.promise);
    const waiting = runtime.run(runtime.compile('await wait();', 'waiting.js'), { thisObj: {}, locals: {}, host: { wait } }).catch((e: unknown) => e);
    await called.promise;
    await exec(BOMB).catch(() => undefined);
    gate.resolve(1);
    expect(await waiting).toMatchObject({ name: 'ScriptRestartedError', code: 'SCRIPT_RESTARTED', filename: 'waiting.js' });
  });
});

describe('errors name the file and line', () => {
  test('a syntax error', () => {
    const { runtime } = shared();
    let err: unknown;
    try {
      runtime.compile("var a = 1;\nvar b = ;\n", 'todos/post.js');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ScriptSyntaxError);
    expect(err).toMatchObject({ filename: 'todos/post.js', line: 2, column: 9, code: 'SCRIPT_SYNTAX' });
    expect((err as Error).message).toMatch(/Unexpected token/);
  });

  test('a syntax error on line 1 has the column of the script, not of the wrapper', () => {
    const { runtime } = shared();
    expect(() => runtime.compile('var = 1;', 'a.js')).toThrow(expect.objectContaining({ line: 1, column: 5 }));
  });

  test('a source that would close the wrapper is refused', () => {
    const { runtime } = shared();
    expect(() => runtime.compile('}; } }); (function () { with ({}) { return async function () {', 'escape.js')).toThrow(ScriptSyntaxError);
  });

  test('a thrown error', async () => {
    const { exec } = shared();
    const err = await exec("var a = 1;\n\nfunction check() {\n  throw new Error('boom');\n}\ncheck();").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScriptRuntimeError);
    expect(err).toMatchObject({ message: 'boom', filename: expect.stringMatching(/^test\/script-\d+\.js$/), line: 4, column: 9, code: 'SCRIPT_RUNTIME' });
    expect((err as ScriptRuntimeError).scriptStack).toMatch(/check/);
  });

  test('a TypeError on line 1 is an error; a thrown string or plain object rejects like cancel() (Deployd)', async () => {
    const { exec } = shared();
    await expect(exec('null.x')).rejects.toMatchObject({ name: 'ScriptRuntimeError', line: 1, column: 6 });
    expect(await exec("throw 'plain'")).toMatchObject({ cancelled: { message: 'plain', status: 400 } });
    expect(await exec("throw { message: 'nope', statusCode: 401 }")).toMatchObject({ cancelled: { message: 'nope', status: 401 } });
    expect(await exec("throw { message: 'odd', status: 200 }")).toMatchObject({ cancelled: { message: 'odd', status: 400 } });
    expect(await exec('await null; throw 7')).toMatchObject({ cancelled: { message: '7', status: 400 } });
    // A chain the script made itself (not from a host call) is not its run's: an unhandled
    // rejection there stays an error of the run.
    await expect(exec("Promise.resolve().then(function () { throw 'in then'; })")).rejects.toMatchObject({ name: 'ScriptRuntimeError', message: /in then/ });
    await expect(exec("throw new Error('real')")).rejects.toMatchObject({ name: 'ScriptRuntimeError', message: 'real' });
    // A getter that throws while the message is read: still an answer, not a crash.
    await expect(exec("var o = {}; Object.defineProperty(o, 'message', { get: function () { throw new Error('g'); } }); throw o;")).rejects.toMatchObject({ name: 'ScriptRuntimeError' });
  });

  test('an error thrown after an await or in a callback', async () => {
    const { exec } = shared();
    const host = { ping: () => 1 };
    await expect(exec('await ping();\nthrow new Error("late");', { host })).rejects.toMatchObject({ message: 'late', line: 2 });
    await expect(exec('ping(function () {\n  undefinedFn();\n});', { host })).rejects.toMatchObject({
      message: 'undefinedFn is not defined',
      line: 2,
    });
  });
});
