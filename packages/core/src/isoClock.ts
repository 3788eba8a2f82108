/**
 * The wall clock's time as ISO text (`new Date().toISOString()`), for the access line of every
 * request: made at most once per millisecond, and then from the second's text kept beside it.
 *
 * Whether a millisecond passed is told by the monotonic time the caller reads anyway (`perfNow`,
 * performance.now()), so the wall clock is read once per millisecond; the text is the wall
 * clock's millisecond when it was made (under 1 ms old). `toISOString` itself cost 1.5-2 µs here
 * (bench/RESULTS.md, "Issue 39, round 7"): it runs once per second, and each millisecond in
 * between writes only its three digits after the second's text.
 */
export class IsoClock {
  #perf = -Infinity;
  #text = '';
  /** The second (ms since the epoch, a multiple of 1000) whose text is {@link #prefix}. */
  #second = Number.NaN;
  /** The second's ISO text up to its fraction: `YYYY-MM-DDTHH:mm:ss.` (or an extended year's). */
  #prefix = '';

  /** `wall`: the wall clock in ms since the epoch (Date.now; tests give their own). */
  constructor(private readonly wall: () => number = Date.now) {}

  /** The time as `toISOString` writes it, given performance.now() read by the caller. */
  now(perfNow: number): string {
    if (perfNow - this.#perf >= 1 || perfNow < this.#perf) {
      this.#perf = perfNow;
      this.#text = this.textOf(this.wall());
    }
    return this.#text;
  }

  /** `new Date(ms).toISOString()`, the second's part made once per second. */
  textOf(ms: number): string {
    const whole = Math.trunc(ms);
    const fraction = ((whole % 1000) + 1000) % 1000;
    const second = whole - fraction;
    if (second !== this.#second) {
      const iso = new Date(second).toISOString();
      // Its fraction is ".000Z": everything before the three digits is the second's.
      this.#prefix = iso.slice(0, iso.length - 4);
      this.#second = second;
    }
    return `${this.#prefix}${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}Z`;
  }
}
