import { describe, expect, it } from 'vitest';
import { appStores, seededApp } from './helpers/app.js';

// Issue 21 (performance): a list with On Get is answered from the stored objects' JSON texts, with
// the properties a script added appended to them, instead of serialising every object again
// (Collection's findWithJson path, packages/core/src/resources/storedJson.ts). The answer must be,
// byte for byte, what serialising the objects answers. GET by id with no query is patched the same
// way (findOneWithJsonNow); with a query it takes the usual path and serialises its object: that
// is the reference, for every kind of change a script can make.

const files = {
  // A long time limit: on a machine loaded by other work, the script processes (lowest priority)
  // may wait seconds for a core, and the pool's watchdog would take that for a hung process.
  'app.json': { scripts: { timeoutMs: 20_000 } },
  'resources/things/config.json': {
    type: 'Collection',
    properties: { kind: { type: 'string' }, n: { type: 'number' }, tags: { type: 'array' }, mark: { type: 'string' }, note: { type: 'string' } },
  },
  'resources/things/get.js': `
    if (this.kind === 'cancel') cancel('not in lists');
    if (this.kind === 'add') { this.mark = 'yes'; this.label = 'x' + this.n; }
    if (this.kind === 'add-same') { this.mark = 'yes'; this.label = 'same'; }
    if (this.kind === 'keep') { this.n = this.n; }
    if (this.kind === 'change') { this.n = this.n + 1; this.extra = 1; }
    if (this.kind === 'delete') { delete this.tags; this.extra = 2; }
    if (this.kind === 'hide') { hide('tags'); this.extra = 3; }
    if (this.kind === 'index') { this['5'] = 'five'; this.later = 'after'; }
    if (this.kind === 'undef') { this.nothing = undefined; this.mark = 'no'; }
    if (this.kind === 'nested') { this.more = { a: [1, 'two', null, { deep: true }], q: 'quote " and \\u2028 and é' }; }
    if (this.kind === 'qid') { this.qid = query.id || null; }
    if (this.kind === 'odd-name') { this['we"ird\\nname'] = -0.5; this[''] = 'empty'; }
  `,
};

const seeds: Record<string, unknown>[] = [
  { kind: 'none', n: 1 },
  { kind: 'add', n: 2 },
  { kind: 'add', n: 3 },
  { kind: 'add', n: 3, mark: 'yes' },
  { kind: 'add', n: 4, mark: 'old' },
  { kind: 'add-same', n: 5 },
  { kind: 'add-same', n: 6, mark: 'yes' },
  { kind: 'add-same', n: 7 },
  { kind: 'cancel', n: 8 },
  { kind: 'keep', n: 9, tags: ['a'] },
  { kind: 'change', n: 10 },
  { kind: 'delete', n: 11, tags: ['b', 'c'] },
  { kind: 'hide', n: 12, tags: ['d'] },
  { kind: 'index', n: 13 },
  { kind: 'undef', n: 14 },
  { kind: 'nested', n: 15, note: 'stored "text" \u2029' },
  { kind: 'odd-name', n: 16 },
  { kind: 'add', n: 17 },
  // "label": already occurs in the stored text (not at the top): the object is serialised again.
  { kind: 'add', n: 18, tags: [{ label: 'inner' }], note: 'a "label": in a string' },
  // Sees query.id when read by id only: left out of the comparison of a list with the by-id answers.
  { kind: 'qid', n: 19 },
];

describe.each(appStores())('On Get over a list answers what serialising the objects answers (%s)', (store) => {
  const { ids, text } = seededApp(files, store, '/things', seeds);

  it('is the GET by id answers joined, in order, without the cancelled object', async () => {
    const list = await text('/things');
    expect(list.status, list.text).toBe(200);
    const shown = (JSON.parse(list.text) as { id: string; kind: string }[]).map((o) => o.id);
    const cancelled = ids[seeds.findIndex((s) => s.kind === 'cancel')];
    expect(shown).toEqual(ids.filter((id) => id !== cancelled));
    const one: string[] = [];
    for (const id of shown) {
      const res = await text(`/things/${id}`);
      expect(res.status).toBe(200);
      one.push(id === ids[19] ? JSON.stringify({ ...(JSON.parse(res.text) as object), qid: null }) : res.text);
    }
    expect(list.text).toBe(`[${one.join(',')}]`);
  });

  it('GET by id, patched, is what GET by id with a query (serialised) answers; the script sees query.id either way', async () => {
    for (const [i, seed] of seeds.entries()) {
      const fast = await text(`/things/${ids[i]}`);
      const usual = await text(`/things/${ids[i]}?kind=${seed.kind as string}`);
      expect(fast.status).toBe(usual.status);
      expect(fast.text).toBe(usual.text);
    }
    expect(JSON.parse((await text(`/things/${ids[19]}`)).text)).toMatchObject({ qid: ids[19] });
    expect((await text('/things/nosuchid')).status).toBe(404);
  });

  it('each kind of change comes out as the script left the object', async () => {
    const list = JSON.parse((await text('/things')).text) as Record<string, unknown>[];
    const at = (i: number): Record<string, unknown> | undefined => list.find((o) => o.id === ids[i]);
    expect(at(0)).toEqual({ id: ids[0], kind: 'none', n: 1 });
    expect(at(1)).toEqual({ id: ids[1], kind: 'add', n: 2, mark: 'yes', label: 'x2' });
    expect(at(3)).toEqual({ id: ids[3], kind: 'add', n: 3, mark: 'yes', label: 'x3' });
    expect(at(4)).toEqual({ id: ids[4], kind: 'add', n: 4, mark: 'yes', label: 'x4' });
    expect(at(8)).toBeUndefined();
    expect(at(9)).toEqual({ id: ids[9], kind: 'keep', n: 9, tags: ['a'] });
    expect(at(10)).toEqual({ id: ids[10], kind: 'change', n: 11, extra: 1 });
    expect(at(11)).toEqual({ id: ids[11], kind: 'delete', n: 11, extra: 2 });
    expect(at(12)).toEqual({ id: ids[12], kind: 'hide', n: 12, extra: 3 });
    expect(Object.keys(at(13) as object)[0]).toBe('5');
    expect(at(13)).toMatchObject({ 5: 'five', later: 'after' });
    expect(at(14)).toEqual({ id: ids[14], kind: 'undef', n: 14, mark: 'no' });
    expect(at(15)).toMatchObject({ more: { a: [1, 'two', null, { deep: true }], q: 'quote " and \u2028 and é' }, note: 'stored "text" \u2029' });
    expect(at(16)).toMatchObject({ 'we"ird\nname': -0.5, '': 'empty' });
    expect(at(18)).toEqual({ id: ids[18], kind: 'add', n: 18, tags: [{ label: 'inner' }], note: 'a "label": in a string', mark: 'yes', label: 'x18' });
  });

  it('a sorted and paged list is patched the same way', async () => {
    const page = await text('/things?$sort={"n":-1}&$limit=5&$skip=2');
    expect(page.status).toBe(200);
    const shown = (JSON.parse(page.text) as { id: string }[]).map((o) => o.id);
    expect(shown).toHaveLength(5);
    const one: string[] = [];
    for (const id of shown) one.push((await text(`/things/${id}`)).text);
    expect(page.text).toBe(`[${one.join(',')}]`);
  });
});
