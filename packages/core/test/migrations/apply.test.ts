import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyMigrations, readRecords, undoMigration } from '../../src/migrations/applyMigrations.js';
import { dryRunDown, dryRunUp, migrationStatus } from '../../src/migrations/migrationReport.js';
import { formatMigration, parseMigration } from '../../src/migrations/migration.js';
import type { Migration, MigrationStep } from '../../src/migrations/migration.js';
import { VALUES_COLLECTION } from '../../src/migrations/steps.js';
import { SvcError } from '../../src/errors.js';
import type { Doc, Store, StoreCollection } from '../../src/store/Store.js';
import { STORE_KINDS, openRig } from './stores.js';
import type { StoreRig } from './stores.js';

/**
 * Objects per test: fewer on MongoDB, since FerretDB v1 (what CI runs) takes ~25 ms per updated
 * object on a busy machine (300 there took this file 2 minutes; the crash tests in reliability/
 * run more).
 */
let N = 1200;
let BATCH = 100;
const rigs: StoreRig[] = [];
afterEach(async () => {
  for (const rig of rigs.splice(0)) await rig.destroy();
});

let clock = 0;
function migration(collection: string, steps: MigrationStep[], words = 'change'): Migration {
  clock++;
  return parseMigration(`20261201T1000${String(clock).padStart(2, '0')}000-${collection}-${words}`, formatMigration(collection, steps));
}

const book = (i: number): Doc => ({
  id: `b${String(i).padStart(6, '0')}`,
  title: `title ${i}`,
  // Every tenth one does not read as a number.
  pages: i % 10 === 0 ? `about ${i}` : String(i),
  ...(i % 3 === 0 ? { extra: { note: i } } : {}),
  ...(i % 4 === 0 ? { rating: i + 1 } : {}),
});

async function seed(coll: StoreCollection, n = N, make = book): Promise<Doc[]> {
  const docs = Array.from({ length: n }, (_, i) => make(i));
  if (coll.insertMany) for (let i = 0; i < docs.length; i += 500) await coll.insertMany(docs.slice(i, i + 500));
  else await Promise.all(docs.map((doc) => coll.insert(doc)));
  return docs;
}

const all = async (coll: StoreCollection): Promise<Doc[]> => coll.find({}, { sort: { id: 1 } });
const run = (store: Store, migrations: Migration[], extra: Partial<Parameters<typeof applyMigrations>[0]> = {}) => applyMigrations({ store, migrations, batch: BATCH, ...extra });

