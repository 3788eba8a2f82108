import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSvc } from './cli.js';

const EXAMPLE = fileURLToPath(new URL('../example', import.meta.url));

// `svc types`: the Types of @svc/client's typed SDK for an app (type-checked in packages/client/test/types.test.ts).
describe('svc types [app-dir]', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-types-cli-'));
    await cp(EXAMPLE, dir, { recursive: true, filter: (src) => !src.startsWith(join(EXAMPLE, 'data')) });
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('writes <app>/svc-types.ts with the collections, Types and resources', async () => {
    const run = await runSvc(['types', dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`wrote ${join(dir, 'svc-types.ts')}\n`);
    const text = await readFile(join(dir, 'svc-types.ts'), 'utf8');
    expect(text).toContain("import type { CollectionDef, ResourceList } from '@svc/client';");
    expect(text).toContain('export interface Todos {\n  id: string;\n  title: string;\n  done: boolean;\n  order?: number;\n}');
    expect(text).toContain('    todos: CollectionDef<Todos>;');
    expect(text).toContain('"path": "/todos"');
  });

  it('--out - prints the module instead; --out <file> writes there', async () => {
    const printed = await runSvc(['types', dir, '--out', '-']);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain('export interface Types {');
    const file = join(dir, 'other.ts');
    const written = await runSvc(['types', dir, '-o', file]);
    expect(written.code).toBe(0);
    expect(await readFile(file, 'utf8')).toBe(printed.stdout);
  });
});
