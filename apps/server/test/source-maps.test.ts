import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 23, item 9: the published packages hold dist/ only, so a source map pointing at ../src/*.ts
// showed nothing in a debugger or a stack trace tool; each map carries its sources instead.
const root = fileURLToPath(new URL('../../../', import.meta.url));

function mapsUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js.map'))
    .map((f) => join(dir, f));
}

describe('published source maps', () => {
  const packages = [...readdirSync(join(root, 'packages')).map((p) => join(root, 'packages', p)), join(root, 'apps', 'server')];
  const maps = packages.flatMap((p) => mapsUnder(join(p, 'dist')));

  it('every built .js.map carries the content of each of its sources (built by pnpm build)', () => {
    if (maps.length === 0) {
      console.log('source maps: skipped, nothing is built (run pnpm build)');
      return;
    }
    const without = maps.filter((file) => {
      const map = JSON.parse(readFileSync(file, 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
      return map.sourcesContent?.length !== map.sources.length || map.sourcesContent.some((c) => typeof c !== 'string');
    });
    expect(without.map((f) => f.slice(root.length))).toEqual([]);
  });
});
