export { attachApp, startApp } from './startApp.js';
export type { AttachedApp, AttachOptions, CloseOptions, RunningApp, StartOptions } from './startApp.js';
export { loadApp } from './loadApp.js';
export type { AppFolder, AppSettings, ResourceFolder } from './loadApp.js';
export { main } from './cli.js';
export { loadInstalledTypes } from './installedTypes.js';
export { scheduleBackups } from './scheduledBackups.js';
export type { ScheduledBackupOptions } from './scheduledBackups.js';
