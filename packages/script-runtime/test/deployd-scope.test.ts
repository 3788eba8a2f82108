import { describe, expect, test } from 'vitest';
import { ScriptRuntimeError } from '@svc/script-runtime';
import { shared } from './helpers.js';

// Issue 22: Deployd 1.2 semantics of a script's names, protect() and ctx.query.

/** The three ways a run executes: synchronous (shared scope), deferred (await), with host functions (Proxy scope). */
const modes = [
  ['sync', (source: string) => source, undefined],
  ['deferred', (source: string) => `await null;\n${source}`, undefined],
  ['with host', (source: string) => source, { ping: () => 1 }],
] as const;

describe.each(modes)('undeclared names (%s run)', (_mode, wrap, host) => {
  test('reading a name declared nowhere throws a ReferenceError, as in JavaScript', async () => {
    const { exec } = shared();
    const run = exec(wrap('this.before = 1;\nif (coordinate) { this.after = 1; }'), host ? { host } : {});
    await expect(run).rejects.toBeInstanceOf(ScriptRuntimeError);
    await expect(run).rejects.toThrow(/coordinate is not defined/);
  });

  test('typeof of an undeclared name, implicit globals and the script globals still work', async () => {
    const { exec } = shared();
    const result = await exec(
      wrap(`
        this.t = typeof coordinate;
        if (typeof cache === 'undefined') cache = 1;
        count = 2; count++;
        for (key in { a: 1 }) {}
        this.cache = cache; this.count = count; this.key = key;
        this.me = me === undefined && previous === undefined && typeof query;
        this.api = typeof cancel + typeof protect + typeof unprotect + typeof unhide;
        this.math = Math.max(1, 2);
      `),
      { locals: { query: {} }, ...(host ? { host } : {}) },
    );
    expect(result.thisObj).toEqual({ t: 'undefined', cache: 1, count: 3, key: 'a', me: 'object', api: 'functionfunctionfunctionfunction', math: 2 });
  });

  test('a local declared for one run only is a variable there and undefined-by-typeof elsewhere', async () => {
    const { runtime } = shared();
    const script = runtime.compile(wrap("this.v = typeof event === 'undefined' ? 'none' : event;"), 'test/event.js');
    const withEvent = await runtime.run(script, { thisObj: {}, locals: { event: 'GET' }, ...(host ? { host } : {}) });
    const without = await runtime.run(script, { thisObj: {}, locals: {}, ...(host ? { host } : {}) });
    expect([withEvent.thisObj.v, without.thisObj.v]).toEqual(['GET', 'none']);
  });
});

