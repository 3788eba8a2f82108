import { describe, expect, test } from 'vitest';
import { RunBudget, ScriptInputError, ScriptRuntimeError, ScriptTimeoutError } from '@svc/script-runtime';
import { MAX_PLAN_SOURCE, planScript } from '../src/internal/static-plan.js';
import { setup } from './helpers.js';

// Static plans: which scripts are planned (the whitelist), what is refused and why, and runs
// that must decline to the isolate. static-plan-differential.test.ts checks that planned runs
// answer exactly what the isolate answers.

const refusal = (source: string): string | undefined => {
  const outcome = planScript(source);
  return 'refused' in outcome ? outcome.refused : undefined;
};

describe('the static subset', () => {
  test.each([
    'this.seen = true;',
    "if (!me) cancel('login first', 401);",
    "if (!me || !isMe(this.owner)) { hide('secret'); hide('email'); }",
    "cancelUnless(me && (me.role === 'admin' || isRoot), 'admins only', 403);",
    "if (internal) return; if (this.owner !== me.id) cancel('not yours', 403); else unhide('notes');",
    "errorIf(!this.title, 'title', 'required'); errorUnless(this.done === true || this.done === false, 'done', 'a boolean');",
    "this.tags = ['a', 1, -2.5, null, { k: [true] }]; this.meta = { 'x y': 1, n: { m: 'v' } };",
    "error('title', 'bad'); cancel();",
    "if (query.all === 'yes' && previous.owner !== undefined) cancelIf(this.a.b, 'no'); ;",
    "this.prototype = 1; this['ä'] = 2;".replace("this['ä']", 'this.ä'),
  ])('planned: %s', (source) => {
    expect(refusal(source)).toBeUndefined();
    const { runtime } = setup();
    expect(runtime.compile(source, 'planned.js').planned).toBe(true);
  });

  test.each([
    // Prototype pollution and inherited names: never read or written.
    ['this.__proto__ = { isAdmin: true };', /this.__proto__/],
    ['this.constructor = 1;', /this.constructor/],
    ['this.toString = 1;', /this.toString/],
    ['this.x = { __proto__: { isAdmin: true } };', /__proto__ key/],
    ['this.x = { "__proto__": 1 };', /__proto__ key/],
    ["error('__proto__', 'x');", /error key __proto__/],
    ["error('constructor', 'x');", /error key constructor/],
    ["if (me.constructor) cancel('x');", /read of .constructor/],
    ["if (this.hasOwnProperty) cancel('x');", /read of .hasOwnProperty/],
    // Anything but this.<name> = <JSON literal>.
    ["this['x'] = 1;", /assignment to anything but this/],
    ['this.x = me;', /not a JSON literal/],
    ['me.id = 1;', /assignment to anything but this/],
    ['this.x += 1;', /operator \+=/],
    ['x = 1;', /assignment to anything but this/],
    ['this.x.y = 1;', /assignment to anything but this/],
    ['this.x = { [k]: 1 };', /key: value/],
    ['this.x = { ...o };', /key: value/],
    ['this.x = { a };', /key: value/],
    ['this.x = { f() {} };', /key: value/],
    ['this.x = { get a() { return 1; } };', /key: value/],
    ['this.x = [1, , 2];', /hole/],
    ['this.x = [...a];', /spread/],
    ['this.x = 1e400;', /not finite/],
    ['this.x = /a/;', /regular expression/],
    ['this.x = 1n;', /BigInt/],
    ['this.x = `t`;', /TemplateLiteral/],
    ['this.x = undefined;', /Identifier/],
    ['this.x = +1;', /UnaryExpression/],
    // Calls: only the Script API functions of the subset, with literal arguments.
    ['emit("x");', /call of emit/],
    ["protect('x');", /call of protect/],
    ["console.log('x');", /call of anything but/],
    ['hide(name);', /not a string literal/],
    ["hide('x', false);", /hide\(\) with 2 arguments/],
    ['cancel(message);', /message that is not a literal/],
    ["cancel('x', 1.5);", /status that is not an HTTP status/],
    ["cancel('x', 99);", /status that is not an HTTP status/],
    ["cancel('x', 600);", /status that is not an HTTP status/],
    ["cancel('x', -1);", /status that is not an HTTP status/],
    ["cancel('x', 'abc');", /status that is not an HTTP status/],
    ["cancel('x', true);", /status that is not an HTTP status/],
    ["cancel('x', s);", /status that is not a literal/],
    ["cancelIf(check(), 'x');", /isMe/],
    ['isMe(this.owner);', /call of isMe/],
    // Conditions: only strict equality, !, && and || over the listed variables.
    ["if (me == null) cancel('x');", /operator ==/],
    ["if (me ?? query) cancel('x');", /operator \?\?/],
    ["if (me?.id) cancel('x');", /ChainExpression/],
    ["if (typeof me === 'undefined') cancel('x');", /operator typeof/],
    ["if (this[k]) cancel('x');", /\.<name>/],
    ["if (ctx.method === 'GET') cancel('x');", /variable ctx/],
    ["if (body) cancel('x');", /variable body/],
    ["if (me ? 1 : 0) cancel('x');", /ConditionalExpression/],
    ["if (this.n > 5) cancel('x');", /operator >/],
    // Statements: no declarations, loops, exceptions, awaits or directives.
    ["'use strict'; this.x = 1;", /directive/],
    ['var x = 1;', /VariableDeclaration/],
    ['function f() {}', /FunctionDeclaration/],
    ['for (;;) {}', /ForStatement/],
    ["while (me) cancel('x');", /WhileStatement/],
    ["throw 'x';", /ThrowStatement/],
    ['try { this.x = 1; } catch (e) {}', /TryStatement/],
    ['return 1;', /return with a value/],
    ['await 1;', /expression statement/],
    ['this.x = 1, this.y = 2;', /SequenceExpression/],
    ['label: this.x = 1;', /LabeledStatement/],
    ["with (me) cancel('x');", /WithStatement/],
  ])('refused: %s', (source, reason) => {
    expect(refusal(source)).toMatch(reason);
  });

  test('a source over the size cap, or nested too deeply, is refused', () => {
    expect(refusal(`${'this.x = 1;'.padEnd(MAX_PLAN_SOURCE, ' ')}\n`)).toMatch(/longer than/);
    expect(refusal(`if (${'!'.repeat(40)}me) cancel('x');`)).toMatch(/nested too deeply/);
    expect(refusal(`this.x = ${'['.repeat(40)}${']'.repeat(40)};`)).toMatch(/nested too deeply/);
  });

  test('a refused script still runs, in a script process', async () => {
    const { runtime } = setup({ isolates: 1 });
    const script = runtime.compile("var who = me ? me.id : 'nobody'; this.by = who;", 'refused.js');
    expect(script.planned).toBe(false);
    expect((await runtime.run(script, { thisObj: {}, locals: { me: { id: 'u1' } } })).thisObj).toEqual({ by: 'u1' });
    expect(runtime.stats()).toMatchObject({ runs: 1, planned: 0 });
  });

  test('staticPlans: false plans nothing', () => {
    const { runtime } = setup({ staticPlans: false });
    expect(runtime.compile('this.seen = true;', 'off.js').planned).toBe(false);
  });
});

