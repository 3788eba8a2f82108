import { coreRangeOf, defineResourceType } from '@svc/core';
import type { ResourceType } from '@svc/core';
import { createBucketResource } from './internal/bucketResource.js';

/** The settings of a Bucket resource, as validated from its config.json. */
export type BucketSettings = {
  /** Name of the bucket. */
  bucket: string;
  /** Access key. */
  key: string;
  /** Secret key. */
  secret: string;
  /** Region; default 'us-east-1' (what most S3-compatible services expect). */
  region: string;
  /** Base URL of an S3-compatible service (MinIO, R2, ...); path-style addressing is used with it. */
  endpoint?: string;
};

/** The event script files a Bucket loads: On Upload, On Get, On Delete. */
export const BUCKET_EVENTS = ['upload.js', 'get.js', 'delete.js'] as const;

/**
 * The object-storage Bucket resource type: files under /<bucket>/<file> stored in an S3 bucket.
 * Uploads (raw bodies and multipart forms) and downloads stream; provider errors pass through.
 */
export const bucketType: ResourceType<BucketSettings> = defineResourceType<BucketSettings>({
  name: 'Bucket',
  core: coreRangeOf(import.meta.url),
  settings: {
    bucket: { type: 'string', required: true, description: 'Name of the bucket' },
    key: { type: 'string', required: true, description: 'Access key of the bucket' },
    secret: { type: 'string', required: true, description: 'Secret key of the bucket' },
    region: { type: 'string', default: 'us-east-1', description: 'Region of the bucket' },
    endpoint: { type: 'string', description: 'URL of an S3-compatible service (path-style addressing); empty for AWS' },
  },
  events: BUCKET_EVENTS,
  // Downloads and deletes work through the client library; uploads do not (they are not JSON).
  client: {},
  dashboard: { events: { 'upload.js': 'On Upload', 'get.js': 'On Get', 'delete.js': 'On Delete' } },
  create: (context) => createBucketResource(context),
});
