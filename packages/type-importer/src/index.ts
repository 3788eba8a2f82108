import { importerType } from './importerType.js';

export { importerType } from './importerType.js';
export type { ImporterSettings } from './importerType.js';
export type { CollectionImportStatus, ConfigOutcome, ImportStatus, MixedType } from './importStatus.js';

/** The Importer resource type; the server loads it through package.json's `svc.resourceTypes`. */
export default importerType;
