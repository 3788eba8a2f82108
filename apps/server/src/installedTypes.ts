import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isResourceType } from '@svc/core';
import type { ResourceType } from '@svc/core';
// The one function of semver used (its README's way to load less): 19 modules, not 47.
import satisfies from 'semver/functions/satisfies.js';

/** The @svc/core version this server runs, that type packages' `core` ranges are checked against. */
export async function coreVersion(): Promise<string> {
  const require = createRequire(import.meta.url);
  const pkgFile = require.resolve('@svc/core/package.json');
  return (JSON.parse(await readFile(pkgFile, 'utf8')) as { version: string }).version;
}

const SVC_PACKAGES = new Set(['@svc/server', '@svc/core', '@svc/client', '@svc/realtime', '@svc/script-runtime']);

/**
 * Finds the resource types an app has installed: each dependency of its package.json whose own
 * package.json declares `"svc": {"resourceTypes": ["./dist/index.js", ...]}`. Each entry's
 * default export must be a `defineResourceType(...)` value whose `core` range admits this core.
 */
export async function loadInstalledTypes(appDir: string, dependencies: readonly string[]): Promise<ResourceType[]> {
  const types: ResourceType[] = [];
  const version = await coreVersion();
  const require = createRequire(join(appDir, 'package.json'));
  for (const dep of dependencies) {
    // svc's own packages hold no resource types (an app made by svc create depends on the server).
    if (SVC_PACKAGES.has(dep)) continue;
    let pkgFile: string;
    try {
      pkgFile = require.resolve(`${dep}/package.json`);
    } catch {
      throw new Error(`package ${dep} is listed in package.json but not installed; run your package manager's install`);
    }
    const pkg = JSON.parse(await readFile(pkgFile, 'utf8')) as { svc?: { resourceTypes?: unknown } };
    const entries = pkg.svc?.resourceTypes;
    if (entries === undefined) continue;
    if (!Array.isArray(entries)) throw new Error(`${dep}: "svc.resourceTypes" must be an array of module paths`);
    for (const entry of entries) {
      if (typeof entry !== 'string') throw new Error(`${dep}: "svc.resourceTypes" must hold module paths`);
      const mod = (await import(pathToFileURL(join(dirname(pkgFile), entry)).href)) as { default?: unknown };
      const type = mod.default;
      if (!isResourceType(type)) throw new Error(`${dep}: ${entry} does not default-export a defineResourceType(...) value`);
      if (type.core !== undefined && !satisfies(version, type.core, { includePrerelease: true })) {
        throw new Error(`${dep}: resource type ${type.name} supports @svc/core ${type.core}, but this server runs ${version}`);
      }
      types.push(type);
    }
  }
  return types;
}
