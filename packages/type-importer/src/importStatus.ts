import type { PropertyDef } from '@svc/core';
import type { MixedType } from './internal/TypeTally.js';
import type { ConfigOutcome } from './internal/writeCollectionConfig.js';

export type { MixedType } from './internal/TypeTally.js';
export type { ConfigOutcome } from './internal/writeCollectionConfig.js';

/** Progress and outcome of one source collection in a run. */
export interface CollectionImportStatus {
  /** The source collection. */
  source: string;
  /** The resource (and store collection) it goes to. */
  resource: string;
  state: 'pending' | 'running' | 'done' | 'failed';
  /** The source's estimated document count when the run started. */
  total: number;
  /** Documents read so far. */
  read: number;
  /** New objects written. */
  inserted: number;
  /** Objects already there and replaced by a different version. */
  updated: number;
  /** Objects already there and equal to the source (no write). */
  unchanged: number;
  /** Documents the store refused (first messages in `errors`). */
  failed: number;
  errors: string[];
  /** Inferred property types, once the collection is done. */
  properties?: Record<string, PropertyDef>;
  /** Properties with values of several types: the type chosen and the counts. */
  mixed?: Record<string, MixedType>;
  /** Top-level names no svc store accepts ('$x', 'a.b'): not imported. */
  dropped?: string[];
  /** True when source documents had their own `id`, imported as `originalId`. */
  renamedId?: boolean;
  /** What happened to resources/<resource>/config.json. */
  config?: ConfigOutcome;
}

/** What GET /<importer>/status answers. */
export interface ImportStatus {
  state: 'idle' | 'running' | 'done' | 'failed';
  startedAt?: string;
  finishedAt?: string;
  /** Sum of the collections' estimated counts. */
  total: number;
  /** Documents read so far, over every collection. */
  read: number;
  /** Read documents per second since the start. */
  docsPerSecond: number;
  collections: CollectionImportStatus[];
  /** Why the run failed. */
  error?: string;
  /** True once a config.json was created or changed: the server must restart to serve it. */
  restartNeeded: boolean;
}

/** The status of an importer that never ran. */
export function idleStatus(): ImportStatus {
  return { state: 'idle', total: 0, read: 0, docsPerSecond: 0, collections: [], restartNeeded: false };
}
