import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SVC_BIN } from './cli.js';

// The launcher starts the CLI in a child with --no-node-snapshot and, unless the heap's size was
// chosen, a first old-generation limit of 128 MB (apps/server/bin/svc.js says why). A preload
// given through NODE_OPTIONS records each process's node flags, the launcher's and its child's.
let dir: string;
let preload: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-launcher-'));
  preload = join(dir, 'record.cjs');
  await writeFile(preload, "require('node:fs').appendFileSync(process.env.SVC_TEST_FLAGS_FILE, JSON.stringify(process.execArgv) + '\\n');\n");
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs `svc --version` with `nodeArgs` and NODE_OPTIONS; answers the flags of the process that ran the CLI. */
async function cliFlags(name: string, nodeArgs: string[], nodeOptions = ''): Promise<string[]> {
  const file = join(dir, `${name}.jsonl`);
  const run = spawnSync(process.execPath, [...nodeArgs, SVC_BIN, '--version'], {
    env: { ...process.env, NODE_OPTIONS: `--require ${preload} ${nodeOptions}`.trim(), SVC_TEST_FLAGS_FILE: file },
    encoding: 'utf8',
  });
  expect(run.status, run.stderr).toBe(0);
  const lines = (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as string[]);
  const cli = lines.filter((flags) => flags.includes('--no-node-snapshot'));
  expect(cli).toHaveLength(1);
  return cli[0] as string[];
}

describe('svc launcher: node flags of the CLI process', () => {
  it('adds --initial-old-space-size=128 when it starts the child', async () => {
    expect(await cliFlags('default', [])).toContain('--initial-old-space-size=128');
  });

  it('keeps the size the user chose on the command line', async () => {
    const flags = await cliFlags('chosen', ['--max-old-space-size=96']);
    expect(flags).toContain('--max-old-space-size=96');
    expect(flags.some((f) => f.startsWith('--initial-old-space-size'))).toBe(false);
  });

  it('keeps the size the user chose in NODE_OPTIONS', async () => {
    const flags = await cliFlags('options', [], '--max-old-space-size=96');
    expect(flags.some((f) => f.startsWith('--initial-old-space-size'))).toBe(false);
  });

  it('adds nothing when started with --no-node-snapshot already (no second process)', async () => {
    expect(await cliFlags('direct', ['--no-node-snapshot'])).toEqual(['--no-node-snapshot']);
  });
});
