import { afterEach, describe, expect, it } from 'vitest';
import { applyMigrations, readRecords } from '../../src/migrations/applyMigrations.js';
import { acquireLease } from '../../src/migrations/lease.js';
import { formatMigration, parseMigration } from '../../src/migrations/migration.js';
import type { Doc, Store, StoreCollection } from '../../src/store/Store.js';
import { STORE_KINDS, openRig } from './stores.js';
import type { StoreRig } from './stores.js';

// Issue 43: a process whose lock is taken over (its renewals did not answer: a frozen database)
// must send no write after that. A MongoDB client sends what its pool cannot send at once later,
// from its queue: a batch's writes queued there went out after the lease check that let the batch
// through, and on FerretDB v1 one landed after the next step and undid it. Here the writes of the
// migrated collection go through a pool of 8 that sends each after a delay, as a slow database's
// client does, over a real store.

const N = 40;
/** Writes the slow store runs at once (the others wait, as in a driver's queue). */
const POOL = 8;

const rigs: StoreRig[] = [];
afterEach(async () => {
  for (const rig of rigs.splice(0)) await rig.destroy();
});

const WRITES = new Set(['update', 'updateMany', 'insert', 'insertMany', 'remove']);

/** What the slow store did, and the knobs the test turns. */
interface Slow {
  /** ms each write of `books` waits before it reaches the store. */
  delay: number;
  /** While set, writes of `_migrations` (the lock's renewals among them) wait for it. */
  frozen?: Promise<void>;
  /** Writes of `books` sent (admitted by the pool) so far, and those sent while the lock was another's. */
  sent: number;
  sentWhileTaken: number;
  taken: boolean;
  /** Writes of `books` admitted and not yet ended, and those waiting for the pool. */
  running: number;
  queue: (() => void)[];
  onFirstWrite?: () => void;
}

function slowStore(inner: Store, slow: Slow): Store {
  const admit = async (): Promise<void> => {
    if (slow.running >= POOL) await new Promise<void>((resolve) => slow.queue.push(resolve));
    else slow.running++;
  };
  const done = (): void => {
    const next = slow.queue.shift();
    if (next) next();
    else slow.running--;
  };
  const wrap = (coll: StoreCollection): StoreCollection =>
    new Proxy(coll, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        const fn = value as (...args: unknown[]) => Promise<unknown>;
        if (!WRITES.has(String(prop))) return fn.bind(target);
        if (coll.name === '_migrations') {
          return async (...args: unknown[]) => {
            while (slow.frozen) await slow.frozen;
            return fn.apply(target, args);
          };
        }
        if (coll.name !== 'books') return fn.bind(target);
        return async (...args: unknown[]) => {
          await admit();
          try {
            slow.sent++;
            if (slow.taken) slow.sentWhileTaken++;
            slow.onFirstWrite?.();
            await new Promise((resolve) => setTimeout(resolve, slow.delay));
            return await fn.apply(target, args);
          } finally {
            done();
          }
        };
      },
    });
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'collection') return (name: string) => wrap(target.collection(name));
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// MongoDB only: the embedded stores' writes do not leave the process (no driver's queue, one process
// per data folder), so a step hands them a page's writes at once, for their group commit.
describe.each(STORE_KINDS.filter((kind) => kind === 'mongodb'))('a holder whose lock is taken over while its writes are slow (%s store)', (kind) => {
  it('sends no write once the lock is another\'s; goes on once it has the lock again; every object changed once', async () => {
    const rig = await openRig(kind);
    rigs.push(rig);
    const books = rig.store.collection('books');
    const docs: Doc[] = Array.from({ length: N }, (_, i) => ({ id: `b${String(i).padStart(4, '0')}`, pages: String(i) }));
    if (books.insertMany) await books.insertMany(docs);
    else for (const doc of docs) await books.insert(doc);
    // Each object gets a value of its own: one write per object (an updateMany does not serve).
    const m = parseMigration('20261201T100000000-books-pages', formatMigration('books', [{ op: 'convert', property: 'pages', from: 'string', to: 'number', invalid: 'unset' }]));

    const slow: Slow = { delay: 300, sent: 0, sentWhileTaken: 0, taken: false, running: 0, queue: [] };
    let unfreeze = (): void => undefined;
    slow.onFirstWrite = () => {
      // From the first write on, the lock's renewals do not answer (the database froze for them).
      slow.onFirstWrite = undefined;
      slow.frozen = new Promise<void>((resolve) => (unfreeze = resolve));
    };
    const warnings: string[] = [];
    const applying = applyMigrations({ store: slowStore(rig.store, slow), migrations: [m], batch: N, lease: { leaseMs: 600, pollMs: 20 }, logger: { info: () => undefined, warn: (l) => warnings.push(l), error: (l) => warnings.push(l) } });
    applying.catch(() => undefined);

    await until(() => slow.sent > 0, 'the first write');
    // Another process takes the lock over once it expired (the holder could not renew it).
    const other = await acquireLease(rig.store.collection('_migrations'), { leaseMs: 60_000, pollMs: 20 });
    slow.taken = true;
    slow.frozen = undefined;
    unfreeze();
    // The holder learns it lost the lock at its next renewal; its writes in flight end.
    await until(() => warnings.some((l) => l.includes('lock was taken by another process')) && slow.running === 0 && slow.queue.length === 0, 'the first holder to stop');
    expect(slow.sentWhileTaken).toBe(0);
    slow.taken = false;
    slow.delay = 0;
    await other.release();

    const outcome = await applying;
    expect(outcome.applied).toEqual([{ id: m.id, counts: [N] }]);
    expect((await books.find({}, { sort: { id: 1 } })).map((doc) => doc.pages)).toEqual(docs.map((_, i) => i));
    expect((await readRecords(rig.store)).get(m.id)?.state).toBe('applied');
    expect(await rig.store.collection('_migrations').count({ id: 'lock' })).toBe(0);
  }, 120_000);
});

// The lease is the same code over every store: the files store serves.
describe.each(['files'])('the lease and the time a write may take (%s store)', (kind) => {
  it('a takeover waits writeMs before it answers (the previous holder\'s last writes end first); writeMs must be under a third of the lease', async () => {
    const rig = await openRig(kind);
    rigs.push(rig);
    const locks = rig.store.collection('_migrations');
    await expect(acquireLease(locks, { leaseMs: 3000, writeMs: 1000 })).rejects.toThrow(/not under a third of the migrations' lease/);
    // Another machine's lock, expired: taken over, then waited on.
    await locks.insert({ id: 'lock', owner: 'elsewhere:1:x', host: 'elsewhere', pid: 1, expires: Date.now() - 1, since: 'then' });
    const started = Date.now();
    const lease = await acquireLease(locks, { leaseMs: 3000, writeMs: 400, pollMs: 20 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect((await locks.findOne({ id: 'lock' }))?.owner).toBe(lease.owner);
    await lease.hold();
    await lease.release();
    // Released: it is no longer this process's to write under.
    await expect(lease.hold()).rejects.toThrow(/released/);
  }, 60_000);
});