describe.each(STORE_KINDS)('migrations on the %s store', (kind) => {
  beforeEach(() => {
    N = kind === 'mongodb' ? 60 : 1200;
    BATCH = kind === 'mongodb' ? 10 : 100;
  });
  const rig = async (): Promise<StoreRig> => {
    const made = await openRig(kind);
    rigs.push(made);
    return made;
  };

  it('each kind of step, counted by the dry run, applied with the same counts, undone to the objects as they were', async () => {
    const { store } = await rig();
    const books = store.collection('books');
    const original = await seed(books);
    const m = migration('books', [
      { op: 'rename', from: 'title', to: 'headline' },
      { op: 'convert', property: 'pages', from: 'string', to: 'number', invalid: 'unset' },
      { op: 'remove', property: 'extra', keep: true },
      { op: 'add', property: 'rating', type: 'number', default: 0 },
      { op: 'addIndex', property: 'headline', unique: true },
      { op: 'dropIndex', property: 'headline', unique: true },
      { op: 'addIndex', property: 'pages', unique: false },
    ]);
    const expected = [N, N, N / 3, N - N / 4, 0, 0, 0];
    const [dry] = await dryRunUp(store, [m]);
    expect(dry?.steps.map((s) => s.objects)).toEqual(expected);
    expect(dry?.steps[1]?.detail).toMatch(new RegExp(`^${N / 10} values do not convert \\(e\\.g\\. objects b000000, b000010, .*\\): removed, kept for down$`));
    // Nothing changed by the dry run.
    expect(await all(books)).toEqual(original);

    const outcome = await run(store, [m]);
    expect(outcome.blocked.size).toBe(0);
    expect(outcome.applied).toEqual([{ id: m.id, counts: expected }]);
    const after = await all(books);
    expect(after[7]).toEqual({ id: 'b000007', headline: 'title 7', pages: 7, rating: 0 });
    expect(after[12]).toEqual({ id: 'b000012', headline: 'title 12', pages: 12, rating: 13 });
    expect(after[10]).toEqual({ id: 'b000010', headline: 'title 10', rating: 0 });
    expect(await books.count({ title: { $exists: true } })).toBe(0);
    expect(await books.count({ extra: { $exists: true } })).toBe(0);
    expect(await store.collection(VALUES_COLLECTION).count({})).toBe(N / 3 + N / 10);
    // Applied once: a second run does nothing.
    expect((await run(store, [m])).applied).toEqual([]);
    expect((await migrationStatus(store, [m]))[0]).toMatchObject({ id: m.id, state: 'applied', counts: expected, reversible: true });

    // Undone from the last step: values converted back (1,080) and those that did not convert put back (120).
    const down = await dryRunDown(store);
    expect(down.steps.map((s) => s.objects)).toEqual([0, 0, 0, N - N / 4, N / 3, N, N]);
    const undone = await undoMigration({ store, migrations: [m], batch: BATCH });
    expect(undone.counts).toEqual([N, N, N / 3, N - N / 4, 0, 0, 0]);
    expect(await all(books)).toEqual(original);
    expect(await store.collection(VALUES_COLLECTION).count({})).toBe(0);
    expect((await migrationStatus(store, [m]))[0]).toMatchObject({ state: 'pending' });
  }, 600_000);

  it('a migration stopped after some batches resumes from the last one recorded (each object changed once)', async () => {
    const { store } = await rig();
    const books = store.collection('books');
    await seed(books);
    const m = migration('books', [
      { op: 'remove', property: 'extra', keep: true },
      { op: 'convert', property: 'pages', from: 'string', to: 'number', invalid: { set: -1 } },
    ]);
    let batches = 0;
    const lines: string[] = [];
    const logger = { info: (l: string) => lines.push(l), warn: (l: string) => lines.push(l), error: (l: string) => lines.push(l) };
    const first = await run(store, [m], {
      logger,
      onBatch: ({ step }) => {
        if (step === 1 && ++batches === 5) throw new Error('stopped here');
      },
    });
    expect(first.blocked.get('books')).toMatchObject({ migration: m.id, error: 'stopped here' });
    const record = (await readRecords(store)).get(m.id);
    expect(record).toMatchObject({ state: 'failed', step: 1, touched: 5 * BATCH, counts: [N / 3] });

    const second = await run(store, [m], { logger });
    expect(second.blocked.size).toBe(0);
    expect(second.applied).toEqual([{ id: m.id, counts: [N / 3, N] }]);
    expect(lines.some((l) => l.includes(`migration ${m.id}: resuming at step 2 (${5 * BATCH} objects of it done)`))).toBe(true);
    const after = await all(books);
    expect(after.filter((doc) => typeof doc.pages === 'number').length).toBe(N);
    expect(after[10]?.pages).toBe(-1);
    // The values that did not convert are kept once each, whatever the interruption.
    expect(await store.collection(VALUES_COLLECTION).count({ s: 1 })).toBe(N / 10);
    await undoMigration({ store, migrations: [m], batch: BATCH });
    expect((await all(books))[30]).toEqual(book(30));
    expect(await all(books)).toEqual(Array.from({ length: N }, (_, i) => book(i)));
  }, 600_000);

  it('a migration that fails blocks its collection and the later migrations of it; the others apply', async () => {
    const { store } = await rig();
    await seed(store.collection('books'));
    await seed(store.collection('authors'), 50, (i) => ({ id: `a${i}`, name: `n${i}` }));
    const failing = migration('books', [
      { op: 'rename', from: 'title', to: 'headline' },
      { op: 'convert', property: 'pages', from: 'string', to: 'number', invalid: 'fail' },
    ]);
    const later = migration('books', [{ op: 'remove', property: 'extra', keep: true }]);
    const other = migration('authors', [{ op: 'rename', from: 'name', to: 'fullName' }]);
    const outcome = await run(store, [failing, later, other]);
    expect([...outcome.blocked.keys()]).toEqual(['books']);
    expect(outcome.blocked.get('books')?.error).toMatch(new RegExp(`^convert pages to number: ${N / 10} values do not convert \\(e\\.g\\. objects b000000, `));
    expect(outcome.applied.map((a) => a.id)).toEqual([other.id]);
    // Failed before a value was converted; the rename before it stays done (a resume goes on from there).
    expect(await store.collection('books').count({ pages: 12 })).toBe(0);
    expect(await store.collection('books').count({ extra: { $exists: true } })).toBe(N / 3);
    expect(await store.collection('authors').count({ fullName: { $exists: true } })).toBe(50);
    const status = await migrationStatus(store, [failing, later, other]);
    expect(status.map((s) => s.state)).toEqual(['failed', 'pending', 'applied']);
    expect(status[0]?.at).toEqual({ step: 2, touched: 0 });
    // Undone as far as it went: the rename.
    await undoMigration({ store, migrations: [failing, later, other], id: failing.id });
    expect(await store.collection('books').count({ title: { $exists: true } })).toBe(N);
  }, 600_000);

  it('two appliers at once: one applies, the other waits for the lock and finds it done', async () => {
    const rigA = await rig();
    await seed(rigA.store.collection('books'));
    // MongoDB: two connections as two processes would have; the embedded stores admit one process.
    const storeB = rigA.another ? await rigA.another() : rigA.store;
    try {
      const m = migration('books', [{ op: 'rename', from: 'title', to: 'headline' }, { op: 'add', property: 'n', type: 'number', default: 1 }]);
      const waits: string[] = [];
      const logger = (who: string) => ({ info: (l: string) => waits.push(`${who}: ${l}`), warn: () => undefined, error: () => undefined });
      const [a, b] = await Promise.all([run(rigA.store, [m], { logger: logger('a') }), run(storeB, [m], { logger: logger('b'), lease: { pollMs: 20 } })]);
      expect([...a.applied, ...b.applied]).toEqual([{ id: m.id, counts: [N, N] }]);
      expect(waits.filter((l) => l.includes('another process applies them'))).toHaveLength(1);
      expect(await rigA.store.collection('books').count({ headline: { $exists: true }, n: 1 })).toBe(N);
      expect(await rigA.store.collection('_migrations').count({ id: 'lock' })).toBe(0);
    } finally {
      if (storeB !== rigA.store) await storeB.close();
    }
  }, 600_000);

  it('a lock left by a process that is gone is taken over at once; one held by a live process is waited for', async () => {
    const { store } = await rig();
    await seed(store.collection('books'), 10);
    const m = migration('books', [{ op: 'rename', from: 'title', to: 'headline' }]);
    const { hostname } = await import('node:os');
    // A process of this machine that exited (kill -9 leaves its lock).
    const gone = await import('node:child_process').then(({ spawnSync }) => spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());
    await store.collection('_migrations').insert({ id: 'lock', owner: `${hostname()}:${gone}:dead`, host: hostname(), pid: Number(gone), expires: Date.now() + 600_000, since: 'then' });
    expect((await run(store, [m])).applied).toHaveLength(1);
    // Another machine's lock, not expired: waited for (here: until the wait gives up).
    await store.collection('_migrations').insert({ id: 'lock', owner: 'elsewhere:1:x', host: 'elsewhere', pid: 1, expires: Date.now() + 600_000, since: 'now' });
    const m2 = migration('books', [{ op: 'remove', property: 'pages', keep: false }]);
    await expect(run(store, [m, m2], { lease: { waitMs: 300, pollMs: 50 } })).rejects.toThrow(/lock is held by elsewhere:1:x/);
    // Expired: taken over.
    await store.collection('_migrations').update({ id: 'lock' }, { $set: { expires: Date.now() - 1 } });
    expect((await run(store, [m, m2])).applied.map((a) => a.id)).toEqual([m2.id]);
  }, 60_000);

  it('down refuses, changing nothing, a migration with a step that kept nothing', async () => {
    const { store } = await rig();
    await seed(store.collection('books'), 30);
    const m = migration('books', [{ op: 'rename', from: 'title', to: 'headline' }, { op: 'remove', property: 'pages', keep: false }]);
    await run(store, [m]);
    await expect(undoMigration({ store, migrations: [m] })).rejects.toThrow(/cannot be undone: step 2 \(remove pages \(values not kept\)\) kept nothing to put back/);
    expect(await store.collection('books').count({ headline: { $exists: true } })).toBe(30);
    expect((await readRecords(store)).get(m.id)?.state).toBe('applied');
  });

  it('down of a default: objects still holding it lose it, values written since stay', async () => {
    const { store } = await rig();
    const books = store.collection('books');
    await seed(books, 20);
    const m = migration('books', [{ op: 'add', property: 'rating', type: 'number', default: 0 }]);
    await run(store, [m]);
    await books.update({ id: 'b000001' }, { $set: { rating: 5 } });
    await undoMigration({ store, migrations: [m] });
    // Seeded with 5 ratings (1, 5, 9, 13, 17: none the default) and one set since.
    expect(await books.count({ rating: { $exists: true } })).toBe(1 + 5);
    expect((await books.findOne({ id: 'b000001' }))?.rating).toBe(5);
  });

  it('a resource renamed: its objects move to the new collection and back', async () => {
    const { store } = await rig();
    await seed(store.collection('books'), 700);
    const m = migration('library', [{ op: 'renameCollection', from: 'books' }]);
    expect((await dryRunUp(store, [m]))[0]?.steps[0]?.objects).toBe(700);
    expect((await run(store, [m])).applied).toEqual([{ id: m.id, counts: [700] }]);
    expect(await store.collection('library').count({})).toBe(700);
    expect(await store.collection('books').count({})).toBe(0);
    await undoMigration({ store, migrations: [m] });
    expect(await store.collection('books').count({})).toBe(700);
    expect(await store.collection('library').count({})).toBe(0);
  });

  it('tells a migration changed after it was applied, and one only the store knows', async () => {
    const { store } = await rig();
    await seed(store.collection('books'), 5);
    const m = migration('books', [{ op: 'rename', from: 'title', to: 'headline' }]);
    await run(store, [m]);
    const edited = parseMigration(m.id, formatMigration('books', [{ op: 'rename', from: 'title', to: 'name' }]));
    const warnings: string[] = [];
    await run(store, [edited], { logger: { info: () => undefined, warn: (l) => warnings.push(l), error: () => undefined } });
    expect(warnings).toEqual([`migration ${m.id} was changed after it was applied to this store: the change is not applied (write a new migration for it)`]);
    expect((await migrationStatus(store, [edited]))[0]).toMatchObject({ state: 'applied', changed: true });
    expect((await migrationStatus(store, []))[0]).toMatchObject({ id: m.id, state: 'applied', fileMissing: true });
  });
});

