import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbeddedStore } from '@svc/core';

// Issue 11 (4, 8): two processes on one data folder lost every write of the first; a torn last
// line in a small data file refused the start, and corruption elsewhere was dropped silently.

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-datafolder-'));
  dirs.push(dir);
  return dir;
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid as number;
}

describe('the data folder lock', () => {
  it('a second store on the same folder is refused, naming the holder; after close the folder opens again', async () => {
    const dir = await tempDir();
    const first = await createEmbeddedStore({ dir });
    await expect(createEmbeddedStore({ dir })).rejects.toThrow(/in use by this process/);
    await first.close();
    const again = await createEmbeddedStore({ dir });
    await again.close();
  });

  it('a lock held by another live process is refused with its pid', async () => {
    const dir = await tempDir();
    const { hostname } = await import('node:os');
    // The test runner's parent is alive and is not this process.
    await writeFile(join(dir, '.lock'), JSON.stringify({ pid: process.ppid, host: hostname(), startedAt: 'then' }));
    await expect(createEmbeddedStore({ dir })).rejects.toThrow(new RegExp(`in use by process ${process.ppid} on`));
  });

  it('a stale lock (its holder is gone) is taken over', async () => {
    const dir = await tempDir();
    const { hostname } = await import('node:os');
    await writeFile(join(dir, '.lock'), JSON.stringify({ pid: await deadPid(), host: hostname(), startedAt: 'then' }));
    const store = await createEmbeddedStore({ dir });
    expect(JSON.parse(await readFile(join(dir, '.lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    await store.close();
  });
});

describe('a copied data folder', () => {
  // Issue 23 (6): `cp -r data copy` while the server runs copies its lock too; opening the copy
  // said "in use by process N" (the server, which writes the original) with no way out.
  it('keeps the lock of the original: the refusal says it is a copy and how to take it over', async () => {
    const original = await tempDir();
    const copy = await tempDir();
    const store = await createEmbeddedStore({ dir: original });
    await store.collection('things').insert({ id: 'a' });
    await writeFile(join(copy, '.lock'), await readFile(join(original, '.lock')));
    const refused = await createEmbeddedStore({ dir: copy }).then(
      () => undefined,
      (err: unknown) => (err as Error).message,
    );
    expect(refused).toMatch(/looks like a copy of it/);
    expect(refused).toContain(`rm ${JSON.stringify(join(copy, '.lock'))}`);
    // Doing what it says opens the copy; the original is untouched.
    await rm(join(copy, '.lock'));
    const opened = await createEmbeddedStore({ dir: copy });
    await opened.close();
    await store.close();
  });
});

describe('torn and corrupt data files', () => {
  const line = (id: string, n: number) => JSON.stringify({ _id: id, n });

  it('a torn last line is dropped and reported, at any size (here 2 objects)', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'things.db'), `${line('a', 1)}\n${line('b', 2)}\n{"_id":"c","n":`);
    const warnings: string[] = [];
    const store = await createEmbeddedStore({ dir, warn: (m) => warnings.push(m) });
    const docs = await store.collection('things').find({}, { sort: { n: 1 } });
    expect(docs.map((d) => d.id)).toEqual(['a', 'b']);
    expect(warnings.join('\n')).toMatch(/dropped a torn last line \(\d+ bytes/);
    await store.collection('things').insert({ id: 'd', n: 4 });
    await store.close();
    const reopened = await createEmbeddedStore({ dir });
    expect(await reopened.collection('things').count({})).toBe(3);
    await reopened.close();
  });

  it('a complete last line that only misses its newline is kept', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'things.db'), `${line('a', 1)}\n${line('b', 2)}`);
    const store = await createEmbeddedStore({ dir, warn: () => undefined });
    expect(await store.collection('things').count({})).toBe(2);
    await store.close();
  });

  it('a corrupt line elsewhere refuses to load, naming the file, even in a large file', async () => {
    const dir = await tempDir();
    const lines = Array.from({ length: 500 }, (_, i) => line(`id${i}`, i));
    lines[250] = '{"_id": "broken", "n": ';
    await writeFile(join(dir, 'things.db'), `${lines.join('\n')}\n`);
    const store = await createEmbeddedStore({ dir, warn: () => undefined });
    await expect(store.collection('things').find({})).rejects.toThrow(/things\.db is corrupt/);
    await store.close();
  });
});
