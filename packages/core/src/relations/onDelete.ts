import { SvcError } from '../errors.js';
import type { ObjectChange, StagedChange } from '../resources/changes.js';
import type { Filter } from '../store/Store.js';
import type { Referrer, Relations } from './Relations.js';
import { crashPoint } from '../crashPoint.js';

/** Objects one DELETE may remove by cascade, in all: more answers 413 and removes nothing. */
export const MAX_CASCADE = 10_000;

/** What a delete does to the references to what it removes, worked out before anything is written. */
export interface DeletePlan {
  /** Every object the delete removes (the asked ones and the cascaded ones), by collection. */
  removing: Map<Relations, Set<string>>;
  /** Cascaded objects, one entry per collection and level, in the order found (shallowest first). */
  levels: { relations: Relations; ids: string[] }[];
}

/**
 * Follows cascades from the objects `ids` of `root`, then checks the restricting relations: an
 * object still pointed at by one (other than by objects removed with it) answers 409, before any
 * write. Reads the stores directly: this is the schema's bookkeeping, not a read for a caller, and
 * a hidden referrer must hold the object as well as a visible one.
 */
export async function planDelete(root: Relations, ids: readonly string[]): Promise<DeletePlan> {
  const plan: DeletePlan = { removing: new Map([[root, new Set(ids)]]), levels: [] };
  const queue: { relations: Relations; ids: string[] }[] = [{ relations: root, ids: [...ids] }];
  let cascaded = 0;
  for (let step = queue.shift(); step !== undefined; step = queue.shift()) {
    for (const referrer of step.relations.referrers()) {
      if (referrer.def.onDelete !== 'cascade') continue;
      const found = await referrer.from.store.find({ [referrer.property]: { $in: step.ids } }, { fields: { id: 1 } });
      let seen = plan.removing.get(referrer.from);
      if (seen === undefined) plan.removing.set(referrer.from, (seen = new Set()));
      const fresh = found.map((d) => d.id).filter((id) => !seen.has(id));
      if (fresh.length === 0) continue;
      cascaded += fresh.length;
      if (cascaded > MAX_CASCADE) throw new SvcError('PAYLOAD_TOO_LARGE', `the delete would remove more than ${MAX_CASCADE} objects by cascade; delete the referring objects first`);
      for (const id of fresh) seen.add(id);
      plan.levels.push({ relations: referrer.from, ids: fresh });
      queue.push({ relations: referrer.from, ids: fresh });
    }
  }
  for (const [relations, removed] of plan.removing) {
    if (removed.size === 0) continue;
    for (const referrer of relations.referrers()) {
      if ((referrer.def.onDelete ?? 'restrict') !== 'restrict') continue;
      if ((await referrer.from.store.count(pointingAt(referrer, removed, plan.removing.get(referrer.from)))) > 0) {
        throw new SvcError('CONFLICT', `${relations.owner.path.slice(1)}: still referred to by ${referrer.from.owner.path.slice(1)}.${referrer.property}`);
      }
    }
  }
  return plan;
}

/**
 * Clears the setNull references, then removes the cascaded objects deepest first. After each
 * write every remaining reference still points at an object that exists (the asked ones go last,
 * by the caller), so a crash anywhere leaves no dangling reference, and the DELETE sent again
 * finds what is left to do.
 */
export async function runDelete(plan: DeletePlan): Promise<void> {
  for (const [relations, removed] of plan.removing) {
    if (removed.size === 0) continue;
    for (const referrer of relations.referrers()) {
      if (referrer.def.onDelete === 'setNull') await clearReferences(referrer, removed, plan.removing.get(referrer.from));
    }
  }
  crashPoint('relations:cleared');
  for (const level of [...plan.levels].reverse()) {
    await removeTelling(level.relations, level.ids);
    crashPoint('relations:cascaded-one');
    await level.relations.onRemoved(level.ids);
  }
  crashPoint('relations:cascaded');
}

/**
 * Removes objects of a referring collection, telling its live queries as a DELETE would: the
 * objects are read first while they are wanted; when they were not but are now (a live query
 * started meanwhile), its subscriptions resync.
 */
