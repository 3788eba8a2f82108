/**
 * The collections this process's live queries need the writes of, counted per path. A path is
 * held from its first subscription until `idleMs` after its last one ends (so that a client that
 * reconnects soon resumes from the change log instead of a fresh snapshot). Taking and letting go
 * of a path (Redis commands for the change log over Redis) run one after the other per path.
 */
export class HeldPaths {
  private readonly counts = new Map<string, number>();
  private readonly held = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Per path, the last take or let-go under way: the next one runs after it. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly idleMs: number,
    private readonly take: (path: string) => Promise<void>,
    private readonly letGo: (path: string) => Promise<void>,
  ) {}

  /** Whether `path` is held (taken, being taken, or idle but not yet let go). */
  has(path: string): boolean {
    return this.held.has(path);
  }

  /** The paths held now. */
  paths(): string[] {
    return [...this.held];
  }

  /** One more subscription needs `path`: settles once it is taken (at once when it already was). */
  hold(path: string): Promise<void> {
    this.counts.set(path, (this.counts.get(path) ?? 0) + 1);
    const timer = this.timers.get(path);
    if (timer !== undefined) clearTimeout(timer);
    this.timers.delete(path);
    if (!this.held.has(path)) {
      this.held.add(path);
      return this.then(path, () => this.take(path));
    }
    return this.chains.get(path) ?? Promise.resolve();
  }

  /** One subscription less: the last one lets go of `path` after `idleMs`. */
  release(path: string): void {
    const count = (this.counts.get(path) ?? 0) - 1;
    if (count > 0) {
      this.counts.set(path, count);
      return;
    }
    this.counts.delete(path);
    if (!this.held.has(path) || this.timers.has(path)) return;
    const timer = setTimeout(() => {
      this.timers.delete(path);
      if (this.counts.has(path)) return;
      this.held.delete(path);
      void this.then(path, () => this.letGo(path));
    }, this.idleMs);
    timer.unref();
    this.timers.set(path, timer);
  }

  close(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private then(path: string, step: () => Promise<void>): Promise<void> {
    const next = (this.chains.get(path) ?? Promise.resolve()).then(step, step);
    const settled = next.catch(() => undefined);
    this.chains.set(path, settled);
    void settled.then(() => {
      if (this.chains.get(path) === settled) this.chains.delete(path);
    });
    return settled;
  }
}
