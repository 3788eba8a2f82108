import type { ResourceConfig, ResourceType, SettingsSchema } from '@svc/core';
import type { AppFolder } from '../loadApp.js';
import { COLLECTION_EVENT_FILES, USER_ONLY_EVENT_FILES } from '../scripts.js';

/** The types every app has. */
export const BUILT_IN_TYPES: ReadonlySet<string> = new Set(['Collection', 'UserCollection']);

/** A resource type as the dashboard offers it. */
export interface TypeView {
  name: string;
  builtIn: boolean;
  settings: SettingsSchema;
  events: string[];
  label: string;
  /** Pages of the type's own the dashboard shows (`dashboard.pages` of the type: 'deliveries'). */
  pages: string[];
}

/** A resource as the dashboard lists it. */
export interface ResourceView {
  name: string;
  path: string;
  type: string;
  config: ResourceConfig;
  /** The event files the type loads. */
  events: string[];
  /** Those that exist. */
  files: string[];
  /** False when its type package is not installed (the server refused to load it). */
  installed: boolean;
}

/** The event files of a type, in the order the dashboard shows them. */
export function eventFilesOf(type: string, types: ReadonlyMap<string, ResourceType>): string[] {
  if (type === 'Collection') return [...COLLECTION_EVENT_FILES].filter((f) => !USER_ONLY_EVENT_FILES.has(f));
  if (type === 'UserCollection') return [...COLLECTION_EVENT_FILES];
  return [...(types.get(type)?.events ?? [])];
}

/** Everything the dashboard's pages start from. */
export function describeApp(app: AppFolder, types: ReadonlyMap<string, ResourceType>, env: string): { env: string; resources: ResourceView[]; types: TypeView[] } {
  const typeViews: TypeView[] = [
    { name: 'Collection', builtIn: true, settings: {}, events: eventFilesOf('Collection', types), label: 'Collection', pages: [] },
    { name: 'UserCollection', builtIn: true, settings: {}, events: eventFilesOf('UserCollection', types), label: 'Users', pages: [] },
  ];
  for (const type of types.values()) {
    const label = typeof type.dashboard?.label === 'string' ? type.dashboard.label : type.name;
    const pages = Array.isArray(type.dashboard?.pages) ? type.dashboard.pages.filter((p): p is string => typeof p === 'string') : [];
    typeViews.push({ name: type.name, builtIn: false, settings: type.settings ?? {}, events: [...(type.events ?? [])], label, pages });
  }
  const resources = app.resources.map((r) => ({
    name: r.path.slice(1),
    path: r.path,
    type: r.config.type,
    config: r.config,
    events: eventFilesOf(r.config.type, types),
    files: [...r.scripts.keys()],
    installed: BUILT_IN_TYPES.has(r.config.type) || types.has(r.config.type),
  }));
  return { env, resources, types: typeViews };
}