async function removeTelling(relations: Relations, ids: readonly string[]): Promise<void> {
  const owner = relations.owner;
  const docs = owner.wantsChanges() ? await relations.store.find({ id: { $in: [...ids] } }, {}) : undefined;
  // Told inside the remove where the store can (a webhook's events committed with it), as a DELETE's.
  const hooks = docs === undefined ? undefined : owner.deleteHooks?.(docs);
  await relations.store.remove({ id: { $in: [...ids] } }, undefined, hooks);
  crashPoint('relations:removed');
  if (docs !== undefined) await owner.tellChanges(docs.map((object) => ({ kind: 'delete', object })), hooks === undefined ? undefined : docs.map((doc) => hooks.of(doc)));
  else if (owner.wantsChanges()) await owner.tellResync();
}

/**
 * After the asked objects are removed: a reference written meanwhile (a request that checked its
 * ids just before the removal) is cleared, or its object removed for a cascade, so that none is
 * left dangling. A restricting one is cleared too: the delete already happened.
 */
export async function sweepAfterDelete(plan: DeletePlan): Promise<void> {
  for (const [relations, removed] of plan.removing) {
    if (removed.size === 0) continue;
    for (const referrer of relations.referrers()) {
      if (referrer.def.onDelete !== 'cascade') {
        await clearReferences(referrer, removed, undefined);
        continue;
      }
      const late = (await referrer.from.store.find(pointingAt(referrer, removed, undefined), { fields: { id: 1 } })).map((d) => d.id);
      if (late.length === 0) continue;
      let nested: DeletePlan;
      try {
        nested = await planDelete(referrer.from, late);
      } catch (err) {
        // Something restricts removing the late objects: their reference is cleared instead, so
        // that neither they nor what holds them point at nothing.
        if (!(err instanceof SvcError) || (err.code !== 'CONFLICT' && err.code !== 'PAYLOAD_TOO_LARGE')) throw err;
        await clearReferences(referrer, removed, undefined);
        continue;
      }
      await runDelete(nested);
      await removeTelling(referrer.from, late);
      await referrer.from.onRemoved(late);
    }
  }
}

/** The referrer's objects pointing at `ids`, but for those in `except`. */
function pointingAt(referrer: Referrer, ids: ReadonlySet<string>, except: ReadonlySet<string> | undefined): Filter {
  const filter: Filter = { [referrer.property]: { $in: [...ids] } };
  if (except !== undefined && except.size > 0) filter.id = { $nin: [...except] };
  return filter;
}

/**
 * setNull: one id becomes null; from an array of ids, the removed ones are pulled. Each object
 * changed is told to the collection's live queries as an update (whole objects are read for that
 * only while they are wanted).
 */
async function clearReferences(referrer: Referrer, ids: ReadonlySet<string>, except: ReadonlySet<string> | undefined): Promise<void> {
  const store = referrer.from.store;
  const owner = referrer.from.owner;
  const property = referrer.property;
  const wanted = owner.wantsChanges();
  const docs = await store.find(pointingAt(referrer, ids, except), wanted ? {} : { fields: { id: 1, [property]: 1 } });
  const changes: ObjectChange[] = [];
  const staged: (StagedChange | undefined)[] = [];
  for (const doc of docs) {
    // Told inside the update where the store can (a webhook's events committed with it).
    const hooks = wanted ? owner.writeHooks?.('update') : undefined;
    const updated =
      referrer.def.many === true
        ? await store.update({ id: doc.id }, { $pull: { [property]: [...ids] } }, undefined, hooks)
        : await store.update({ id: doc.id, [property]: doc[property] }, { $set: { [property]: null } }, undefined, hooks);
    if (wanted && updated !== null) {
      changes.push({ kind: 'update', object: updated, previous: doc });
      staged.push(hooks);
    }
  }
  if (wanted) await owner.tellChanges(changes, staged);
  else if (docs.length > 0 && owner.wantsChanges()) await owner.tellResync();
}

