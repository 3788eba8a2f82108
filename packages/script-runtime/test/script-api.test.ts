import { describe, expect, test } from 'vitest';
import { setup, shared } from './helpers.js';

describe('Script API', () => {
  test('this is the object; changes and new properties are returned', async () => {
    const { exec } = shared();
    const result = await exec('this.title = this.title.toUpperCase(); this.count = 2; delete this.drop;', {
      thisObj: { title: 'buy milk', drop: true },
    });
    expect(result.thisObj).toEqual({ title: 'BUY MILK', count: 2 });
  });

  test('a run without any API call returns empty lists and no optional fields', async () => {
    const { exec } = shared();
    expect(await exec('var a = 1;', { thisObj: { a: 1 } })).toEqual({ thisObj: { a: 1 }, hidden: [], protected: [] });
  });

  test('cancel stops the script at once, with status 400 by default', async () => {
    const { exec } = shared();
    const result = await exec("this.before = true; cancel('not allowed'); this.after = true;");
    expect(result.cancelled).toEqual({ message: 'not allowed', status: 400 });
    expect(result.thisObj).toEqual({ before: true });
  });

  test('cancel with a status', async () => {
    const { exec } = shared();
    expect((await exec("cancel('login first', 401)")).cancelled).toEqual({ message: 'login first', status: 401 });
  });

  test.each([
    ["cancelIf(true, 'yes', 403)", { message: 'yes', status: 403 }],
    ["cancelIf(0, 'no')", undefined],
    ["cancelUnless('', 'empty')", { message: 'empty', status: 400 }],
    ["cancelUnless(1, 'no')", undefined],
  ])('%s', async (source, cancelled) => {
    const { exec } = shared();
    expect((await exec(source)).cancelled).toEqual(cancelled);
  });

  // Issue 38 item 1: cancel()'s status as Deployd 1.2 answered it (none or falsy: 400; 200-599,
  // also as a text: that status); anything else is the script's error with its line, never a
  // status handed to the server. The same with plans (literals) and in the isolate (any value).
  const STATUSES: [string, number | RegExp][] = [
    ['undefined', 400], ['null', 400], ['0', 400], ['-0', 400], ['NaN', 400], ["''", 400], ['false', 400],
    ['200', 200], ['204', 204], ['302', 302], ['401', 401], ["'403'", 403], ['599', 599],
    ['1.5', /status 1.5 is not an HTTP status/], ['99', /status 99 is not/], ['100', /status 100 is not/], ['199', /status 199 is not/],
    ['-1', /status -1 is not/], ['600', /status 600 is not/], ['1000', /status 1000 is not/], ['1e21', /status 1e\+21 is not/],
    ['Infinity', /status Infinity is not/], ['403.5', /status 403.5 is not/], ["'abc'", /status "abc" is not/], ["'0'", /status "0" is not/],
    ["' 403'", /status " 403" is not/], ['true', /status true is not/], ['{}', /status object is not/], ['[403]', /status object is not/],
  ];
  test('cancel(message, status) for a table of statuses, with plans and in the isolate', async () => {
    const runtimes = [setup({ staticPlans: true }), setup({ staticPlans: false })];
    for (const [status, expected] of STATUSES) {
      const sources = [`cancel('no', ${status});`, `cancelIf(true, 'no', ${status});`, `cancelUnless(false, 'no', ${status});`, `var s = ${status}; cancel('no', s);`];
      for (const [i, { exec }] of runtimes.entries()) {
        for (const source of sources) {
          const outcome = await exec(source).then(
            (r) => r.cancelled,
            (err: Error) => err.message,
          );
          const what = `${source} (${i === 0 ? 'plans' : 'isolate'})`;
          if (typeof expected === 'number') expect(outcome, what).toEqual({ message: 'no', status: expected });
          else expect(outcome, what).toMatch(new RegExp(`^cancel(If|Unless)?\\(\\): the ${expected.source}`));
        }
      }
    }
  }, 120_000);

  test('Script API names and implicit globals written with unicode escapes or letters beyond ASCII work as JavaScript says (issue 38 item 8)', async () => {
    for (const staticPlans of [true, false]) {
      const { exec } = setup({ staticPlans });
      const hidden = await exec("\\u0068ide('secret'); \\u{75}nhide('x');", { thisObj: { secret: 1, x: 2 }, hidden: ['x'] });
      expect(hidden.hidden).toEqual(['secret']);
      const globals = await exec('caf\\u00e9 = 1; café += 1; ä = café; this.sum = \\u00e4 + caf\\u{e9};');
      expect(globals.thisObj).toEqual({ sum: 4 });
      expect((await exec("c\\u0061ncelIf(true, 'no', 401);")).cancelled).toEqual({ message: 'no', status: 401 });
    }
  });

  test('an invalid status is an error the script may catch; a cancel the script caught stays the first one', async () => {
    const { exec } = shared();
    expect((await exec("try { cancel('no', 0.5); } catch (e) { this.caught = e instanceof TypeError; }")).thisObj).toEqual({ caught: true });
    expect((await exec("try { cancel('first', 401); } catch (e) {} cancel('second', 1.5);")).cancelled).toEqual({ message: 'first', status: 401 });
  });

  test('error collects messages and the script continues', async () => {
    const { exec } = shared();
    const result = await exec(`
      error('title', 'required');
      errorIf(this.n < 0, 'n', 'negative');
      errorIf(false, 'never', 'x');
      errorUnless(this.email, 'email', 'missing');
      errorUnless(true, 'never2', 'x');
      this.reached = true;
    `, { thisObj: { n: -1 } });
    expect(result.errors).toEqual({ title: 'required', n: 'negative', email: 'missing' });
    expect(result.thisObj.reached).toBe(true);
    expect(result.cancelled).toBeUndefined();
  });

  test('hide and protect list properties once each, in call order', async () => {
    const { exec } = shared();
    const result = await exec("hide('secret'); hide('secret'); hide('b'); protect('owner'); protect('createdAt');");
    expect(result.hidden).toEqual(['secret', 'b']);
    expect(result.protected).toEqual(['owner', 'createdAt']);
  });

  test('after protect(), this reads the stored value (Deployd); without previous the property is gone', async () => {
    const { exec } = shared();
    const put = await exec("this.message = 'new'; protect('message'); protect('tags'); this.tags.push('x'); this.seen = this.message;", {
      thisObj: { message: 'new', tags: ['a', 'b'] },
      locals: { previous: { message: 'stored', tags: ['a'] } },
    });
    expect(put.thisObj).toEqual({ message: 'stored', tags: ['a', 'x'], seen: 'stored' });
    const post = await exec("protect('message'); this.seen = typeof this.message;", { thisObj: { message: 'client' }, locals: { previous: {} } });
    expect(post.thisObj).toEqual({ seen: 'undefined' });
  });

  test('hasErrors tells whether error() reported anything', async () => {
    const { exec } = shared();
    const result = await exec("this.before = hasErrors(); errorIf(!this.title, 'title', 'is required'); this.after = hasErrors(); if (hasErrors()) cancel('bad input');", { thisObj: {} });
    expect(result.thisObj).toMatchObject({ before: false, after: true });
    expect(result.cancelled).toEqual({ message: 'bad input', status: 400 });
  });

  test('changed compares this with previous by deep equality', async () => {
    const { exec } = shared();
    const source = `this.res = ['title', 'tags', 'meta', 'same', 'added'].map(function (p) { return changed(p); });`;
    const result = await exec(source, {
      thisObj: { title: 'b', tags: ['x', 'y'], meta: { a: 1 }, same: { a: [1, { b: 2 }] }, added: 1 },
      locals: { previous: { title: 'a', tags: ['x'], meta: { a: 2 }, same: { a: [1, { b: 2 }] } } },
    });
    expect(result.thisObj.res).toEqual([true, true, true, false, true]);
  });

  test('changed is false when no previous is given', async () => {
    const { exec } = shared();
    expect((await exec("this.c = changed('title')", { thisObj: { title: 'x' } })).thisObj.c).toBe(false);
  });

  test('locals are variables: me, isMe, query, internal, isRoot, ctx and any other key', async () => {
    const { exec } = shared();
    const result = await exec(
      'this.out = [me.id, isMe("u1"), isMe("u2"), query.id, internal, isRoot, ctx.method, url, parts.length, custom];',
      { locals: { me: { id: 'u1' }, query: { id: 't1' }, internal: false, isRoot: true, ctx: { method: 'GET' }, url: '/a/b', parts: ['a', 'b'], custom: 7 } },
    );
    expect(result.thisObj.out).toEqual(['u1', true, false, 't1', false, true, 'GET', '/a/b', 2, 7]);
  });

  test('the standard locals are declared even when not given, and isMe is false without me', async () => {
    const { exec } = shared();
    const result = await exec(
      'this.out = [typeof me, typeof previous, typeof query, typeof fileName, isMe(undefined)]; if (me) cancel("x");',
      { locals: { me: undefined } },
    );
    expect(result.thisObj.out).toEqual(['undefined', 'undefined', 'undefined', 'undefined', false]);
  });

  test('setResult sets the result; without it setResultCalled is absent', async () => {
    const { exec } = shared();
    expect(await exec("setResult({ ok: true, n: body.n + 1 })", { locals: { body: { n: 1 } } })).toMatchObject({
      result: { ok: true, n: 2 },
      setResultCalled: true,
    });
    expect(await exec("setResult('text')")).toMatchObject({ result: 'text', setResultCalled: true });
    expect((await exec('1')).setResultCalled).toBeUndefined();
  });

  test('console.log/info/warn/error are formatted and prefixed by the label', async () => {
    const { exec, lines } = setup();
    await exec("console.log('hi', 1, { a: [1] }, null, undefined); console.warn('careful'); console.error(new Error('bad')); console.info('i');", {
      label: 'todos On Post',
    });
    expect(lines[0]).toBe('[todos On Post] hi 1 {"a":[1]} null undefined');
    expect(lines[1]).toBe('[todos On Post] warn: careful');
    expect(lines[2]).toMatch(/^\[todos On Post\] error: Error: bad/);
    expect(lines[3]).toBe('[todos On Post] i');
  });

  test('console lines are delivered before the run resolves, also after awaiting a host call', async () => {
    const { exec, lines } = setup();
    await exec("console.log('a'); await ping(); console.log('b');", { host: { ping: () => 1 } });
    expect(lines).toEqual(['a', 'b']);
  });

  test('host functions are variables; emit is called with copied arguments', async () => {
    const { exec } = shared();
    const calls: unknown[][] = [];
    await exec("emit('todos:create', this); emit(me, { id: 1 }, 'hello', { x: [1, 2] });", {
      thisObj: { id: 't1' },
      locals: { me: { id: 'u1' } },
      host: { emit: (...args) => void calls.push(args) },
    });
    expect(calls).toEqual([['todos:create', { id: 't1' }], [{ id: 'u1' }, { id: 1 }, 'hello', { x: [1, 2] }]]);
  });

  test('top-level return ends the script normally', async () => {
    const { exec } = shared();
    expect((await exec('this.a = 1; if (true) return; this.b = 2;')).thisObj).toEqual({ a: 1 });
  });
});
