/** Event loop utilisation past which a sample counts as saturated. */
export const BUSY = 0.9;
/**
 * Utilisation under which the writes-first pace ends (hysteresis: on a machine whose cores are
 * shared, a saturated process waits for a core with its events ready, which counts as idle, so the
 * figure wavers around BUSY).
 */
export const CALM = 0.6;
/** A saturated sample whose writes fell under this share of their rate with room to spare had them held up. */
const STARVED = 0.5;
/** Weight of the newest calm sample in the writes' rate with room to spare. */
const RATE_WEIGHT = 0.25;

/** What the deliverer saw over one sample of the event loop. */
export interface PaceSample {
  /** Event loop utilisation over the sample, 0..1. */
  utilization: number;
  /** Events of the webhook stored by this process over the sample (its writes). */
  offered: number;
  /** A record waited for a slot during the sample (more was due than the slots allowed). */
  waited: boolean;
}

/**
 * How many deliveries may wait for the receiver at once, from samples of the event loop:
 * additive increase, multiplicative decrease, so that the deliveries take the room the writes
 * leave and no more, without jumping between the setting and one.
 *
 * - No writes in this sample or the one before: nothing to give way to, the setting.
 * - The loop saturated: half the slots (the deliveries' own burst and writes alike slow the
 *   writes). At one slot, still saturated, with the writes not held up (at least half the rate they
 *   reach in calm samples), the writes saturate the process by themselves: the deliveries go one
 *   at a time, spaced (`paced`), until the utilisation falls under CALM. A saturated sample whose
 *   writes were held up is the deliverer's own load: it halves the slots, never paces.
 * - Otherwise one more slot when a record waited for one, up to the setting.
 */
export class Pace {
  /** Attempts that may wait for the receiver at once now, 1..max. */
  slots: number;
  /** Writes saturate the process: one delivery at a time, spaced by the deliverer. */
  paced = false;
  /** Writes per sample while the loop had room (calm samples): what they reach when nothing holds them up. */
  private calmRate = 0;
  private lastOffered = 0;

  /** Starts at one: the slots grow with what waits (a drain with no writes takes the setting at once). */
  constructor(private readonly max: number) {
    this.slots = 1;
  }

  /** Takes one sample's figures. */
  sample({ utilization, offered, waited }: PaceSample): void {
    const writing = offered > 0 || this.lastOffered > 0;
    if (!writing) {
      this.slots = this.max;
      this.paced = false;
    } else if (utilization > (this.paced ? CALM : BUSY)) {
      const heldUp = offered < this.calmRate * STARVED;
      if (this.slots > 1) this.slots = Math.max(1, Math.floor(this.slots / 2));
      else if (!heldUp) this.paced = true;
    } else {
      this.paced = false;
      if (waited) this.slots = Math.min(this.max, this.slots + 1);
      this.calmRate = this.calmRate * (1 - RATE_WEIGHT) + offered * RATE_WEIGHT;
    }
    this.lastOffered = offered;
  }
}
