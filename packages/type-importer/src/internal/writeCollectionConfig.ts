import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PropertyDef } from '@svc/core';

/** What happened to a resource's config.json. */
export type ConfigOutcome = 'created' | 'updated' | 'unchanged';

/**
 * Writes resources/<name>/config.json for an imported collection. A Collection (or
 * UserCollection) already there keeps its type and its property definitions, which win over the
 * inferred ones; only new properties are added. Any other type there is refused.
 */
export async function writeCollectionConfig(appDir: string, name: string, inferred: Record<string, PropertyDef>): Promise<ConfigOutcome> {
  const dir = join(appDir, 'resources', ...name.split('/'));
  const file = join(dir, 'config.json');
  const existing = await checkImportTarget(appDir, name);
  const current = (existing?.properties ?? {}) as Record<string, PropertyDef>;
  const properties: Record<string, PropertyDef> = { ...current };
  for (const [prop, def] of Object.entries(inferred)) if (!(prop in properties)) properties[prop] = def;
  const config = { ...(existing ?? { type: 'Collection' }), properties };
  const text = `${JSON.stringify(config, null, 2)}\n`;
  if (existing !== undefined && text === `${JSON.stringify(existing, null, 2)}\n`) return 'unchanged';
  await mkdir(dir, { recursive: true });
  // Write then rename: a server starting meanwhile never reads half a file.
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, text);
  await rename(temp, file);
  return existing === undefined ? 'created' : 'updated';
}

/**
 * Throws unless resources/<name> is free or a Collection (checked before a byte is imported);
 * answers its config when there is one.
 */
export async function checkImportTarget(appDir: string, name: string): Promise<Record<string, unknown> | undefined> {
  const existing = await readConfig(join(appDir, 'resources', ...name.split('/'), 'config.json'));
  if (existing !== undefined && existing.type !== 'Collection' && existing.type !== 'UserCollection') {
    throw new Error(`resources/${name} has type ${String(existing.type)}, not Collection: import it under another name with "rename"`);
  }
  return existing;
}

async function readConfig(file: string): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const parsed = JSON.parse(text) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${file} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

/** A resource name for a source collection: path segments of letters, digits, '-' and '_'. */
export function resourceNameFor(collection: string): string {
  const name = collection
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .replace(/-+$/, '');
  return name === '' ? 'imported' : name;
}