describe('a database that does not answer in time (its time limit per operation)', () => {
  it('pages again, smaller, until it answers; each object changed once', async () => {
    const rig = await openRig('sqlite');
    rigs.push(rig);
    const books = rig.store.collection('books');
    await seed(books, 300);
    // The real store, whose reads of more than 40 objects at once exceed the time limit (as a
    // busy FerretDB's batch of 500 did: "the database did not answer in time").
    const limited: Store = {
      ...rig.store,
      close: () => rig.store.close(),
      collection: (name: string) => {
        const coll = rig.store.collection(name);
        if (name !== 'books') return coll;
        const find: StoreCollection['find'] = (filter, options) =>
          (options?.limit ?? Infinity) > 40 ? Promise.reject(new SvcError('UNAVAILABLE', 'the database did not answer in time')) : coll.find(filter, options);
        return new Proxy(coll, {
          get: (target, key) => {
            if (key === 'find') return find;
            const value: unknown = Reflect.get(target, key);
            return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
          },
        });
      },
    };
    const m = migration('books', [{ op: 'rename', from: 'title', to: 'headline' }, { op: 'add', property: 'rating', type: 'number', default: 0 }]);
    const outcome = await applyMigrations({ store: limited, migrations: [m], batch: 100 });
    expect(outcome.blocked.get('books')?.error).toBeUndefined();
    expect(outcome.blocked.size).toBe(0);
    // Every fourth book has a rating already.
    expect(outcome.applied).toEqual([{ id: m.id, counts: [300, 225] }]);
    expect(await books.count({ headline: { $exists: true }, rating: { $exists: true }, title: { $exists: false } })).toBe(300);
  });
});
