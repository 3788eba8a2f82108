import { describe, expect, it } from 'vitest';
import { IsoClock } from '../src/isoClock.js';

describe('IsoClock: the access line time text', () => {
  it('writes what toISOString writes, around second, day and year boundaries, before 1970 and past 9999', () => {
    const clock = new IsoClock();
    const times = [
      0, 1, 9, 10, 99, 100, 999, 1000, 1001, -1, -999, -1000, -1001, 1_764_460_799_999, 1_764_460_800_000, 1_764_460_800_007,
      Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1, 0, 0, 0, 5),
      Date.UTC(-1, 0, 1, 0, 0, 0, 250), 8.64e15, -8.64e15, 12.7, -12.7,
    ];
    for (const ms of times) expect(clock.textOf(ms), String(ms)).toBe(new Date(ms).toISOString());
    // Out of order, and many milliseconds of one second then the next.
    for (let ms = 1_764_460_799_500; ms < 1_764_460_800_600; ms += 7) expect(clock.textOf(ms)).toBe(new Date(ms).toISOString());
    for (let i = 0; i < 200; i++) {
      const ms = Math.floor((i * 7_919_333_777) % 4e12) - 1e12;
      expect(clock.textOf(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it('reads the wall clock once per millisecond of the monotonic time it is given, and again when that goes back', () => {
    let wall = Date.UTC(2026, 10, 30, 0, 0, 0, 123);
    let reads = 0;
    const clock = new IsoClock(() => {
      reads++;
      return wall;
    });
    expect(clock.now(10)).toBe('2026-11-30T00:00:00.123Z');
    wall += 1;
    expect(clock.now(10.5)).toBe('2026-11-30T00:00:00.123Z');
    expect(reads).toBe(1);
    expect(clock.now(11)).toBe('2026-11-30T00:00:00.124Z');
    expect(reads).toBe(2);
    wall += 999;
    expect(clock.now(5)).toBe('2026-11-30T00:00:01.123Z');
    expect(reads).toBe(3);
  });
});
