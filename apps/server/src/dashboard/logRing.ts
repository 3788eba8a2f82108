import type { AccessEntry } from '@svc/core';
import type { AccessLogEntry, LogEntry, LogFilter } from '@svc/dashboard';
import { matchesLogFilter } from '@svc/dashboard';

/** Entries kept by default: the Logs page's history. */
export const DEFAULT_LOG_ENTRIES = 2000;
/** Bytes (about) the kept entries may take, whatever their count. */
export const DEFAULT_LOG_BYTES = 4 << 20;
/** A longer message is cut before it is kept (a script may log megabytes in one line). */
const MAX_KEPT_MESSAGE = 8192;
/** What an entry costs beside its texts: its object and fixed fields. */
const ENTRY_OVERHEAD = 200;
/** The texts arena's first size; it doubles as needed, up to half the byte bound. */
const FIRST_ARENA_BYTES = 64 * 1024;
/** Texts of an access entry in the arena, in this order: id, path, uid (time and client are held). */
const TEXTS = 3;
/** The uid's length when there is none. */
const NO_UID = 0xffffffff;

/** What the ring keeps of an answered request: core's access entry (uid may be left out). */
export type AccessFields = Omit<AccessEntry, 'uid'> & { uid?: string | undefined };

/**
 * The last log entries of this process, oldest dropped first, bounded both in count and in bytes:
 * a client sending many requests (or long paths) cannot make it grow. A ring: adding one costs
 * the same at any size.
 *
 * Access entries (one per request) are kept in columns, their numbers in typed arrays and their
 * own texts (id, path, uid) as bytes in one arena, and are made objects again only when read.
 * Kept as objects, each one (and its strings) outlived the young generation and was copied into
 * the old one: garbage collection took a large part of a scripted request's time (bench/RESULTS.md, "Figures from code comments"). The time and the client are held as they are: the server makes one time text per
 * millisecond and one client text per connection, shared by many entries, so holding them keeps
 * next to nothing alive, and a run of equal ones keeps the first. Server lines are rare and stay
 * objects.
 */
export class LogRing {
  /** Server lines (and the rare access entry with a text beyond Latin-1), else undefined. */
  private readonly objects: (LogEntry | undefined)[];
  private readonly sizes: Float64Array;
  private readonly methods: string[];
  /** Per slot: the time and client texts, held (see the class comment). */
  private readonly times: string[];
  private readonly clients: string[];
  private lastTime = '';
  private lastClient = '';
  private readonly statuses: Uint16Array;
  private readonly durations: Float64Array;
  private readonly byteCounts: Float64Array;
  private readonly aborted: Uint8Array;
  /** Per slot: where its texts start in the arena, and each text's length. */
  private readonly starts: Uint32Array;
  private readonly lengths: Uint32Array;
  private arena: Buffer;
  /** Where the next texts go in the arena. */
  private write = 0;
  private head = 0;
  private count = 0;
  private bytes = 0;
  readonly maxEntries: number;
  readonly maxBytes: number;

  constructor(options: { maxEntries?: number; maxBytes?: number } = {}) {
    this.maxEntries = options.maxEntries ?? DEFAULT_LOG_ENTRIES;
    this.maxBytes = options.maxBytes ?? DEFAULT_LOG_BYTES;
    const n = this.maxEntries;
    this.objects = new Array<LogEntry | undefined>(n).fill(undefined);
    this.sizes = new Float64Array(n);
    this.methods = new Array<string>(n).fill('');
    this.times = new Array<string>(n).fill('');
    this.clients = new Array<string>(n).fill('');
    this.statuses = new Uint16Array(n);
    this.durations = new Float64Array(n);
    this.byteCounts = new Float64Array(n);
    this.aborted = new Uint8Array(n);
    this.starts = new Uint32Array(n);
    this.lengths = new Uint32Array(n * TEXTS);
    this.arena = Buffer.allocUnsafe(Math.min(FIRST_ARENA_BYTES, this.maxArena()));
  }

  get size(): number {
    return this.count;
  }

