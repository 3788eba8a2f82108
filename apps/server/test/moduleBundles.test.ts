import { describe, expect, it } from 'vitest';
import { MAX_BUNDLES, ModuleBundles } from '../src/scriptModules.js';

/**
 * The bundles of app.json scripts.modules are kept by their server (issue 39: no module-level
 * cache, every cache bounded): the same key is bundled once, a failure is not kept, and no more
 * than MAX_BUNDLES are held, the oldest going first.
 */
describe('ModuleBundles', () => {
  const module = (name: string) => Promise.resolve({ name, source: `module.exports = ${JSON.stringify(name)}` });

  it('bundles a key once; another server bundles it again', async () => {
    let made = 0;
    const make = () => {
      made++;
      return module('a');
    };
    const server = new ModuleBundles();
    const first = server.get('k', make);
    expect(server.get('k', make)).toBe(first);
    expect(made).toBe(1);
    await new ModuleBundles().get('k', make);
    expect(made).toBe(2);
  });

  it('a failed bundle is dropped: the next start or reload tries again', async () => {
    const server = new ModuleBundles();
    await expect(server.get('k', () => Promise.reject(new Error('esbuild failed')))).rejects.toThrow('esbuild failed');
    await new Promise((r) => setImmediate(r));
    expect(server.size).toBe(0);
    await expect(server.get('k', () => module('k'))).resolves.toMatchObject({ name: 'k' });
  });

  it(`keeps at most ${MAX_BUNDLES}, the oldest dropped`, async () => {
    const server = new ModuleBundles();
    const made: string[] = [];
    for (let i = 0; i <= MAX_BUNDLES; i++) {
      await server.get(`k${i}`, () => {
        made.push(`k${i}`);
        return module(`k${i}`);
      });
    }
    expect(server.size).toBe(MAX_BUNDLES);
    await server.get(`k${MAX_BUNDLES}`, () => module('again'));
    await server.get('k0', () => {
      made.push('k0 again');
      return module('k0');
    });
    expect(made.at(-1)).toBe('k0 again');
    expect(server.size).toBe(MAX_BUNDLES);
  });
});
