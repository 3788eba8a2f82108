/**
 * How a step sends its writes: a few at a time, the lease checked right before each one is sent
 * (docs/migrations.md, "A holder that lost the lock stops writing").
 *
 * A batch's writes used to be sent all at once (Promise.all): a MongoDB client queues what its pool
 * cannot send at once, and sends it later, after the lease check that let the batch through. A
 * process that lost the lock meanwhile (a database frozen for longer than the lease) then sent
 * writes the next holder did not expect; on FerretDB v1, whose updates are a read then a write, one
 * landed after the next step and undid its change. Here no write waits in svc between its check and
 * its send, and the migrations' client has more connections than WRITES_AT_ONCE plus a read and a
 * renewal, so none waits in the driver for a connection either (and, if one did, at most the
 * client's queue time limit: it is then not sent at all).
 */

import type { Store } from '../store/Store.js';

/** Writes of a step in flight at a time (each one object, or one updateMany of WRITE_CHUNK objects). */
export const WRITES_AT_ONCE = 4;
/** Objects one write changes at most: a write of FerretDB v1 goes object by object, unbounded by maxTimeMS. */
export const WRITE_CHUNK = 25;

/**
 * Writes a step sends at a time to `store`: WRITES_AT_ONCE on MongoDB; on the embedded stores all of
 * a page's at once (as before), since their writes do not leave this process (no queue in a driver,
 * one process per data folder) and arrive together in one group commit.
 */
export function writesAtOnce(store: Pick<Store, 'kind'>): number {
  return store.kind === 'mongodb' ? WRITES_AT_ONCE : Number.POSITIVE_INFINITY;
}

/**
 * Sends `send(item)` for each item, at most `atOnce` at a time; `hold()` (the lease: throws
 * once it is lost or may be) is awaited right before each send, with nothing in between. After the
 * first failure nothing more is sent; the writes in flight are waited for, then that failure is
 * thrown (a write that failed may have been applied in part: the steps find what is still to do).
 * Answers the results in order.
 */
export async function sendEach<T, R>(items: readonly T[], atOnce: number, hold: () => Promise<void>, send: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        await hold();
        // Checked again: another lane may have failed while this one waited for the lease.
        if (failure !== undefined) return;
        results[i] = await send(items[i] as T);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, items.length) }, lane));
  if (failure !== undefined) throw failure.err;
  return results;
}

/** `items` in runs of at most `size`. */
export function chunks<T>(items: readonly T[], size: number = WRITE_CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
