/** Options of {@link limitRepeats}. */
export interface LimitRepeatsOptions {
  /** Identical lines logged per window; later ones are counted, not logged (default 10). */
  max?: number;
  /** The window, ms (default 10,000). */
  windowMs?: number;
}

/** Distinct lines remembered at most: past that the counts start again. */
const MAX_TRACKED = 1000;

/**
 * Wraps a log function so that one line repeated (a script failing the same way for every
 * request, a console.log in a loop) is logged at most `max` times per window; at the end of the
 * window one line says how many were dropped.
 */
export function limitRepeats(log: (line: string) => void, options: LimitRepeatsOptions = {}): (line: string) => void {
  const max = options.max ?? 10;
  const windowMs = options.windowMs ?? 10_000;
  const seen = new Map<string, { since: number; count: number; dropped: number }>();
  let timer: NodeJS.Timeout | undefined;

  const summary = (line: string, dropped: number): void =>
    log(`${line} [repeated ${dropped} more time${dropped === 1 ? '' : 's'} within ${Math.round(windowMs / 1000)} s: not logged]`);

  const sweep = (all: boolean): void => {
    const now = Date.now();
    let pending = false;
    for (const [line, entry] of seen) {
      if (!all && now - entry.since < windowMs) {
        if (entry.dropped > 0) pending = true;
        continue;
      }
      seen.delete(line);
      if (entry.dropped > 0) summary(line, entry.dropped);
    }
    if (!pending && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  return (line: string) => {
    const now = Date.now();
    let entry = seen.get(line);
    if (entry !== undefined && now - entry.since >= windowMs) {
      seen.delete(line);
      if (entry.dropped > 0) summary(line, entry.dropped);
      entry = undefined;
    }
    if (entry === undefined) {
      if (seen.size >= MAX_TRACKED) sweep(true);
      seen.set(line, { since: now, count: 1, dropped: 0 });
      log(line);
      return;
    }
    if (entry.count < max) {
      entry.count++;
      log(line);
      return;
    }
    entry.dropped++;
    // Says how many were dropped once the window ends, even when the line never comes again.
    timer ??= setInterval(() => sweep(false), Math.max(100, Math.floor(windowMs / 2))).unref();
  };
}
