import { readFile, mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { coreRangeOf } from '@svc/core';
import type { ResourceType } from '@svc/core';
import { coreVersion } from '../src/installedTypes.js';

// Issue 15 (1): the `core` range was written by hand in each type, so a release that bumped the
// peer range left the types refusing the new core. It is now read from the package.json.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const TYPES = ['type-bucket', 'type-email', 'type-event', 'type-fileupload', 'type-importer', 'type-webhook'];

/** The type a first-party package default-exports (its built dist, as an app loads it). */
async function typeOf(dir: string): Promise<ResourceType> {
  const pkg = JSON.parse(await readFile(join(REPO, 'packages', dir, 'package.json'), 'utf8')) as { svc: { resourceTypes: string[] } };
  const mod = (await import(pathToFileURL(join(REPO, 'packages', dir, pkg.svc.resourceTypes[0] as string)).href)) as { default: ResourceType };
  return mod.default;
}

describe('the @svc/core range of first-party types', () => {
  it.each(TYPES)('%s: core is its package.json peer range, and admits the core of this repository', async (dir) => {
    const type = await typeOf(dir);
    const pkg = JSON.parse(await readFile(join(REPO, 'packages', dir, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> };
    expect(type.core).toBe(pkg.peerDependencies['@svc/core']);
    expect(semver.satisfies(await coreVersion(), type.core as string)).toBe(true);
  });

  it('follows the package.json when a release changes it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-range-'));
    try {
      await mkdir(join(dir, 'dist'));
      await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'x', peerDependencies: { '@svc/core': '^0.2.0' } }));
      expect(coreRangeOf(pathToFileURL(join(dir, 'dist', 'index.js')).href)).toBe('^0.2.0');
      await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'x' }));
      expect(() => coreRangeOf(pathToFileURL(join(dir, 'dist', 'index.js')).href)).toThrow(/peerDependencies\["@svc\/core"\] is missing/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
