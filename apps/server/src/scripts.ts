import type { CollectionEventRunner, EventScripts, InternalRequest, Logger, Realtime, Reply } from '@svc/core';
import type { ScriptFactory } from './buildResources.js';
import type { AppFolder, ResourceFolder } from './loadApp.js';

/** What the script factory needs from the app. */
export interface ScriptFactoryOptions {
  app: AppFolder;
  env: 'development' | 'production';
  logger: Logger;
  realtime: Realtime;
  request(input: InternalRequest): Promise<Reply>;
}

const NONE: EventScripts = {
  has: () => false,
  run: () => Promise.reject(new Error('no event script')),
};

/** Event scripts for the app's resources, run by @svc/script-runtime. */
export function createScriptFactory(_options: ScriptFactoryOptions): ScriptFactory {
  return {
    forResource(folder: ResourceFolder, events: ReadonlySet<string>): EventScripts {
      if (![...folder.scripts.keys()].some((f) => events.has(f))) return NONE;
      throw new Error(`resource ${folder.path.slice(1)}: event scripts are not wired yet`);
    },
    forCollection(folder: ResourceFolder): CollectionEventRunner | undefined {
      if (folder.scripts.size === 0) return undefined;
      throw new Error(`resource ${folder.path.slice(1)}: event scripts are not wired yet`);
    },
  };
}
