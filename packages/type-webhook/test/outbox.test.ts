import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbeddedStore, createEngineStore, createMongoStore, forwardCollection } from '@svc/core';
import type { FindOptions, Store, WriteHooks } from '@svc/core';
import { Outbox, eventId } from '../src/internal/outbox.js';

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;

const stores: { name: string; open(): Promise<{ store: Store; done(): Promise<void> }>; skip?: string }[] = [
  {
    name: 'the embedded store',
    async open() {
      const dir = await mkdtemp(join(tmpdir(), 'svc-outbox-'));
      const store = await createEmbeddedStore({ dir });
      return { store, done: async () => { await store.close(); await rm(dir, { recursive: true, force: true }); } };
    },
  },
  {
    name: 'the SQLite engine',
    async open() {
      const dir = await mkdtemp(join(tmpdir(), 'svc-outbox-'));
      const store = await createEngineStore({ dir });
      return { store, done: async () => { await store.close(); await rm(dir, { recursive: true, force: true }); } };
    },
  },
  {
    name: 'MongoDB',
    ...(mongoUrl ? {} : { skip: 'SVC_TEST_MONGODB_URL is not set' }),
    async open() {
      const store = await createMongoStore({ url: mongoUrl as string, dbName: `outbox_${randomBytes(6).toString('hex')}` });
      return { store, done: () => store.close() };
    },
  },
];

