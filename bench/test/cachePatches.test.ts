import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// bench/caches/*.patch turn one cache off, so that its gain can be measured again on the realistic
// workload (docs/contributing/caches.md). A patch that no longer applies cannot: hot-off.patch went
// stale for two rounds unnoticed. Each must apply to the tree as it is.
const root = fileURLToPath(new URL('../..', import.meta.url));
const patches = readdirSync(`${root}bench/caches`).filter((name) => name.endsWith('.patch'));

describe('bench/caches patches', () => {
  it('has patches', () => {
    expect(patches.length).toBeGreaterThan(0);
  });
  it.each(patches)('%s applies to the tree as it is', (name) => {
    // `git apply --check` changes nothing; it also works outside a git checkout.
    expect(() => execFileSync('git', ['apply', '--check', `bench/caches/${name}`], { cwd: root, stdio: 'pipe' })).not.toThrow();
  });
});
