import { describe, expect, it } from 'vitest';
import { Pace } from '../src/internal/pace.js';
import type { PaceSample } from '../src/internal/pace.js';

// The deliverer's concurrency controller, fed samples as its 200 ms timer would (no timing here:
// each sample is the figures of one interval). Before it, one saturated sample with writes dropped
// the deliveries from the setting to one at a time (paced), and the first calm one raised them back
// to the setting: at 500 writes/s the deliverer's own 16-wide burst made the next sample look
// saturated by writes, and it flipped between the two every 200-600 ms (bench/RESULTS.md, round 6).

const calm = (offered: number, waited = true): PaceSample => ({ utilization: 0.3, offered, waited });
const full = (offered: number, waited = true): PaceSample => ({ utilization: 0.98, offered, waited });
/** A first sample without writes (none before either): the setting. */
const idle: PaceSample = { utilization: 0.1, offered: 0, waited: false };

/** Feeds the samples; answers the slots (0 for "paced": one at a time, spaced) after each. */
function run(pace: Pace, samples: PaceSample[]): number[] {
  return samples.map((s) => {
    pace.sample(s);
    return pace.paced ? 0 : pace.slots;
  });
}

describe('Pace (webhook deliveries at once)', () => {
  it('starts at one slot and grows by one per calm sample while records wait, up to the setting', () => {
    const pace = new Pace(16);
    expect(pace.slots).toBe(1);
    const out = run(pace, Array.from({ length: 20 }, () => calm(100)));
    expect(out.slice(0, 4)).toEqual([2, 3, 4, 5]);
    expect(out.slice(-5)).toEqual([16, 16, 16, 16, 16]);
  });

  it('halves the slots on a saturated sample instead of dropping to one', () => {
    const pace = new Pace(16);
    expect(run(pace, [idle, calm(100), full(100), full(100)])).toEqual([16, 16, 8, 4]);
  });

  it('grows again by one slot per calm sample after halving, up to the setting', () => {
    const pace = new Pace(16);
    run(pace, [idle, calm(100), full(100), full(100), full(100), full(100)]);
    expect(pace.slots).toBe(1);
    expect(pace.paced).toBe(false);
    const after = run(pace, Array.from({ length: 20 }, () => calm(100)));
    expect(after.slice(0, 5)).toEqual([2, 3, 4, 5, 6]);
    expect(after.at(-1)).toBe(16);
    expect(Math.max(...after)).toBe(16);
  });

  it('does not grow while nothing waits for a slot (it keeps what it has)', () => {
    const pace = new Pace(16);
    run(pace, [idle, calm(100), full(100), full(100)]);
    expect(run(pace, [calm(100, false), calm(100, false), calm(100, false)])).toEqual([4, 4, 4]);
  });

  it('paces (writes first) only when one slot still saturates the process and the writes keep their rate', () => {
    const pace = new Pace(16);
    // A closed-loop write load that fills the core: the slots come down by halves, then paced.
    const out = run(pace, [idle, calm(400), ...Array.from({ length: 6 }, () => full(400))]);
    expect(out).toEqual([16, 16, 8, 4, 2, 1, 0, 0]);
    // Paced until the utilisation falls under CALM (0.6), not just under BUSY (0.9).
    expect(run(pace, [{ utilization: 0.8, offered: 400, waited: true }])).toEqual([0]);
    expect(run(pace, [{ utilization: 0.5, offered: 400, waited: true }, calm(400)])).toEqual([2, 3]);
  });

  it("does not take the deliverer's own burst for writes that saturate the process", () => {
    const pace = new Pace(16);
    // Writes at a steady 100 a sample; the loop saturated while the writes got nowhere (held up
    // behind the deliveries): the slots come down, but never to the writes-first pace.
    const out = run(pace, [idle, calm(100), calm(100), calm(100), full(0), full(10), full(20), full(5), full(0), full(10)]);
    expect(out).toEqual([16, 16, 16, 16, 8, 4, 2, 1, 1, 1]);
    expect(pace.paced).toBe(false);
  });

  it('settles between the saturating width and its half at a write rate the core can take', () => {
    const pace = new Pace(16);
    pace.sample(idle);
    // A model of the process: 16 deliveries at once fill the loop and stop the writes, 8 or fewer do not.
    const out: number[] = [];
    for (let i = 0; i < 60; i++) {
      const slots = pace.paced ? 1 : pace.slots;
      pace.sample(slots > 8 ? full(i % 2 === 0 ? 0 : 200) : calm(100));
      out.push(pace.paced ? 0 : pace.slots);
    }
    // Never one at a time, never at the setting after the first saturated sample.
    expect(Math.min(...out)).toBeGreaterThanOrEqual(4);
    expect(Math.max(...out.slice(1))).toBeLessThanOrEqual(9);
  });

  it('gives the setting at once when no writes came in this sample or the one before (a drain alone)', () => {
    const pace = new Pace(16);
    run(pace, [calm(400), ...Array.from({ length: 6 }, () => full(400))]);
    expect(pace.paced).toBe(true);
    expect(pace.slots).toBe(1);
    // The first sample without writes may still be the writes' last; two in a row are a drain.
    expect(run(pace, [full(0), full(0), full(0)])).toEqual([0, 16, 16]);
  });

  it('never exceeds the concurrency setting, and never goes under one', () => {
    for (const max of [1, 2, 3, 16]) {
      const pace = new Pace(max);
      const out = run(pace, [
        ...Array.from({ length: 30 }, () => calm(50)),
        ...Array.from({ length: 10 }, () => full(50)),
        ...Array.from({ length: 30 }, () => calm(50)),
      ]);
      for (const slots of out) expect(slots === 0 || (slots >= 1 && slots <= max)).toBe(true);
      expect(out.at(-1)).toBe(max);
    }
  });
});