  /** About how many bytes the kept entries take. */
  get byteSize(): number {
    return this.bytes;
  }

  push(entry: LogEntry): void {
    if (entry.kind === 'access') return this.pushAccess(entry);
    const kept = entry.message.length > MAX_KEPT_MESSAGE ? { ...entry, message: `${entry.message.slice(0, MAX_KEPT_MESSAGE)}... (cut)` } : entry;
    const at = this.makeRoom(ENTRY_OVERHEAD + 2 * kept.message.length);
    this.objects[at] = kept;
  }

  /** An answered request, kept in columns (nothing of `entry` is held once this returns). */
  pushAccess(entry: AccessFields): void {
    const uid = entry.uid;
    const textBytes = entry.id.length + entry.path.length + (uid?.length ?? 0);
    // A time or client text of another entry's length counts too: a caller may make a new one each time.
    const at = this.makeRoom(ENTRY_OVERHEAD + 2 * (entry.path.length + entry.id.length + (uid?.length ?? 0) + entry.time.length + entry.client.length));
    const start = this.reserve(textBytes);
    let end = start;
    end = latin1Into(this.arena, end, entry.id);
    if (end >= 0) end = latin1Into(this.arena, end, entry.path);
    if (end >= 0 && uid !== undefined) end = latin1Into(this.arena, end, uid);
    if (end < 0) {
      // A text beyond Latin-1 (a uid in another script): kept as it is, as an object.
      const event: AccessLogEntry = { kind: 'access', time: entry.time, level: 'info', id: entry.id, method: entry.method, path: entry.path, status: entry.status, ms: entry.ms, client: entry.client, bytes: entry.bytes, aborted: entry.aborted };
      if (uid !== undefined) event.uid = uid;
      this.objects[at] = event;
      this.lengths.fill(0, at * TEXTS, at * TEXTS + TEXTS);
      this.starts[at] = start;
      this.write = start;
      return;
    }
    this.objects[at] = undefined;
    this.starts[at] = start;
    const l = at * TEXTS;
    this.lengths[l] = entry.id.length;
    this.lengths[l + 1] = entry.path.length;
    this.lengths[l + 2] = uid === undefined ? NO_UID : uid.length;
    // Equal to the last one: the last one is held (compared by reference first, then by characters).
    this.times[at] = entry.time === this.lastTime ? this.lastTime : (this.lastTime = entry.time);
    this.clients[at] = entry.client === this.lastClient ? this.lastClient : (this.lastClient = entry.client);
    // req.method is one of Node's constant strings: holding it keeps nothing young alive.
    this.methods[at] = entry.method;
    this.statuses[at] = entry.status;
    this.durations[at] = entry.ms;
    this.byteCounts[at] = entry.bytes;
    this.aborted[at] = entry.aborted ? 1 : 0;
  }

  /** The entries passing the filter, oldest first; the newest `limit` of them when more pass. */
  find(filter: LogFilter, limit: number): LogEntry[] {
    const out: LogEntry[] = [];
    // Newest first, so that the limit keeps the latest.
    for (let i = this.count - 1; i >= 0 && out.length < limit; i--) {
      const entry = this.entryAt((this.head + i) % this.maxEntries);
      if (matchesLogFilter(entry, filter)) out.push(entry);
    }
    return out.reverse();
  }

  private entryAt(at: number): LogEntry {
    const object = this.objects[at];
    if (object !== undefined) return object;
    const l = at * TEXTS;
    let from = this.starts[at] as number;
    const text = (length: number): string => {
      const s = this.arena.toString('latin1', from, from + length);
      from += length;
      return s;
    };
    const id = text(this.lengths[l] as number);
    const path = text(this.lengths[l + 1] as number);
    const uidLength = this.lengths[l + 2] as number;
    const entry: AccessLogEntry = { kind: 'access', time: this.times[at] as string, level: 'info', id, method: this.methods[at] as string, path, status: this.statuses[at] as number, ms: this.durations[at] as number, client: this.clients[at] as string, bytes: this.byteCounts[at] as number, aborted: this.aborted[at] === 1 };
    if (uidLength !== NO_UID) entry.uid = text(uidLength);
    return entry;
  }

