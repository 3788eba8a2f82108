import { describe, expect, it } from 'vitest';
import { LocalChangeLog } from '../src/internal/live/changeLog.js';

// Issue 42: a client resuming a live query with `since` after the server restarted (a new
// in-memory log) got [] (nothing missed) when its number was at or above the new log's head, and
// unrelated entries below it: its replica stayed stale. A number the log did not give is a gap now.

const change = (id: string) => ({ kind: 'create' as const, object: { id } });

describe('the in-memory change log across a restart', () => {
  it('a number from an earlier log is a gap (a fresh snapshot), never an empty or a foreign replay', async () => {
    const before = new LocalChangeLog(100, () => undefined);
    await before.hold('/todos');
    for (let i = 0; i < 5; i++) before.publish('/todos', change(`a${i}`));
    const since = await before.head('/todos');
    await before.close();
    await new Promise((r) => setTimeout(r, 2));
    const after = new LocalChangeLog(100, () => undefined);
    await after.hold('/todos');
    expect(await after.since('/todos', since)).toBe('gap');
    for (let i = 0; i < 10; i++) after.publish('/todos', change(`b${i}`));
    expect(await after.since('/todos', since)).toBe('gap');
    // Its own numbers replay as before.
    const head = await after.head('/todos');
    after.publish('/todos', change('c'));
    const missed = await after.since('/todos', head);
    expect(missed).not.toBe('gap');
    expect((missed as { s: number }[]).length).toBe(1);
    expect(await after.since('/todos', head + 1)).toEqual([]);
    expect(await after.since('/todos', head + 5)).toBe('gap');
    await after.close();
  });
});
