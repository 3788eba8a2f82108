import { coreRangeOf, defineResourceType } from '@svc/core';
import type { ResourceType } from '@svc/core';
import { createImporterResource } from './internal/importerResource.js';

/** The settings of an Importer resource, as validated from its config.json. */
export type ImporterSettings = {
  /** Connection string of the source MongoDB server (any MongoDB wire-protocol server). */
  url: string;
  /** The source database. */
  database: string;
  /** The collections to import; all but system collections when absent. */
  collections?: string[];
  /** Source collection -> resource name, for names that are not resource names or clash. */
  rename?: Record<string, string>;
  /** Documents read and written per batch; default 1000. */
  batchSize: number;
};

/**
 * The Importer resource type: a root-only `POST /<importer>/run` streams collections of an
 * existing MongoDB database into the app's own store (embedded or MongoDB), `_id` becoming `id`,
 * infers each property's type and writes resources/<name>/config.json for each collection.
 * `GET /<importer>/status` reports progress.
 */
export const importerType: ResourceType<ImporterSettings> = defineResourceType<ImporterSettings>({
  name: 'Importer',
  core: coreRangeOf(import.meta.url),
  settings: {
    url: { type: 'string', required: true, description: 'Source MongoDB connection string (mongodb://user:pass@host:27017)' },
    database: { type: 'string', required: true, description: 'Source database' },
    collections: { type: 'array', description: 'Collections to import; empty for all' },
    rename: { type: 'object', description: 'Source collection -> resource name' },
    batchSize: { type: 'number', default: 1000, description: 'Documents per batch' },
  },
  events: [],
  client: { methods: { run: { method: 'POST', func: 'run' }, status: { method: 'GET', func: 'status' } } },
  dashboard: { events: {} },
  create: (context) => {
    checkSettings(context.name, context.settings);
    return createImporterResource(context);
  },
});

function checkSettings(name: string, settings: ImporterSettings): void {
  if (!/^mongodb(\+srv)?:\/\//.test(settings.url)) throw new Error(`resource ${name}: setting url must be a mongodb:// or mongodb+srv:// URL`);
  if (settings.collections?.some((c) => typeof c !== 'string' || c === '')) throw new Error(`resource ${name}: setting collections must list collection names`);
  if (settings.rename && Object.values(settings.rename).some((v) => typeof v !== 'string')) throw new Error(`resource ${name}: setting rename must map collection names to resource names`);
  if (!Number.isInteger(settings.batchSize) || settings.batchSize < 1 || settings.batchSize > 100_000) throw new Error(`resource ${name}: setting batchSize must be an integer from 1 to 100000`);
}
