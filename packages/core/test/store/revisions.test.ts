import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RevisionTable } from '../../src/store/internal/revisions.js';

const SOURCE = fileURLToPath(new URL('../../src/store/internal/revisions.ts', import.meta.url));

describe('Revisions (the embedded stores\' compare-and-set)', () => {
  it('a revision a reader holds never comes back after a write of its object, whatever else is written', () => {
    const revisions = new RevisionTable().of('things');
    const held = new Map<string, Set<number>>();
    const hold = (id: string): void => {
      const seen = held.get(id) ?? new Set<number>();
      seen.add(revisions.of(id));
      held.set(id, seen);
    };
    for (let i = 0; i < 50_000; i++) {
      const id = `o${(i * 7919) % 3000}`;
      hold(id);
      revisions.advanced(id);
      // The object's revision moved past every one handed out for it before.
      expect(held.get(id)?.has(revisions.of(id))).toBe(false);
    }
  });

  it('an object nobody wrote keeps its revision while other objects are written (a conditional write on it wins)', () => {
    const revisions = new RevisionTable().of('things');
    let last = revisions.of('quiet');
    let moved = 0;
    for (let i = 0; i < 2000; i++) {
      revisions.advanced(`busy-${i}`);
      // Each write that moved it counts once (counting every write after the first move made this
      // test fail whenever one of the 2,000 ids shared its slot: about 3% of the random seeds).
      if (revisions.of('quiet') !== last) moved += 1;
      last = revisions.of('quiet');
    }
    // Only an id sharing its slot can move it (1 in 65,536 a write): at most a few of 2,000.
    expect(moved).toBeLessThanOrEqual(2);
  });

  it('one table for the whole store: the same id in two collections is two objects', () => {
    const table = new RevisionTable();
    const a = table.of('a');
    const b = table.of('b');
    const before = b.of('x');
    a.advanced('x');
    expect(a.of('x')).not.toBe(0);
    expect(b.of('x')).toBe(before);
  });

  it('keeps a fixed table: 1,000,000 objects written leave no trace on the heap', () => {
    // In a child with --expose-gc, on the source itself (node strips its types).
    const script = `
      const { RevisionTable } = await import(${JSON.stringify(`file://${SOURCE}`)});
      const r = new RevisionTable().of('things');
      gc(); const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < 1_000_000; i++) r.advanced('object-' + i);
      gc(); const after = process.memoryUsage().heapUsed;
      if (r.of('object-1') <= 0) throw new Error('not advanced');
      process.stdout.write(String(after - before));`;
    const grown = Number(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' }));
    // A map of every id written kept ~60 MB here; the table is 512 KiB off the heap.
    expect(grown).toBeLessThan(8 * 1024 * 1024);
  });
});

describe('Revisions, slots', () => {
  it('two tables place the same ids in different slots (the hash is seeded at random)', () => {
    // Ids that share a slot in one table: one write to the first moves the second too.
    const first = new RevisionTable().of('things');
    const sharing: string[] = [];
    for (let i = 0; sharing.length === 0 && i < 1_000_000; i++) {
      const before = first.of('target');
      first.advanced(`x${i}`);
      if (first.of('target') !== before) sharing.push(`x${i}`);
    }
    expect(sharing).toHaveLength(1);
    // In a second table that id moves `target` only by a 1 in 65,536 chance; 20 tables all alike
    // would mean an unseeded hash.
    let alike = 0;
    for (let t = 0; t < 20; t++) {
      const other = new RevisionTable().of('things');
      const before = other.of('target');
      other.advanced(sharing[0] as string);
      if (other.of('target') !== before) alike += 1;
    }
    expect(alike).toBeLessThan(3);
  });
});
