import { bucketType } from './bucketType.js';

export { bucketType, BUCKET_EVENTS } from './bucketType.js';
export type { BucketSettings } from './bucketType.js';

/** The Bucket resource type; the server loads it through package.json's `svc.resourceTypes`. */
export default bucketType;
