import type { CollectionAccess } from '../access/CollectionAccess.js';
import type { ReadScope } from '../access/Visibility.js';
import { andFilters } from '../access/compileRule.js';
import { crashPoint } from '../crashPoint.js';
import { SvcError, isSvcError } from '../errors.js';
import { compileFilter } from '../query/compileQuery.js';
import { isPlainObject } from '../query/parseQueryString.js';
import type { Relations } from '../relations/Relations.js';
import type { Doc, Filter, StoreCollection } from '../store/Store.js';
import type { Context, PropertyDef, Reply } from '../types.js';
import type { ChangeListeners, StagedDelete } from './changes.js';
import { conditionOf, movedAfter, settled } from './conditional.js';
import type { MOVED } from './conditional.js';
import type { CollectionEventRunner } from './events.js';
import { preconditionOf, skipEventsAsked } from './writeEvents.js';

/**
 * What a Collection's deletes need of it: its parts, and the steps it shares with its writes
 * (the request's id, If-Match, the phase "after delete", On AfterCommit).
 */
export interface DeleteHost {
  readonly store: StoreCollection;
  readonly properties: Record<string, PropertyDef>;
  readonly events: CollectionEventRunner;
  readonly access: CollectionAccess;
  readonly relations: Relations;
  readonly changes: ChangeListeners;
  /** ctx's read scope (Collection.scopeOf). */
  scopeOf(ctx: Context): ReadScope;
  /** The object id the request names (Collection.idOf, not from the body). */
  idOf(ctx: Context): string | undefined;
  /**
   * Whether a DELETE with a condition must read the ids of what it removes (the phase "after
   * delete" needs them: files, UserCollection's sessions).
   */
  needsRemovedIds(): boolean;
  /** The phase "after delete", with the removed objects' ids. */
  removed(ids: readonly string[]): Promise<void>;
  /** If-Match on the caller's view of the stored object: 412 when none of its ETags match. */
  assertMatches(ctx: Context, stored: Doc, expected: readonly string[] | '*'): Promise<void>;
  /** A stored object as scripts may see it. */
  withoutStoreOnly(doc: Doc): Doc;
  /** The hooks of a remove of `docs`: the in-commit listeners', where the store runs them inside its writes. */
  deleteHooks(docs: readonly Doc[]): StagedDelete | undefined;
  /** On AfterCommit, its errors logged. */
  afterCommit(ctx: Context, object: Record<string, unknown>, previous: Record<string, unknown> | undefined): Promise<void>;
}

/**
 * DELETE /<c>/<id>, or DELETE with a condition on id (`?id={"$in": [...]}`): the rules, On Delete,
 * If-Match, relations' onDelete upkeep and the change listeners, in Deployd 1.2's order.
 */
export async function handleDelete(c: DeleteHost, ctx: Context): Promise<Reply> {
  if (ctx.parts.length > 1) throw new SvcError('NOT_FOUND', 'not found');
  const id = c.idOf(ctx);
  if (id === undefined) {
    if (isPlainObject(ctx.query.id)) return deleteMatching(c, ctx);
    throw new SvcError('BAD_REQUEST', 'an id is required to delete (in the path or as ?id=)');
  }
  const expected = conditionOf(ctx, 'if-match');
  return settled(() => deleteOne(c, ctx, id, expected), 'deleted');
}

/** DELETE /<c>/<id>; with If-Match as Collection.update has it. */
async function deleteOne(c: DeleteHost, ctx: Context, id: string, expected: readonly string[] | '*' | undefined): Promise<Reply | typeof MOVED> {
  const revised = expected === undefined || expected === '*' ? undefined : await c.store.findRevised(id);
  const scope = c.scopeOf(ctx);
  let filter: Filter = { ...compileFilter(preconditionOf(ctx.query), c.properties, scope.refusals), id };
  const skipEvents = ctx.isRoot && skipEventsAsked(ctx, undefined);
  const referenced = c.relations.isReferenced();
  const guarded = !c.access.bypasses(ctx) && !(c.access.rules.isOpen('read') && c.access.rules.isOpen('delete'));
  if (expected === undefined && !guarded && !referenced && (skipEvents || (!c.events.has('delete') && !c.events.has('aftercommit')))) {
    const gone = c.changes.wanted() ? await c.store.findOne(filter) : undefined;
    const hooks = gone ? c.deleteHooks([gone]) : undefined;
    if ((await c.store.remove(filter, undefined, hooks)) === 0) throw new SvcError('NOT_FOUND', 'not found');
    crashPoint('collection:removed');
    await c.changes.deleted(gone === null ? [] : gone === undefined ? undefined : [gone], hooks);
    await c.removed([id]);
    return { status: 204 };
  }
  // Hidden by the read rule: 404 as if missing; readable but not deletable: 403 naming the rule.
  const doc = await c.store.findOne(andFilters(filter, scope.filter('read')));
  if (doc === null) throw new SvcError('NOT_FOUND', 'not found');
  if (expected !== undefined) await c.assertMatches(ctx, doc, expected);
  c.access.assert(ctx, 'delete', doc);
  filter = andFilters(filter, c.access.filter(ctx, 'delete'));
  const object = c.withoutStoreOnly(doc);
  const scripted = c.events.has('delete') && !skipEvents;
  if (scripted) await c.events.run('delete', { ctx, object });
  const condition = revised ? { revision: revised.revision } : undefined;
  if (condition !== undefined && (await c.store.findRevised(id))?.revision !== condition.revision) return movedAfter(scripted);
  const plan = referenced ? await c.relations.beforeRemove([id]) : undefined;
  const target = condition === undefined || typeof filter.id === 'string' ? filter : { id, $and: [filter] };
  const hooks = c.deleteHooks([doc]);
  if ((await c.store.remove(target, condition, hooks)) === 0) {
    if (condition !== undefined && (await c.store.findOne(filter)) !== null) return movedAfter(scripted);
    throw new SvcError('NOT_FOUND', 'not found');
  }
  crashPoint('collection:removed');
  await c.changes.deleted([doc], hooks);
  if (plan !== undefined) await c.relations.afterRemove(plan);
  await c.removed([id]);
  if (!skipEvents) await c.afterCommit(ctx, object, undefined);
  return { status: 204 };
}