  /** Drops the oldest entries until one of `size` fits the count and byte bounds; its slot. */
  private makeRoom(size: number): number {
    if (this.count === this.maxEntries) this.dropOldest();
    while (this.count > 0 && this.bytes + size > this.maxBytes) this.dropOldest();
    const at = (this.head + this.count) % this.maxEntries;
    this.sizes[at] = size;
    // Texts of a slot reserved later start here; an entry without texts takes none.
    this.starts[at] = this.write;
    // Three stores, not `fill` (a builtin call with its range checks, per request).
    const l = at * TEXTS;
    this.lengths[l] = 0;
    this.lengths[l + 1] = 0;
    this.lengths[l + 2] = 0;
    this.count++;
    this.bytes += size;
    return at;
  }

  /**
   * Where `n` bytes of texts go for the newest slot: after the last entry's, wrapping to the
   * arena's start, growing it (up to half the byte bound, which texts under that bound never
   * pass) or else dropping the oldest entries whose texts are in the way.
   */
  private reserve(n: number): number {
    for (;;) {
      const at = this.fit(n);
      if (at >= 0) {
        this.write = at + n;
        return at;
      }
      if (this.arena.length < this.maxArena() || n > this.arena.length) this.grow(n);
      else this.dropOldest();
    }
  }

  /** Where `n` bytes fit in the arena without touching older entries' texts, or -1. */
  private fit(n: number): number {
    // The newest slot is already counted: the live texts are those of the others.
    if (this.count <= 1) return n <= this.arena.length ? 0 : -1;
    const oldest = this.starts[this.head] as number;
    const w = this.write;
    if (w > oldest || (w === oldest && this.liveTexts() === 0)) {
      if (w + n <= this.arena.length) return w;
      return n <= oldest ? 0 : -1;
    }
    return w + n <= oldest ? w : -1;
  }

  private liveTexts(): number {
    let total = 0;
    for (let i = 0; i < this.count - 1; i++) total += this.textBytes((this.head + i) % this.maxEntries);
    return total;
  }

  private textBytes(at: number): number {
    let total = 0;
    for (let k = 0; k < TEXTS; k++) {
      const length = this.lengths[at * TEXTS + k] as number;
      if (length !== NO_UID) total += length;
    }
    return total;
  }

  /** A larger arena, the live texts copied to its start in order (their slots' starts moved). */
  private grow(need: number): void {
    let size = this.arena.length * 2;
    while (size < need * 2) size *= 2;
    const next = Buffer.allocUnsafe(Math.max(size, need));
    let w = 0;
    for (let i = 0; i < this.count - 1; i++) {
      const at = (this.head + i) % this.maxEntries;
      const from = this.starts[at] as number;
      const length = this.textBytes(at);
      this.arena.copy(next, w, from, from + length);
      this.starts[at] = w;
      w += length;
    }
    this.arena = next;
    this.write = w;
  }

  private maxArena(): number {
    return Math.max(FIRST_ARENA_BYTES, this.maxBytes >> 1);
  }

  private dropOldest(): void {
    this.objects[this.head] = undefined;
    this.bytes -= this.sizes[this.head] as number;
    this.head = (this.head + 1) % this.maxEntries;
    this.count--;
  }
}

/** A character beyond Latin-1. */
// eslint-disable-next-line no-control-regex -- the whole Latin-1 range, control characters included
const BEYOND_LATIN1 = /[^\u0000-\u00ff]/;

/**
 * Writes `text` as Latin-1 at `at`; the end, or -1 when a character is beyond Latin-1. Native
 * (a test and a copy), not a loop of `charCodeAt`: a request's texts come in many string
 * representations, and such a loop took a generic property lookup per character.
 */
function latin1Into(arena: Buffer, at: number, text: string): number {
  if (BEYOND_LATIN1.test(text)) return -1;
  return at + arena.write(text, at, text.length, 'latin1');
}
