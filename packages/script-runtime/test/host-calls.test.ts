import { describe, expect, test } from 'vitest';
import type { HostApi } from '@svc/script-runtime';
import { deferred, shared } from './helpers.js';

const later = <T>(value: T, ms = 5): Promise<T> => new Promise((resolve) => setTimeout(() => resolve(value), ms));

/** A fake svc client: dotted names become svc.todos.get(...) in the script. */
function svcHost(log: string[] = []): HostApi {
  const todos = [{ id: 't1', title: 'a' }, { id: 't2', title: 'b' }];
  return {
    'svc.todos.get': async (query) => {
      log.push(`get ${JSON.stringify(query ?? null)}`);
      const id = (query as { id?: string } | undefined)?.id;
      return later(id ? (todos.find((t) => t.id === id) ?? null) : todos);
    },
    'svc.todos.post': async (body) => {
      log.push('post');
      return later({ id: 't3', ...(body as object) });
    },
    'svc.addfollower.exec': async (...args) => later({ args }),
    'svc.todos.del': async () => {
      throw Object.assign(new Error('not found'), { status: 404 });
    },
    emit: (...args) => void log.push(`emit ${JSON.stringify(args)}`),
  };
}

describe('host calls', () => {
  test('callback style: the run waits for the call and the callback, with this bound', async () => {
    const { exec } = shared();
    const result = await exec("svc.todos.get({ id: 't2' }, function (todo, err) { this.found = todo.title; this.err = err; });", {
      host: svcHost(),
    });
    expect(result.thisObj).toEqual({ found: 'b', err: null });
  });

  test('promise style with await', async () => {
    const { exec } = shared();
    const result = await exec('var all = await svc.todos.get(); this.count = all.length; this.made = (await svc.todos.post({ title: "c" })).id;', {
      host: svcHost(),
    });
    expect(result.thisObj).toEqual({ count: 2, made: 't3' });
  });

  test('promise style with .then and no await: the run still waits for the chain', async () => {
    const { exec } = shared();
    const log: string[] = [];
    const result = await exec(
      "var self = this; svc.todos.get().then(function (all) { self.n = all.length; return svc.todos.post({}); }).then(function (t) { self.id = t.id; emit('done', t.id); });",
      { host: svcHost(log) },
    );
    expect(result.thisObj).toEqual({ n: 2, id: 't3' });
    expect(log).toEqual(['get null', 'post', 'emit ["done","t3"]']);
  });

  test('nested callback chains: each call starts in the previous callback', async () => {
    const { exec } = shared();
    const log: string[] = [];
    const result = await exec(`
      svc.todos.get(function (all) {
        this.first = all.length;
        svc.todos.get({ id: all[0].id }, function (one) {
          this.second = one.title;
          svc.todos.post({ title: one.title + '!' }, function (made) {
            this.third = made.title;
            emit('chain', made.id);
          });
        });
      });`, { host: svcHost(log) });
    expect(result.thisObj).toEqual({ first: 2, second: 'a', third: 'a!' });
    expect(log).toEqual(['get null', 'get {"id":"t1"}', 'post', 'emit ["chain","t3"]']);
  });

  test('parallel calls all complete before the run ends', async () => {
    const { exec } = shared();
    const result = await exec(
      "var self = this; self.got = []; ['t1', 't2'].forEach(function (id) { svc.todos.get({ id: id }, function (t) { self.got.push(t.title); }); });",
      { host: { 'svc.todos.get': async (q) => later({ title: (q as { id: string }).id }, (q as { id: string }).id === 't1' ? 15 : 1) } },
    );
    expect(result.thisObj.got).toEqual(['t2', 't1']);
  });

  test('a failing call: callback gets (null, error) and the promise rejects with the error object', async () => {
    const { exec } = shared();
    const result = await exec(`
      svc.todos.del('x', function (r, err) { this.cb = [r, err]; });
      try { await svc.todos.del('x'); } catch (e) { this.caught = e; }`, { host: svcHost() });
    expect(result.thisObj.cb).toEqual([null, { message: 'not found', status: 404 }]);
    expect(result.thisObj.caught).toEqual({ message: 'not found', status: 404 });
  });

  test('an uncaught failing await fails the run with the host message', async () => {
    const { exec } = shared();
    await expect(exec("await svc.todos.del('x');", { host: svcHost() })).rejects.toMatchObject({ name: 'ScriptRuntimeError', message: 'not found' });
  });

  test('inner nodes are callable by resource name, with dashes removed as a fallback', async () => {
    const { exec } = shared();
    const result = await exec("this.r = await svc('add-follower').exec('follow', 'u2'); this.t = typeof svc('todos').get;", { host: svcHost() });
    expect(result.thisObj).toEqual({ r: { args: ['follow', 'u2'] }, t: 'function' });
  });

  test('the run really waits: it resolves only after the host promise settles', async () => {
    const { exec } = shared();
    const gate = deferred<string>();
    let settled = false;
    const run = exec('wait(function (v) { this.v = v; });', { host: { wait: () => gate.promise } }).then((r) => {
      settled = true;
      return r;
    });
    await later(null, 20);
    expect(settled).toBe(false);
    gate.resolve('ok');
    expect((await run).thisObj.v).toBe('ok');
  });

  test('cancel inside a callback cancels the run and stops that callback', async () => {
    const { exec } = shared();
    const result = await exec("svc.todos.get(function (all) { cancel('no todos for you', 403); this.after = true; });", { host: svcHost() });
    expect(result.cancelled).toEqual({ message: 'no todos for you', status: 403 });
    expect(result.thisObj.after).toBeUndefined();
  });

  test('cancel does not wait for pending calls; calls made before it are still made', async () => {
    const { exec } = shared();
    const log: string[] = [];
    const gate = deferred();
    const result = await exec("emit('x'); wait(); cancel('stop');", { host: { emit: svcHost(log).emit as HostApi[string], wait: () => gate.promise } });
    expect(result.cancelled?.message).toBe('stop');
    await later(null, 1);
    expect(log).toEqual(['emit ["x"]']);
    gate.resolve(undefined);
  });

  test('host results and arguments are copies', async () => {
    const { exec } = shared();
    const stored = { n: 1 };
    const result = await exec('var o = await get(); o.n = 2; this.n = (await get()).n;', { host: { get: () => stored } });
    expect(result.thisObj.n).toBe(1);
    expect(stored.n).toBe(1);
  });

  test('a host function that is not given does not exist in the script', async () => {
    const { exec } = shared();
    // Declared nowhere: a ReferenceError, as in JavaScript.
    await expect(exec("emit('x')")).rejects.toThrow('emit is not defined');
    expect((await exec('this.t = typeof emit;')).thisObj.t).toBe('undefined');
  });

  test('host functions are called with the host object as this', async () => {
    const { exec } = shared();
    const host = {
      prefix: 'p-',
      name(this: { prefix: string }, s: unknown) {
        return this.prefix + String(s);
      },
    };
    expect((await exec("this.v = await name('x');", { host: host as unknown as HostApi })).thisObj.v).toBe('p-x');
  });

  test('a host function may itself run a script (nested svc request), as the svc client does', async () => {
    const { runtime } = shared();
    const onGet = runtime.compile("hide('secret'); this.viaGet = true;", 'todos/get.js');
    const host: HostApi = {
      'svc.todos.get': async () => {
        const r = await runtime.run(onGet, { thisObj: { id: 't1', secret: 's' }, locals: { internal: true } });
        const out = { ...r.thisObj };
        for (const p of r.hidden) delete out[p];
        return out;
      },
    };
    const post = runtime.compile('this.todo = await svc.todos.get();', 'todos/post.js');
    expect((await runtime.run(post, { thisObj: {}, locals: {}, host })).thisObj.todo).toEqual({ id: 't1', viaGet: true });
  });
});

describe('rejections', () => {
  test('a failing fire-and-forget call does not fail the run', async () => {
    const { exec } = shared();
    const result = await exec("fail(); this.ok = true;", { host: { fail: () => Promise.reject(new Error('nope')) } });
    expect(result.thisObj.ok).toBe(true);
  });

  test('an unhandled rejection created by the script fails the run', async () => {
    const { exec } = shared();
    await expect(exec("Promise.reject(new Error('unhandled'));")).rejects.toMatchObject({ name: 'ScriptRuntimeError', message: expect.stringMatching(/unhandled/) });
    expect((await exec('this.ok = 1')).thisObj.ok).toBe(1);
  });
});
