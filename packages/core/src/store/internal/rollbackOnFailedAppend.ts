import { createRequire } from 'node:module';

type NedbDoc = Record<string, unknown>;
type Pair = { oldDoc: NedbDoc; newDoc: NedbDoc };

/** The internals of nedb's Datastore (lib/datastore.js) that its write methods are made of. */
interface DatastoreInternals {
  indexes: Record<string, unknown>;
  persistence: { persistNewStateAsync(docs: NedbDoc[]): Promise<void> };
  _prepareDocumentForInsertion(doc: NedbDoc | NedbDoc[]): NedbDoc | NedbDoc[];
  _insertInCache(doc: NedbDoc | NedbDoc[]): void;
  _addToIndexes(doc: NedbDoc): void;
  _removeFromIndexes(doc: NedbDoc): void;
  _updateIndexes(pairs: Pair[]): void;
  _getCandidatesAsync(query: NedbDoc, dontExpireStaleDocs?: boolean): Promise<NedbDoc[]>;
  _insertAsync(doc: NedbDoc | NedbDoc[]): Promise<unknown>;
  _updateAsync(query: NedbDoc, update: NedbDoc, options: { multi?: boolean; upsert?: boolean; returnUpdatedDocs?: boolean }): Promise<unknown>;
  _removeAsync(query: NedbDoc, options?: { multi?: boolean }): Promise<number>;
}

const model = createRequire(import.meta.url)('@seald-io/nedb/lib/model.js') as {
  deepCopy<T>(doc: T): T;
  match(doc: unknown, query: NedbDoc): boolean;
  modify(doc: NedbDoc, update: NedbDoc): NedbDoc;
};

/**
 * nedb changes its cache (every index) first and appends to the datafile after; when the append
 * fails (a full disk), it leaves the cache changed: an insert the client was told failed is still
 * listed and found by id until the next start, a failed remove stays removed. This replaces its
 * three write methods with the same steps plus the undo of the cache change when the append
 * failed, in the same executor task (no read sees the state in between). Cached objects are never
 * changed in place (an update makes a new object), so the undo puts back the very objects that
 * were there, and what is kept about them (their JSON text) stays right. A success costs nothing
 * more than before. Upserts (unused by svc) are refused rather than done without undo.
 */
export function rollbackOnFailedAppend(datastore: object): void {
  const db = datastore as DatastoreInternals;
  for (const method of ['_insertAsync', '_updateAsync', '_removeAsync', '_prepareDocumentForInsertion', '_insertInCache', '_addToIndexes', '_removeFromIndexes', '_updateIndexes', '_getCandidatesAsync'] as const) {
    if (typeof db[method] !== 'function') throw new Error(`nedb without the expected ${method}`);
  }

  db._insertAsync = async function insert(this: DatastoreInternals, newDoc) {
    const prepared = this._prepareDocumentForInsertion(newDoc);
    this._insertInCache(prepared);
    const docs = Array.isArray(prepared) ? prepared : [prepared];
    try {
      await this.persistence.persistNewStateAsync(docs);
    } catch (err) {
      for (const doc of docs) this._removeFromIndexes(doc);
      throw err;
    }
    return model.deepCopy(prepared);
  };

  db._updateAsync = async function update(this: DatastoreInternals, query, updateQuery, options) {
    if (options.upsert) throw new Error('the embedded store does not upsert');
    const multi = options.multi ?? false;
    const modifications: Pair[] = [];
    for (const candidate of await this._getCandidatesAsync(query)) {
      if (model.match(candidate, query) && (multi || modifications.length === 0)) {
        modifications.push({ oldDoc: candidate, newDoc: model.modify(candidate, updateQuery) });
      }
    }
    this._updateIndexes(modifications);
    const updatedDocs = modifications.map((m) => m.newDoc);
    try {
      await this.persistence.persistNewStateAsync(updatedDocs);
    } catch (err) {
      this._updateIndexes(modifications.map((m) => ({ oldDoc: m.newDoc, newDoc: m.oldDoc })));
      throw err;
    }
    if (!options.returnUpdatedDocs) return { numAffected: modifications.length, upsert: false, affectedDocuments: null };
    const copies = updatedDocs.map((doc) => model.deepCopy(doc));
    return { numAffected: modifications.length, affectedDocuments: multi ? copies : copies[0], upsert: false };
  };

  db._removeAsync = async function remove(this: DatastoreInternals, query, options = {}) {
    const multi = options.multi ?? false;
    const removed: NedbDoc[] = [];
    for (const doc of await this._getCandidatesAsync(query, true)) {
      if (model.match(doc, query) && (multi || removed.length === 0)) {
        removed.push(doc);
        this._removeFromIndexes(doc);
      }
    }
    try {
      await this.persistence.persistNewStateAsync(removed.map((doc) => ({ $$deleted: true, _id: doc._id })));
    } catch (err) {
      for (const doc of removed) this._addToIndexes(doc);
      throw err;
    }
    return removed.length;
  };
}