describe('planned runs', () => {
  const GUARD = "if (!me) cancel('login first', 401);\nif (!isMe(this.owner)) hide('secret');\nthis.seen = true;";

  test('are answered without a script process: also while the only one is stopped', async () => {
    const { runtime, exec } = setup({ isolates: 1, staticPlans: true });
    // Start the process with a script outside the subset, then stop it.
    await exec('var warm = 1;');
    const [pid] = runtime.processIds();
    process.kill(pid as number, 'SIGSTOP');
    try {
      const script = runtime.compile(GUARD, 'todos/get.js');
      const me = { id: 'u1' };
      const mine = { id: 't1', owner: 'u1', secret: 's' };
      const theirs = { id: 't2', owner: 'u2', secret: 's' };
      const one = await runtime.run(script, { thisObj: mine, locals: { me } });
      expect(one).toEqual({ thisObj: { id: 't1', owner: 'u1', secret: 's', seen: true }, hidden: [], protected: [], assigned: ['seen'] });
      expect(one.thisObj).not.toBe(mine);
      expect(mine).toEqual({ id: 't1', owner: 'u1', secret: 's' });
      expect(await runtime.run(script, { thisObj: theirs, locals: { me: undefined } })).toMatchObject({ cancelled: { message: 'login first', status: 401 }, hidden: [] });
      const objects = [{ ...mine }, { ...theirs }];
      const list = await runtime.runEach(script, { locals: { me } }, objects, { inPlace: true });
      expect(list.map((r) => r.hidden)).toEqual([[], ['secret']]);
      expect(list[1]?.thisObj).toBe(objects[1]);
      expect(objects[1]).toEqual({ ...theirs, seen: true });
      expect(runtime.stats()).toMatchObject({ runs: 4, planned: 3 });
    } finally {
      process.kill(pid as number, 'SIGCONT');
    }
  }, 20_000);

  test('a run the plan does not model goes to the isolate, which answers: me.id with me undefined', async () => {
    const { runtime } = setup({ isolates: 1 });
    const script = runtime.compile("if (this.owner !== me.id) cancel('not yours', 403);", 'owner.js');
    expect(script.planned).toBe(true);
    expect(await runtime.run(script, { thisObj: { owner: 'u1' }, locals: { me: { id: 'u1' } } })).not.toHaveProperty('cancelled');
    await expect(runtime.run(script, { thisObj: { owner: 'u1' }, locals: {} })).rejects.toThrow(ScriptRuntimeError);
    await expect(runtime.run(script, { thisObj: { owner: 'u1' }, locals: {} })).rejects.toThrow(/Cannot read properties of undefined \(reading 'id'\)/);
    expect(runtime.stats()).toMatchObject({ runs: 3, planned: 1 });
  });

  test('an assignment to a protected property goes to the isolate (a TypeError there)', async () => {
    const { runtime } = setup({ isolates: 1 });
    const script = runtime.compile('this.owner = "me";', 'p.js');
    await expect(runtime.run(script, { thisObj: { owner: 'u1' }, locals: {}, protected: ['owner'] })).rejects.toThrow(/Cannot modify protected property 'owner'/);
    expect(await runtime.run(script, { thisObj: { owner: 'u1' }, locals: {}, protected: ['id'] })).toMatchObject({ thisObj: { owner: 'me' }, protected: ['id'] });
    expect(runtime.stats()).toMatchObject({ runs: 2, planned: 1 });
  });

  test('a host function named like a variable the plan reads is what the script sees', async () => {
    const { runtime } = setup({ isolates: 1 });
    const script = runtime.compile("if (me) cancel('someone');", 'shadow.js');
    // The isolate gives the host function, which is truthy; the plan must not answer with locals.me.
    const result = await runtime.run(script, { thisObj: {}, locals: {}, host: { me: () => 1 } });
    expect(result.cancelled).toEqual({ message: 'someone', status: 400 });
    expect(runtime.stats()).toMatchObject({ runs: 1, planned: 0 });
  });

  test('values that do not cross as themselves go to the isolate: NaN is null there', async () => {
    const { runtime } = setup({ isolates: 1 });
    const script = runtime.compile("if (this.n === null) hide('n');", 'nan.js');
    expect((await runtime.run(script, { thisObj: { n: Number.NaN }, locals: {} })).hidden).toEqual(['n']);
    expect((await runtime.run(script, { thisObj: { n: null }, locals: {} })).hidden).toEqual(['n']);
    expect(runtime.stats()).toMatchObject({ runs: 2, planned: 1 });
  });

  test('a spent or cancelled request budget fails a planned script as it fails any other', async () => {
    const { runtime } = setup({ isolates: 1 });
    const script = runtime.compile('this.seen = true;', 'seen.js');
    const budget = new RunBudget({ cpuMs: 1000, wallMs: 60_000 });
    budget.cancel('the client went away');
    await expect(runtime.run(script, { thisObj: {}, locals: {}, budget })).rejects.toThrow(ScriptTimeoutError);
    await expect(runtime.runEach(script, { locals: {}, budget }, [{}, {}])).rejects.toThrow(/the client went away/);
  });

  test('request data nested too deeply is refused as before', async () => {
    const { runtime } = setup({ isolates: 1 });
    let deep: unknown = 1;
    for (let i = 0; i < 70; i++) deep = { deep };
    const script = runtime.compile("if (!me) cancel('x');", 'deep.js');
    await expect(runtime.run(script, { thisObj: {}, locals: { me: deep } })).rejects.toThrow(ScriptInputError);
  });

  test('objects with the same changes share one assigned list, as the isolate path hands out', async () => {
    const { runtime } = setup({ isolates: 1 });
    const script = runtime.compile("this.seen = true; if (this.n === 2) this.two = 'yes';", 'seen.js');
    const list = await runtime.runEach(script, { locals: {} }, [{ n: 1 }, { n: 3 }, { n: 2 }, { n: 2 }, { n: 4, seen: true }], { inPlace: true });
    expect(list.map((r) => r.assigned)).toEqual([['seen'], ['seen'], ['seen', 'two'], ['seen', 'two'], undefined]);
    expect(list[1]?.assigned).toBe(list[0]?.assigned);
    expect(list[3]?.assigned).toBe(list[2]?.assigned);
  });

  test('results are fresh: changing one does not change the next', async () => {
    const { runtime } = setup({ isolates: 1 });
    const script = runtime.compile("this.tags = ['a']; error('x', 'bad');", 'fresh.js');
    const [a, b] = await runtime.runEach(script, { locals: {} }, [{}, {}]);
    (a?.thisObj.tags as string[]).push('b');
    expect(b?.thisObj.tags).toEqual(['a']);
    expect(a?.errors).not.toBe(b?.errors);
  });

  test('runNow answers at once what run() answers, or undefined when run() must answer', async () => {
    const { runtime } = setup({ isolates: 1 });
    const guard = runtime.compile(GUARD, 'todos/get.js');
    const mine = { id: 't1', owner: 'u1', secret: 's' };
    const now = runtime.runNow(guard, { thisObj: mine, locals: { me: { id: 'u1' } } });
    expect(now).toEqual(await runtime.run(guard, { thisObj: mine, locals: { me: { id: 'u1' } } }));
    expect(mine).toEqual({ id: 't1', owner: 'u1', secret: 's' });
    expect(guard.constant).toBe(false);
    // Not modelled (a property of undefined): undefined, and no run is counted.
    const owner = runtime.compile("if (this.owner !== me.id) cancel('not yours', 403);", 'owner.js');
    expect(runtime.runNow(owner, { thisObj: { owner: 'u1' }, locals: {} })).toBeUndefined();
    // Outside the subset: undefined.
    const unplanned = runtime.compile('var unplanned;\nthis.seen = true;', 'unplanned.js');
    expect(unplanned.planned).toBe(false);
    expect(runtime.runNow(unplanned, { thisObj: {}, locals: {} })).toBeUndefined();
    // A spent budget: run() rejects, so runNow leaves it to run().
    const budget = new RunBudget({ cpuMs: 1000, wallMs: 60_000 });
    budget.cancel('gone');
    const seen = runtime.compile('this.seen = true;', 'seen.js');
    expect(runtime.runNow(seen, { thisObj: {}, locals: {}, budget })).toBeUndefined();
    // Request data too deep: the error run() rejects with, before any run: not counted (the
    // caller's run() of it counts it; issue 38 item 8: one run per request).
    let deep: unknown = 1;
    for (let i = 0; i < 70; i++) deep = { deep };
    expect(() => runtime.runNow(guard, { thisObj: {}, locals: { me: deep } })).toThrow(ScriptInputError);
    expect(runtime.stats()).toMatchObject({ runs: 2, planned: 2 });
  });

  test('constant: planned, reading nothing and giving an object, so that every run answers the same', () => {
    const { runtime } = setup();
    expect(runtime.compile("this.seen = true; hide('secret'); this.tags = ['a'];", 'c.js').constant).toBe(true);
    expect(runtime.compile("this.seen = true; return; cancel('never', 403);", 'c.js').constant).toBe(true);
    // Every run cancels: the request's own path answers it (issue 38 item 8: counted once per GET).
    expect(runtime.compile("cancel('closed', 403);", 'c.js').constant).toBe(false);
    expect(runtime.compile("this.seen = true; error('title', 'never'); return;", 'c.js').constant).toBe(false);
    expect(runtime.compile("if (!me) cancel('login first', 401);", 'c.js').constant).toBe(false);
    expect(runtime.compile("errorIf(this.title === '', 'title', 'empty');", 'c.js').constant).toBe(false);
    expect(runtime.compile('var x; this.seen = true;', 'c.js').constant).toBe(false);
  });
});