describe('protect() (Deployd 1.2)', () => {
  const previous = { owner: 'ann', tags: ['a'], id: 'x1' };

  test('after protect(p), this.p reads the stored value and assigning it throws a catchable TypeError', async () => {
    const { exec } = shared();
    const result = await exec(
      `
      protect('owner');
      this.read = this.owner;
      try { this.owner = 'eve'; } catch (e) { this.err = (e instanceof TypeError) + ' ' + e.message; }
      try { Object.assign(this, { owner: 'eve' }); } catch (e) { this.assignErr = e.name; }
      this.after = this.owner;
      `,
      { thisObj: { owner: 'eve' }, locals: { previous } },
    );
    expect(result.thisObj).toMatchObject({ read: 'ann', err: "true Cannot modify protected property 'owner'", assignErr: 'TypeError', after: 'ann', owner: 'ann' });
    expect(result.protected).toEqual(['owner']);
  });

  test('on create (no stored value) a protected property reads undefined', async () => {
    const { exec } = shared();
    const result = await exec("protect('owner'); this.t = typeof this.owner; try { this.owner = 'x'; } catch (e) { this.threw = true; }", {
      thisObj: { owner: 'client' },
      locals: { previous: {} },
    });
    expect(result.thisObj).toEqual({ t: 'undefined', threw: true });
  });

  test('an uncaught assignment to a protected property fails the run', async () => {
    const { exec } = shared();
    await expect(exec("protect('owner'); this.owner = 'x';", { thisObj: {}, locals: { previous } })).rejects.toThrow(/Cannot modify protected property 'owner'/);
  });

  test('defineProperty, delete and prototype tricks change this in the run, but the property stays listed as protected', async () => {
    const { exec } = shared();
    const result = await exec(
      `
      protect('owner');
      Object.defineProperty(this, 'owner', { value: 'eve', enumerable: true, writable: true, configurable: true });
      this.seen = this.owner;
      protect('tags');
      delete this.tags;
      Object.setPrototypeOf(this, { owner: 'proto' });
      `,
      { thisObj: { owner: 'ann', tags: ['a'] }, locals: { previous } },
    );
    expect(result.protected).toEqual(['owner', 'tags']);
    expect(result.thisObj.seen).toBe('eve');
  });

  test('unprotect(p) makes p a plain property again, with the value it read; unhide(p) undoes hide(p)', async () => {
    const { exec } = shared();
    const result = await exec(
      "protect('owner'); protect('tags'); unprotect('owner'); this.owner = this.owner + '!'; hide('a'); hide('b'); unhide('a'); unprotect('never');",
      { thisObj: { owner: 'eve', tags: ['b'] }, locals: { previous } },
    );
    expect(result.thisObj).toEqual({ owner: 'ann!', tags: ['a'] });
    expect(result.protected).toEqual(['tags']);
    expect(result.hidden).toEqual(['b']);
  });

  test("Deployd's toggle: protect(p, false) and hide(p, false) undo", async () => {
    const { exec } = shared();
    const result = await exec("protect('owner'); protect('owner', false); this.owner = 'x'; hide('a'); hide('a', false); hide('b', true);", {
      thisObj: { owner: 'eve' },
      locals: { previous },
    });
    expect(result.thisObj.owner).toBe('x');
    expect([result.protected, result.hidden]).toEqual([[], ['b']]);
  });

  test('properties protected and hidden from the start of the run (an earlier event, id on update)', async () => {
    const { exec } = shared();
    const result = await exec(
      `
      this.read = this.id;
      try { this.id = 'other'; } catch (e) { this.err = e.message; }
      unhide('secret'); hide('more');
      `,
      { thisObj: { id: 'x1', secret: 's' }, protected: ['id'], hidden: ['secret', 'kept'] },
    );
    expect(result.thisObj).toEqual({ id: 'x1', secret: 's', read: 'x1', err: "Cannot modify protected property 'id'" });
    expect(result.protected).toEqual(['id']);
    expect(result.hidden).toEqual(['kept', 'more']);
  });

  test('start lists in a batch apply to their own run only', async () => {
    const { runtime } = shared();
    const script = runtime.compile("try { this.id = 'z'; this.ok = true; } catch (e) { this.ok = false; }", 'test/batch-start.js');
    const results = await runtime.runBatch(script, [
      { thisObj: { id: 'a' }, locals: {}, protected: ['id'] },
      { thisObj: { id: 'b' }, locals: {} },
    ]);
    expect(results.map((r) => [r.thisObj.id, r.thisObj.ok, r.protected])).toEqual([
      ['a', false, ['id']],
      ['z', true, []],
    ]);
  });
});

describe('ctx.query is query, ctx.body is body', () => {
  test.each([
    ['sync', ''],
    ['deferred', 'await null;'],
  ])('one object each (%s run)', async (_mode, prefix) => {
    const { exec } = shared();
    const result = await exec(`${prefix} ctx.query.$limit = 1; body.extra = true; this.same = ctx.query === query && ctx.body === body; setResult([query, ctx.body]);`, {
      locals: { query: { a: 1 }, body: { b: 2 }, ctx: { method: 'GET', headers: {} } },
    });
    expect(result.thisObj.same).toBe(true);
    expect(result.result).toEqual([{ a: 1, $limit: 1 }, { b: 2, extra: true }]);
  });
});
