import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClientTestServer } from './helpers.js';
import type { ClientTestServer } from './helpers.js';

const dist = (file: string) => fileURLToPath(new URL(`../dist/${file}`, import.meta.url));
const built = ['index.js', 'svc-client.browser.js', 'svc-runtime.js', 'index.d.ts', 'server.js'].every((f) => existsSync(dist(f)));
if (!built) {
  if (process.env.CI === 'true') throw new Error('CI=true but @svc/client is not built: run pnpm build before the tests');
  process.stderr.write('SKIPPED @svc/client bundle tests: run pnpm build first\n');
}

describe.skipIf(!built)('@svc/client builds: ES modules (also for require()), browser bundle, /svc.js runtime', () => {
  let t: ClientTestServer;
  beforeAll(async () => {
    t = await startClientTestServer();
  });
  afterAll(async () => {
    await t.close();
  });

  it("require() of the package (Node's require of ES modules, >= 22.12) gives a working client (cookies kept in Node)", async () => {
    const script = `
      const { createClient } = require(${JSON.stringify(dist('index.js'))});
      const svc = createClient(process.argv[1]);
      (async () => {
        await svc('users').post({ username: 'cjs', password: 'pw' }).fail(() => null);
        await svc.users.login({ username: 'cjs', password: 'pw' });
        const me = await svc.users.me();
        process.stdout.write(JSON.stringify({ me: me.username, fail: typeof svc.todos.get().fail }));
        svc.close();
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, t.url]);
    expect(JSON.parse(stdout)).toEqual({ me: 'cjs', fail: 'function' });
  });

  it('the browser bundle is one self-contained ES module; the runtime defines __svcRuntime.install', () => {
    const browser = readFileSync(dist('svc-client.browser.js'), 'utf8');
    expect(browser).not.toMatch(/from\s*["'](?!\.)/); // no bare imports left
    expect(browser).toMatch(/export\s*\{[^}]*createClient/);
    const sandbox: { __svcRuntime?: { install?: unknown } } = {};
    runInNewContext(`${readFileSync(dist('svc-runtime.js'), 'utf8')}; this.__svcRuntime = __svcRuntime;`, sandbox);
    expect(typeof sandbox.__svcRuntime?.install).toBe('function');
  });

  it('the main and browser entries hold nothing server-side (no svc-runtime URL for bundlers to copy, no @svc/core types)', () => {
    for (const file of ['index.js', 'svc-client.browser.js']) expect(readFileSync(dist(file), 'utf8')).not.toContain('svc-runtime');
    for (const file of ['index.d.ts', 'types.d.ts', 'createClient.d.ts', 'browser.d.ts']) expect(readFileSync(dist(file), 'utf8')).not.toContain('@svc/core');
    const map = JSON.parse(readFileSync(dist('createClient.js.map'), 'utf8')) as { sourcesContent?: unknown[] };
    expect(map.sourcesContent?.length).toBeGreaterThan(0);
  });
});