/**
 * DELETE with a condition on id (`{"id": {"$in": [...]}}`, `{"id": {"$ne": null}}`): as in
 * Deployd, every match is deleted and On Delete runs once per object; a cancel() keeps the object
 * it ran for. Answers 204 when something was deleted, else the first script error (or 404).
 */
async function deleteMatching(c: DeleteHost, ctx: Context): Promise<Reply> {
  const scope = c.scopeOf(ctx);
  const asked = andFilters(compileFilter(ctx.query, c.properties, scope.refusals), scope.filter('read'));
  // Only what the delete rule allows is deleted; when that is nothing, 403 if the caller could read some.
  const filter = andFilters(asked, c.access.filter(ctx, 'delete'));
  if (!c.access.rules.isOpen('delete') && !c.access.bypasses(ctx) && (await c.store.count(filter)) === 0) {
    throw (await c.store.count(asked)) > 0 ? new SvcError('FORBIDDEN', 'forbidden by rules.delete') : new SvcError('NOT_FOUND', 'not found');
  }
  const skipEvents = ctx.isRoot && skipEventsAsked(ctx, undefined);
  if (skipEvents || (!c.events.has('delete') && !c.events.has('aftercommit'))) return deleteMatchingUnscripted(c, filter);
  const docs = await c.store.find(filter, {});
  if (docs.length === 0) throw new SvcError('NOT_FOUND', 'not found');
  const deleted: Doc[] = [];
  let firstError: unknown;
  for (const doc of docs) {
    try {
      if (c.events.has('delete')) await c.events.run('delete', { ctx, object: c.withoutStoreOnly(doc) });
      deleted.push(doc);
    } catch (err) {
      if (!isSvcError(err) || err.status >= 500) throw err;
      firstError ??= err;
    }
  }
  if (deleted.length === 0) throw firstError;
  const plan = c.relations.isReferenced() ? await c.relations.beforeRemove(deleted.map((d) => d.id)) : undefined;
  const hooks = c.deleteHooks(deleted);
  await c.store.remove({ id: { $in: deleted.map((d) => d.id) } }, undefined, hooks);
  crashPoint('collection:removed');
  await c.changes.deleted(deleted, hooks);
  if (plan !== undefined) await c.relations.afterRemove(plan);
  await c.removed(deleted.map((d) => d.id));
  for (const doc of deleted) await c.afterCommit(ctx, c.withoutStoreOnly(doc), undefined);
  return { status: 204 };
}

/** deleteMatching when no script runs: one remove, reading first only what someone needs of it. */
async function deleteMatchingUnscripted(c: DeleteHost, filter: Filter): Promise<Reply> {
  const referenced = c.relations.isReferenced();
  const wanted = c.changes.wanted();
  if (c.needsRemovedIds() || referenced || wanted) {
    // Removed by id, so that exactly the objects read are the ones told deleted.
    const docs = await c.store.find(filter, wanted ? {} : { fields: { id: 1 } });
    const ids = docs.map((d) => d.id);
    if (ids.length === 0) throw new SvcError('NOT_FOUND', 'not found');
    const plan = referenced ? await c.relations.beforeRemove(ids) : undefined;
    const hooks = wanted ? c.deleteHooks(docs) : undefined;
    if ((await c.store.remove({ id: { $in: ids } }, undefined, hooks)) === 0) throw new SvcError('NOT_FOUND', 'not found');
    crashPoint('collection:removed');
    await c.changes.deleted(wanted ? docs : undefined, hooks);
    if (plan !== undefined) await c.relations.afterRemove(plan);
    await c.removed(ids);
    return { status: 204 };
  }
  const removed = await c.store.remove(filter);
  if (removed === 0) throw new SvcError('NOT_FOUND', 'not found');
  await c.changes.deleted(undefined);
  return { status: 204 };
}
