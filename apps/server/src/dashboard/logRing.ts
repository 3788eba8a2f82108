import type { LogEntry, LogFilter } from '@svc/dashboard';
import { matchesLogFilter } from '@svc/dashboard';

/** Entries kept by default: the Logs page's history. */
export const DEFAULT_LOG_ENTRIES = 2000;
/** Bytes (about) the kept entries may take, whatever their count. */
export const DEFAULT_LOG_BYTES = 4 << 20;
/** A longer message is cut before it is kept (a script may log megabytes in one line). */
const MAX_KEPT_MESSAGE = 8192;
/** What an entry costs beside its texts: its object and fixed fields. */
const ENTRY_OVERHEAD = 200;

/**
 * The last log entries of this process, oldest dropped first, bounded both in count and in bytes:
 * a client sending many requests (or long paths) cannot make it grow. A ring: adding one costs
 * the same at any size.
 */
export class LogRing {
  private readonly slots: (LogEntry | undefined)[];
  private readonly sizes: number[];
  private head = 0;
  private count = 0;
  private bytes = 0;
  readonly maxEntries: number;
  readonly maxBytes: number;

  constructor(options: { maxEntries?: number; maxBytes?: number } = {}) {
    this.maxEntries = options.maxEntries ?? DEFAULT_LOG_ENTRIES;
    this.maxBytes = options.maxBytes ?? DEFAULT_LOG_BYTES;
    this.slots = new Array<LogEntry | undefined>(this.maxEntries).fill(undefined);
    this.sizes = new Array<number>(this.maxEntries).fill(0);
  }

  get size(): number {
    return this.count;
  }

  /** About how many bytes the kept entries take. */
  get byteSize(): number {
    return this.bytes;
  }

  push(entry: LogEntry): void {
    const kept = entry.kind === 'log' && entry.message.length > MAX_KEPT_MESSAGE ? { ...entry, message: `${entry.message.slice(0, MAX_KEPT_MESSAGE)}... (cut)` } : entry;
    const size = ENTRY_OVERHEAD + 2 * (kept.kind === 'log' ? kept.message.length : kept.path.length + kept.id.length + (kept.uid?.length ?? 0));
    if (this.count === this.maxEntries) this.dropOldest();
    while (this.count > 0 && this.bytes + size > this.maxBytes) this.dropOldest();
    const at = (this.head + this.count) % this.maxEntries;
    this.slots[at] = kept;
    this.sizes[at] = size;
    this.count++;
    this.bytes += size;
  }

  /** The entries passing the filter, oldest first; the newest `limit` of them when more pass. */
  find(filter: LogFilter, limit: number): LogEntry[] {
    const out: LogEntry[] = [];
    // Newest first, so that the limit keeps the latest.
    for (let i = this.count - 1; i >= 0 && out.length < limit; i--) {
      const entry = this.slots[(this.head + i) % this.maxEntries] as LogEntry;
      if (matchesLogFilter(entry, filter)) out.push(entry);
    }
    return out.reverse();
  }

  private dropOldest(): void {
    this.slots[this.head] = undefined;
    this.bytes -= this.sizes[this.head] as number;
    this.head = (this.head + 1) % this.maxEntries;
    this.count--;
  }
}
