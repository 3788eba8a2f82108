import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSvc } from './cli.js';

// The commands that need neither the server nor @svc/core (help, a usage error, create, keygen,
// showkey) do not load them: loading everything cost ~0.5 s of CPU before `svc help` answered
// (0.6 s against 0.1 s now). The probe lists, when the process exits, every module it loaded
// (import and require alike, through module.registerHooks).
const PROBE = `
import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, context, nextLoad) { loaded.push(url); return nextLoad(url, context); } });
process.on('exit', () => process.stderr.write('loaded modules: ' + JSON.stringify(loaded) + '\\n'));
`;

/** The server's start and @svc/core (the package, whether from the workspace or node_modules). */
const HEAVY = /\/apps\/server\/dist\/startApp\.js$|\/packages\/core\/dist\/|\/node_modules\/@svc\/core\//;

function loadedModules(stderr: string): string[] {
  const line = /loaded modules: (.*)/.exec(stderr)?.[1];
  if (line === undefined) throw new Error(`the probe printed nothing:\n${stderr}`);
  return JSON.parse(line) as string[];
}

describe('what a command that serves nothing loads', () => {
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-cli-loads-'));
    const probe = join(dir, 'probe.mjs');
    await writeFile(probe, PROBE);
    env = { NODE_OPTIONS: `--import ${probe}` };
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('svc types loads @svc/core (the probe sees it: control)', async () => {
    const app = join(dir, 'typed');
    expect((await runSvc(['create', app])).code).toBe(0);
    const run = await runSvc(['types', app, '--out', '-'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(loadedModules(run.stderr).filter((url) => HEAVY.test(url))).not.toEqual([]);
  });

  it('help, a usage error, create, keygen and showkey load neither the server nor @svc/core', async () => {
    const app = join(dir, 'app');
    const commands = [['help'], ['create', '--help'], ['--bogus'], ['create', app], ['keygen', app], ['showkey', app]];
    for (const args of commands) {
      const run = await runSvc(args, env);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(args[0] === '--bogus' ? 2 : 0);
      expect(loadedModules(run.stderr).filter((url) => HEAVY.test(url)), args.join(' ')).toEqual([]);
    }
  });
});
