import type { PropertyDef, RelationSettings } from '@svc/core';
import type { AppFolder, ResourceFolder } from './loadApp.js';

/** The settings of a `relation` property; a wrong one stops the start, naming the file and the property. */
export function relationOf(folder: ResourceFolder, name: string, def: Record<string, unknown>): Pick<PropertyDef, 'collection' | 'many' | 'onDelete'> {
  const where = `resources/${folder.path.slice(1)}/config.json: property ${name}`;
  const collection = def.collection;
  if (typeof collection !== 'string' || collection.replace(/^\//, '') === '') throw new Error(`${where}: a relation needs "collection", the name of the collection its ids point into`);
  const onDelete = def.onDelete ?? 'restrict';
  if (onDelete !== 'restrict' && onDelete !== 'setNull' && onDelete !== 'cascade') throw new Error(`${where}: "onDelete" must be "restrict", "setNull" or "cascade"`);
  if (def.many !== undefined && typeof def.many !== 'boolean') throw new Error(`${where}: "many" must be true or false`);
  return { collection: `/${collection.replace(/^\//, '')}`, many: def.many === true, onDelete };
}

/** Every relation points at a Collection or UserCollection of the app (checked before anything is built). */
export function checkRelationTargets(app: AppFolder): void {
  const collections = new Set(app.resources.filter((f) => f.config.type === 'Collection' || f.config.type === 'UserCollection').map((f) => f.path));
  for (const folder of app.resources) {
    if (!collections.has(folder.path)) continue;
    const properties = folder.config.properties;
    if (typeof properties !== 'object' || properties === null) continue;
    for (const [name, def] of Object.entries(properties as unknown as Record<string, Record<string, unknown> | null>)) {
      if (def?.type !== 'relation' || typeof def.collection !== 'string') continue;
      const target = `/${def.collection.replace(/^\//, '')}`;
      if (!collections.has(target)) {
        throw new Error(`resources/${folder.path.slice(1)}/config.json: property ${name} is a relation to "${def.collection}", which is no Collection or UserCollection of this app`);
      }
    }
  }
}

/** app.json `relations` and `aggregate`: the limits of expand, filters across relations and aggregates. */
export function relationLimits(app: AppFolder): Partial<RelationSettings> {
  const relations = app.settings.relations ?? {};
  const aggregate = app.settings.aggregate ?? {};
  const out: Partial<RelationSettings> = {};
  const take = (key: keyof RelationSettings, value: unknown): void => {
    if (typeof value === 'number') out[key] = value;
  };
  take('expandDepth', relations.expandDepth);
  take('maxExpanded', relations.maxExpanded);
  take('maxFilterIds', relations.maxFilterIds);
  take('maxGroups', aggregate.maxGroups);
  take('maxScanned', aggregate.maxScanned);
  take('aggregateTimeoutMs', aggregate.timeoutMs);
  return out;
}
