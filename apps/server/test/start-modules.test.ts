import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSvc } from './cli.js';

// A start of an app on the embedded store loads neither the MongoDB driver nor the Redis client
// (issue 41: they were several hundred ms of every start's CPU, compiling modules the app never
// uses); an app that names them loads them when it connects. The probe lists, when the process
// exits, the packages in the CommonJS cache (both drivers are CommonJS: an `import` of them puts
// their files there too). Nor nodemailer's transport (about 40 modules, loaded at an app's first
// mail), prom-client (about 80 with its dependency, loaded when app.json has metrics) or the
// client's socket.io-client (/svc.js and svc types need none of the client's runtime), and of
// semver only satisfies (19 modules, not the 47 of its index): LAZY_PROBE lists those modules
// loaded, through module.registerHooks, which sees them.
const LAZY_PROBE = `
import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, context, nextLoad) { loaded.push(url); return nextLoad(url, context); } });
process.on('exit', () => process.stderr.write('lazy modules: ' + JSON.stringify(loaded.filter((url) => /\\/node_modules\\/((nodemailer|prom-client|socket\\.io-client|engine\\.io-client)\\/|semver\\/index\\.js$)/.test(url))) + '\\n'));
`;
const PROBE = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
process.on('exit', () => {
  const names = new Set();
  for (const file of Object.keys(require.cache)) {
    const m = /.*node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file);
    if (m) names.add(m[1]);
  }
  process.stderr.write('loaded packages: ' + JSON.stringify([...names].sort()) + '\\n');
});
`;

const DRIVERS = ['mongodb', 'redis', '@redis/client'];

function loadedPackages(stderr: string): string[] {
  const line = /loaded packages: (.*)/.exec(stderr)?.[1];
  if (line === undefined) throw new Error(`the probe printed nothing:\n${stderr}`);
  return JSON.parse(line) as string[];
}

describe('what a start loads', () => {
  let dir: string;
  let probe: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-start-modules-'));
    probe = join(dir, 'probe.mjs');
    await writeFile(probe, PROBE);
    await writeFile(join(dir, 'lazy-probe.mjs'), LAZY_PROBE);
    await mkdir(join(dir, 'app/resources/todos'), { recursive: true });
    await writeFile(join(dir, 'app/resources/todos/config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' } } }));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('the probe sees a driver that is loaded (control)', () => {
    const core = fileURLToPath(new URL('../../../packages/core/', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', probe, '--input-type=module', '-e', "await import('mongodb')"], { cwd: core, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(loadedPackages(run.stderr)).toContain('mongodb');
  });

  it('an app on the embedded store loads neither the MongoDB driver nor the Redis client, nor nodemailer\'s transport, prom-client or socket.io-client', async () => {
    const svc = await startSvc([join(dir, 'app')], { NODE_OPTIONS: `--import ${probe} --import ${join(dir, 'lazy-probe.mjs')}` }, 60_000);
    try {
      const res = await fetch(`${svc.url}/todos`);
      expect(res.status).toBe(200);
    } finally {
      await svc.stop();
    }
    const loaded = loadedPackages(svc.stderr());
    expect(loaded.length).toBeGreaterThan(0);
    for (const driver of DRIVERS) expect(loaded).not.toContain(driver);
    // Only the address parser of the Email type's settings, if anything.
    const lazy = JSON.parse(/lazy modules: (.*)/.exec(svc.stderr())?.[1] ?? 'null') as string[];
    expect(lazy.filter((url) => !/\/nodemailer\/(lib|dist\/[^/]+)\/addressparser\//.test(url))).toEqual([]);
  }, 90_000);
});
