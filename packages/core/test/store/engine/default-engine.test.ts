import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The default embedded store follows what this Node offers: the engine needs node:sqlite with
// setReturnArrays (Node 24, 22.16+); svc still runs on 22.12-22.15, where apps default to the
// files store. Checked in a child process on the built package, with node:sqlite taken away.
const core = fileURLToPath(new URL('../../../dist/index.js', import.meta.url));

function defaults(withoutSqlite: boolean): string {
  const hide = "const g = process.getBuiltinModule; process.getBuiltinModule = (n) => (n === 'node:sqlite' || n === 'sqlite' ? undefined : g(n));";
  const args = [...(withoutSqlite ? ['--import', `data:text/javascript,${encodeURIComponent(hide)}`] : []), '--input-type=module', '-e', `const c = await import(${JSON.stringify(core)}); console.log(c.DEFAULT_EMBEDDED_ENGINE, c.engineSupported());`];
  const out = spawnSync(process.execPath, args, { encoding: 'utf8' });
  expect(out.stderr).toBe('');
  return out.stdout.trim();
}

describe('the default embedded store', () => {
  it('is the engine where node:sqlite has what it needs', () => {
    expect(defaults(false)).toBe('sqlite true');
  });

  it('is the files store where node:sqlite is missing (Node 22.12-22.15)', () => {
    expect(defaults(true)).toBe('files false');
  });
});
