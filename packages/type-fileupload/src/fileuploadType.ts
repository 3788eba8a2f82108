import { coreRangeOf, defineResourceType } from '@svc/core';
import type { ResourceType } from '@svc/core';
import { createFileuploadResource } from './internal/fileuploadResource.js';

/** The settings of a Fileupload resource, as validated from its config.json (dpd-fileupload's keys, and limits). */
export type FileuploadSettings = {
  /** The folder of the app the files go to ('upload'); never public/, resources/ or a dot folder. */
  directory: string;
  /** Only logged-in users (or root) list, upload, get and delete; each deletes only their own files. */
  authorization: boolean;
  /** Store each file under a random name; its own name is kept as `originalFilename`. */
  uniqueFilename: boolean;
  /** Largest file accepted, in bytes; a larger one is refused with 413 and nothing is stored. */
  maxFileSize: number;
  /** Most files in one upload request. */
  maxFiles: number;
};

/** The event script files a Fileupload loads, as dpd-fileupload's: On Get, On Upload, On Delete. */
export const FILEUPLOAD_EVENTS = ['get.js', 'upload.js', 'delete.js'] as const;

/** 25 MiB: photos and documents pass, a disk is not filled by a few requests. */
const DEFAULT_MAX_FILE_SIZE = 25 * 1024 * 1024;
const DEFAULT_MAX_FILES = 20;

/**
 * dpd-fileupload's "Fileupload" type: multipart uploads stored in a folder of the app, one record
 * per file in the store (listed, fetched and deleted over HTTP), files served back by name with
 * headers that keep them from running as pages of the app.
 */
export const fileuploadType: ResourceType<FileuploadSettings> = defineResourceType<FileuploadSettings>({
  name: 'Fileupload',
  core: coreRangeOf(import.meta.url),
  settings: {
    directory: { type: 'string', default: 'upload', description: "Folder of the app the uploaded files are saved in. Defaults to 'upload'." },
    authorization: { type: 'boolean', default: false, description: 'Do you require users to be logged in to view / upload / delete files?' },
    uniqueFilename: { type: 'boolean', default: false, description: 'Save files under a unique random name (the original name is kept in the record)' },
    maxFileSize: { type: 'number', default: DEFAULT_MAX_FILE_SIZE, description: 'Largest file accepted, in bytes' },
    maxFiles: { type: 'number', default: DEFAULT_MAX_FILES, description: 'Most files in one upload' },
  },
  events: FILEUPLOAD_EVENTS,
  // dpd.<r>.get() lists, dpd.<r>.get(id) fetches a record, dpd.<r>.del(id) deletes: the generic calls.
  client: {},
  dashboard: { label: 'File upload', events: { 'get.js': 'On Get', 'upload.js': 'On Upload', 'delete.js': 'On Delete' } },
  create: (context) => createFileuploadResource(context),
});
