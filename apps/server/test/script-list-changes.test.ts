import { describe, expect, it } from 'vitest';
import { appStores, seededApp } from './helpers/app.js';

// Issue 21 (performance): a list whose On Get names every property of `this` it uses
// (`this.<name>`) sends the script only those values and gets back each run's changes, which are
// spliced into the stored objects' texts (the `columns` plan: findTexts + CollectionEventRunner.getColumns,
// packages/core/src/resources/storedChanges.ts). The answer must be, byte for byte, what the usual
// path answers: GET by id with a query copies the object, runs the script on it and serialises it.

const files = {
  // A long time limit: on a loaded machine the script processes (lowest priority) may wait seconds.
  'app.json': { scripts: { timeoutMs: 20_000 } },
  'resources/items/config.json': {
    type: 'Collection',
    properties: { kind: { type: 'string' }, n: { type: 'number' }, tags: { type: 'array' }, label: { type: 'string' }, note: { type: 'string' }, meta: { type: 'object' } },
  },
  'resources/items/get.js': `
    this.seen = String(this.kind).length > 0;
    if (this.kind === 'cancel') cancel('not in lists');
    if (this.kind === 'throw') throw 'thrown';
    if (this.kind === 'change') { this.n = this.n + 1; }
    if (this.kind === 'same') { this.n = this.n; this.tags = this.tags; }
    if (this.kind === 'nested') { this.meta = { a: [1, 'two', null, { deep: true }], q: 'quote " and \\u2028 and é' }; this.tags.push('z'); }
    if (this.kind === 'delete') { delete this.tags; }
    if (this.kind === 'delete-first') { delete this.id; }
    if (this.kind === 'delete-all') { delete this.id; delete this.kind; delete this.n; delete this.seen; }
    if (this.kind === 'hide') { hide('tags'); hide('note'); }
    if (this.kind === 'hide-set') { this.label = 'set'; hide('label'); hide('seen'); }
    if (this.kind === 'hide-first') { hide('id'); this.kind = 'first hidden'; }
    if (this.kind === 'set-id') { this.id = 'other'; }
    if (this.kind === 'label') { this.label = 'x' + this.n; }
    if (this.kind === 'undef') { this.label = undefined; this.note = 'n'; }
  `,
};

const seeds: Record<string, unknown>[] = [
  { kind: 'none', n: 1 },
  { kind: 'cancel', n: 2 },
  { kind: 'throw', n: 3 },
  { kind: 'change', n: 4, tags: ['a'] },
  { kind: 'same', n: 5, tags: ['a', { b: 1 }] },
  { kind: 'nested', n: 6, tags: ['x'], meta: { old: true } },
  { kind: 'delete', n: 7, tags: ['b', 'c'], note: 'after tags' },
  { kind: 'delete-first', n: 8 },
  { kind: 'delete-all', n: 9 },
  { kind: 'hide', n: 10, tags: ['d'], note: 'hidden' },
  { kind: 'hide-set', n: 11, label: 'was' },
  { kind: 'hide-first', n: 12 },
  { kind: 'set-id', n: 13 },
  { kind: 'label', n: 14 },
  { kind: 'label', n: 15, label: 'old' },
  // "label" and "tags" occur in the stored text below the top: found by reading the members.
  { kind: 'label', n: 16, meta: { label: 'inner', tags: [1] }, note: 'a "label": in a string' },
  { kind: 'hide', n: 17, meta: { tags: 'inner' }, tags: ['e'], note: '"note":' },
  { kind: 'undef', n: 18, label: 'gone' },
  { kind: 'none', n: 19, note: 'stored "text" \u2029 é' },
];

describe.each(appStores())('On Get over a list as changes to the stored texts (%s)', (store) => {
  const { ids, text } = seededApp(files, store, '/items', seeds);
  /** What the usual path answers for object i: read by id with a query, the object serialised. */
  const usual = (i: number): Promise<{ status: number; text: string }> => text(`/items/${ids[i]}?n=${seeds[i]?.n as number}`);

  it('is, byte for byte, what serialising each object answers; cancelled and thrown objects left out', async () => {
    const list = await text('/items');
    expect(list.status, list.text).toBe(200);
    const one: string[] = [];
    for (let i = 0; i < seeds.length; i++) {
      const res = await usual(i);
      if (seeds[i]?.kind === 'cancel' || seeds[i]?.kind === 'throw') {
        expect(res.status).toBe(400);
        continue;
      }
      expect(res.status, res.text).toBe(200);
      one.push(res.text);
    }
    expect(list.text).toBe(`[${one.join(',')}]`);
  });

  it('each kind of change comes out as the script left the object', async () => {
    const list = JSON.parse((await text('/items')).text) as Record<string, unknown>[];
    const at = (i: number): Record<string, unknown> | undefined => list.find((o) => (o.id === undefined || o.id === 'other' ? o.n === seeds[i]?.n : o.id === ids[i]));
    expect(at(0)).toEqual({ id: ids[0], kind: 'none', n: 1, seen: true });
    expect(at(1)).toBeUndefined();
    expect(at(2)).toBeUndefined();
    expect(Object.keys(at(3) as object)).toEqual(['id', 'kind', 'n', 'tags', 'seen']);
    expect(at(3)).toMatchObject({ n: 5 });
    expect(at(5)).toMatchObject({ tags: ['x', 'z'], meta: { a: [1, 'two', null, { deep: true }], q: 'quote " and \u2028 and é' } });
    expect(at(6)).toEqual({ id: ids[6], kind: 'delete', n: 7, note: 'after tags', seen: true });
    expect(at(7)).toEqual({ kind: 'delete-first', n: 8, seen: true });
    expect(at(8)).toBeUndefined();
    expect(list).toContainEqual({});
    expect(at(9)).toEqual({ id: ids[9], kind: 'hide', n: 10, seen: true });
    expect(at(10)).toEqual({ id: ids[10], kind: 'hide-set', n: 11 });
    expect(at(11)).toEqual({ kind: 'first hidden', n: 12, seen: true });
    expect(list.find((o) => o.kind === 'set-id')).toEqual({ id: 'other', kind: 'set-id', n: 13, seen: true });
    expect(at(15)).toMatchObject({ label: 'x16', meta: { label: 'inner', tags: [1] } });
    expect(at(16)).toEqual({ id: ids[16], kind: 'hide', n: 17, meta: { tags: 'inner' }, seen: true });
    expect(at(17)).toEqual({ id: ids[17], kind: 'undef', n: 18, note: 'n', seen: true });
  });

  it('a sorted and paged list is answered the same way', async () => {
    const page = await text('/items?$sort={"n":-1}&$limit=5&$skip=2');
    expect(page.status).toBe(200);
    const shown = (JSON.parse(page.text) as { n: number }[]).map((o) => o.n);
    expect(shown).toEqual([17, 16, 15, 14, 13]);
    const one: string[] = [];
    for (const n of shown) one.push((await usual(seeds.findIndex((s) => s.n === n))).text);
    expect(page.text).toBe(`[${one.join(',')}]`);
  });
});
