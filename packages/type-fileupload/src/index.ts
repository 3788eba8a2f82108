import { fileuploadType } from './fileuploadType.js';

export { fileuploadType, FILEUPLOAD_EVENTS } from './fileuploadType.js';
export type { FileuploadSettings } from './fileuploadType.js';

/** The Fileupload resource type; the server loads it through package.json's `svc.resourceTypes`. */
export default fileuploadType;