for (const kind of stores) {
  describe.skipIf(kind.skip !== undefined)(`webhook outbox on ${kind.name}${kind.skip ? ` (skipped: ${kind.skip})` : ''}`, () => {
    let opened: { store: Store; done(): Promise<void> } | undefined;
    afterEach(async () => {
      await opened?.done();
      opened = undefined;
    });

    it('reads the due records, never the done ones nor those due later; a prune keeps the newest done and every pending one', async () => {
      opened = await kind.open();
      const outbox = new Outbox(opened.store.collection('hooks_webhook'), opened.store.collection('hooks_webhook_new'));
      await outbox.init();
      const records = [];
      for (let i = 0; i < 6; i++) records.push(await outbox.add('create', { id: `o${i}`, title: `t${i}` }, undefined, 3));
      // A failure puts o0 back, due later than every other one; o1..o3 are delivered, o4 is dead.
      const now = Date.now();
      await outbox.finish(records[0]!, 1, { ok: false, error: 'answered 500', status: 500, durationMs: 1, retryAt: now + 50 });
      for (const i of [1, 2, 3]) {
        await outbox.finish(records[i]!, 1, { ok: true, status: 200, durationMs: 1, body: `{"n":${i}}` });
        // Done at distinct times, so that "the newest" means something.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await outbox.finish({ ...records[4]!, lastAllowed: 1 }, 1, { ok: false, error: 'answered 500', status: 500, durationMs: 1, retryAt: now + 50 });

      expect((await outbox.due(now + 10, 10)).map((r) => r.objectId)).toEqual(['o5']);
      expect((await outbox.due(now + 60_000, 10)).map((r) => r.objectId).sort()).toEqual(['o0', 'o5']);
      expect(await outbox.due(now + 60_000, 1)).toHaveLength(1);

      expect(await outbox.prune(['delivered', 'skipped'], 1)).toBe(2);
      expect(await outbox.counts()).toEqual({ pending: 2, delivered: 1, dead: 1, skipped: 0 });
      expect((await outbox.list('delivered', 10)).map((r) => r.objectId)).toEqual(['o3']);
      // Dead letters have their own bound: nothing else goes.
      expect(await outbox.prune(['dead'], 0)).toBe(1);
      expect(await outbox.counts()).toEqual({ pending: 2, delivered: 1, dead: 0, skipped: 0 });
    });

    it('reads the due records earliest first, whatever order they were written in (a backlog is delivered oldest first)', async () => {
      opened = await kind.open();
      const outbox = new Outbox(opened.store.collection('hooks_webhook'), opened.store.collection('hooks_webhook_new'));
      await outbox.init();
      const records = [];
      for (let i = 0; i < 40; i++) records.push(await outbox.add('create', { id: `o${i}`, title: `t${i}` }, undefined, 3));
      // The first ten fail and come back due after the others, the first one latest.
      const now = Date.now();
      for (let i = 0; i < 10; i++) await outbox.finish(records[i]!, 1, { ok: false, error: 'answered 500', status: 500, durationMs: 1, retryAt: now + 1000 - i });
      const due = await outbox.due(now + 60_000, 35);
      // Records written in the same millisecond are due at the same time: their order among
      // themselves is the store's (FerretDB returned o29 before o28 once), so the first 30 are
      // compared as a set, and the order is checked by due time.
      const ids = due.map((r) => r.objectId);
      expect([...ids.slice(0, 30)].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)))).toEqual(Array.from({ length: 30 }, (_, i) => `o${i + 10}`));
      expect(ids.slice(30)).toEqual(['o9', 'o8', 'o7', 'o6', 'o5']);
      expect(due.map((r) => r.nextAt)).toEqual([...due.map((r) => r.nextAt)].sort((a, b) => a - b));
    });

    it('stores the events of one turn in one journal row: pending in counts, list and get, one record each once taken up', async () => {
      opened = await kind.open();
      const outbox = new Outbox(opened.store.collection('hooks_webhook'), opened.store.collection('hooks_webhook_new'));
      await outbox.init();
      const records = await Promise.all(Array.from({ length: 5 }, (_, i) => outbox.add('create', { id: `o${i}`, title: `t${i}` }, undefined, 3)));
      expect(await outbox.journal.rows.count({})).toBe(1);
      expect(await outbox.records.count({})).toBe(0);
      expect(await outbox.counts()).toEqual({ pending: 5, delivered: 0, dead: 0, skipped: 0 });
      expect((await outbox.list('pending', 10)).map((r) => r.objectId).sort()).toEqual(['o0', 'o1', 'o2', 'o3', 'o4']);
      expect((await outbox.list(undefined, 10))[0]).not.toHaveProperty('object');
      expect((await outbox.get(records[3]!.id, 10))?.objectId).toBe('o3');
      // The first attempt's outcome makes the record of its event.
      await outbox.finish(records[0]!, 1, { ok: true, status: 200, durationMs: 1, body: '{"n":0}' });
      expect((await outbox.get(records[0]!.id, 10))?.status).toBe('delivered');
      // The others are taken up as they were stored, once, and the row goes.
      const due = await outbox.due(Date.now() + 10, 10);
      expect(due.map((r) => r.objectId).sort()).toEqual(['o1', 'o2', 'o3', 'o4']);
      expect(due[0]).toMatchObject({ status: 'pending', attempts: 0, event: 'create' });
      expect(due.find((r) => r.objectId === 'o2')?.object).toEqual({ id: 'o2', title: 't2' });
      expect(outbox.moreNew).toBe(false);
      expect(await outbox.journal.rows.count({})).toBe(0);
      expect((await outbox.due(Date.now() + 10, 10)).map((r) => r.objectId).sort()).toEqual(['o1', 'o2', 'o3', 'o4']);
      expect(await outbox.counts()).toEqual({ pending: 4, delivered: 1, dead: 0, skipped: 0 });
    });

    it('removes a row at the outcome of the last of its events, for the records this process made; a row taken up before stays gone', async () => {
      opened = await kind.open();
      const outbox = new Outbox(opened.store.collection('hooks_webhook'), opened.store.collection('hooks_webhook_new'));
      await outbox.init();
      const records = await Promise.all(Array.from({ length: 3 }, (_, i) => outbox.add('create', { id: `o${i}`, title: `t${i}` }, undefined, 3)));
      await outbox.finish(records[0]!, 1, { ok: true, status: 200, durationMs: 1, body: '{"n":0}' });
      await outbox.skip(records[1]!, 'hidden');
      expect(await outbox.journal.rows.count({})).toBe(1);
      await outbox.finish(records[2]!, 1, { ok: true, status: 200, durationMs: 1, body: '{"n":2}' });
      expect(await outbox.journal.rows.count({})).toBe(0);
      // What holds the row in memory is not stored with the record.
      expect(Object.keys((await outbox.records.findOne({ id: records[2]!.id }))!).sort()).toEqual(['attempts', 'body', 'createdAt', 'doneAt', 'durationMs', 'event', 'excerpt', 'id', 'lastAllowed', 'lastAt', 'lastError', 'lastStatus', 'nextAt', 'objectId', 'status']);

      // Taken up first (a backlog), then delivered from the records this process still holds.
      const later = await Promise.all(Array.from({ length: 2 }, (_, i) => outbox.add('create', { id: `p${i}`, title: `t${i}` }, undefined, 3)));
      expect((await outbox.due(Date.now() + 10, 10)).map((r) => r.objectId).sort()).toEqual(['p0', 'p1']);
      expect(await outbox.journal.rows.count({})).toBe(0);
      for (const record of later) await outbox.finish(record, 1, { ok: true, status: 200, durationMs: 1, body: '{}' });
      expect(await outbox.counts()).toEqual({ pending: 0, delivered: 4, dead: 0, skipped: 1 });
      expect(await outbox.journal.rows.count({})).toBe(0);
    });

    it('takes rows up in pages sized by the rows it read last, each event once, and says when rows are left', async () => {
      opened = await kind.open();
      // The rows each read of the journal asks for.
      const asked: number[] = [];
      const journal = opened.store.collection('hooks_webhook_new');
      const counted = forwardCollection(journal, {
        call(method, run, args) {
          const limit = (args[1] as FindOptions | undefined)?.limit;
          if (method === 'find' && limit !== undefined) asked.push(limit);
          return run();
        },
      });
      const outbox = new Outbox(opened.store.collection('hooks_webhook'), counted);
      await outbox.init();
      // Five rows of ten events (one turn each).
      for (let row = 0; row < 5; row++) await Promise.all(Array.from({ length: 10 }, (_, i) => outbox.add('create', { id: `r${row}e${i}`, title: 't' }, undefined, 3)));
      expect(await outbox.journal.rows.count({})).toBe(5);
      const leftAfter: number[] = [];
      const more: boolean[] = [];
      for (let pass = 0; pass < 3; pass++) {
        await outbox.due(Date.now() + 10, 15);
        leftAfter.push(await outbox.journal.rows.count({}));
        more.push(outbox.moreNew);
      }
      // 15 wanted: two rows (20 events) a pass, then the last one.
      expect(leftAfter).toEqual([3, 1, 0]);
      expect(more).toEqual([true, true, false]);
      // The first read asks for 15 rows (nothing known of their size), the next ones for two at a
      // time (rows of ten), and one to learn whether a row is left.
      expect(asked).toEqual([15, 2, 1, 2]);
      const all = await outbox.records.find({}, { fields: { objectId: 1 } });
      expect(all).toHaveLength(50);
      expect(new Set(all.map((r) => r.objectId)).size).toBe(50);
    });

    // Inside writes: the store's write hooks and insertAtCommit (the SQLite engine has them).
    if (kind.name === 'the SQLite engine')
      it('stages the events of one commit in one row inside its writes, in several once their objects pass the bound', async () => {
        opened = await kind.open();
        const outbox = new Outbox(opened.store.collection('hooks_webhook'), opened.store.collection('hooks_webhook_new'));
        await outbox.init();
        const todos = opened.store.collection('todos');
        const staged: Promise<void>[] = [];
        const hooks = (claimed?: number): WriteHooks => ({
          stored(object, _before, chars) {
            const event = outbox.stage('create', object, undefined, 3, claimed ?? chars);
            if (event !== undefined) staged.push(event.stored);
          },
        });
        await Promise.all([0, 1, 2].map((i) => todos.insert({ id: `a${i}`, title: 'small' }, hooks())));
        await Promise.all(staged);
        expect(await outbox.journal.rows.count({})).toBe(1);
        // Three objects of 5 Mi characters each (as the store tells it) in one commit: three rows.
        await Promise.all([0, 1, 2].map((i) => todos.insert({ id: `b${i}`, title: 'large' }, hooks(5 * 1024 * 1024))));
        await Promise.all(staged);
        expect(await outbox.journal.rows.count({})).toBe(4);
        expect(await outbox.counts()).toEqual({ pending: 6, delivered: 0, dead: 0, skipped: 0 });
      });

    it('a row left behind by a process stopped after its events\' outcomes were stored makes no second record (kill -9 before the row went)', async () => {
      opened = await kind.open();
      const collections = [opened.store.collection('hooks_webhook'), opened.store.collection('hooks_webhook_new')] as const;
      const first = new Outbox(...collections);
      await first.init();
      const records = await Promise.all(Array.from({ length: 3 }, (_, i) => first.add('update', { id: `o${i}`, title: 'after' }, { id: `o${i}`, title: 'before' }, 3)));
      // Another process (a restart: it knows nothing of the row) stores the outcomes, of records
      // as it has them (decoded from the store: not the objects the first process made).
      const second = new Outbox(...collections);
      const read = records.map((r) => JSON.parse(JSON.stringify(r)) as typeof r);
      await second.finish(read[0]!, 1, { ok: true, status: 200, durationMs: 1, body: '{"n":0}' });
      await second.finish(read[1]!, 1, { ok: false, status: 500, error: 'answered 500', durationMs: 1, body: '{"n":1}', retryAt: Date.now() + 60_000 });
      await second.skip(read[2]!, 'hidden');
      expect(await second.journal.rows.count({})).toBe(1);
      expect(await second.due(Date.now() + 10, 10)).toEqual([]);
      expect(await second.journal.rows.count({})).toBe(0);
      expect(await second.records.count({})).toBe(3);
      expect(await second.counts()).toEqual({ pending: 1, delivered: 1, dead: 0, skipped: 1 });
      const retried = (await second.get(records[1]!.id, 100)) as Record<string, unknown>;
      expect(retried).toMatchObject({ status: 'pending', attempts: 1, lastStatus: 500, bodyBytes: 7 });
    });

    it('gives events ids that sort in the order they were made, distinct within a millisecond (the id index grows at its end)', async () => {
      opened = await kind.open();
      const outbox = new Outbox(opened.store.collection('hooks_webhook'), opened.store.collection('hooks_webhook_new'));
      await outbox.init();
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        // Some in the same millisecond, some across a few.
        if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 3));
        ids.push((await outbox.add('create', { id: `o${i}`, title: `t${i}` }, undefined, 3)).id);
      }
      expect(new Set(ids).size).toBe(30);
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{28}$/);
      const byTime = (id: string): number => Number.parseInt(id.slice(0, 12), 16);
      expect(ids.map(byTime)).toEqual([...ids.map(byTime)].sort((a, b) => a - b));
      expect([...ids].sort().map(byTime)).toEqual(ids.map(byTime));
      // Each is stored under its id.
      expect((await outbox.get(ids[17]!, 10))?.objectId).toBe('o17');
    });
  });
}

describe('eventId', () => {
  it('is the time in ms as 12 hex digits, then 16 random ones', () => {
    const id = eventId(0x18c2a3b4c5d);
    expect(id.slice(0, 12)).toBe('018c2a3b4c5d');
    expect(id.slice(12)).toMatch(/^[0-9a-f]{16}$/);
    expect(eventId(0x18c2a3b4c5d)).not.toBe(id);
    expect(eventId(0x18c2a3b4c5e) > eventId(0x18c2a3b4c5d)).toBe(true);
  });
});
