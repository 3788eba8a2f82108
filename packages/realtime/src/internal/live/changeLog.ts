import type { CollectionChange, Logger } from '@svc/core';
import type { ChangeEntry } from './protocol.js';

/** Entries missed since a sequence number, or 'gap' when some of them are no longer kept. */
export type Missed = ChangeEntry[] | 'gap';

/**
 * Numbers every stored write of a collection (one sequence per collection) and keeps the last
 * `ringSize` of them for clients that resume; entries reach `onEntry` in sequence order.
 */
export interface ChangeLog {
  /** Numbers and passes on a write; a promise answered settles once it is numbered (or could not be). */
  publish(path: string, change: CollectionChange): void | Promise<void>;
  /** The last sequence number given for `path` (0 before any). */
  head(path: string): Promise<number>;
  /** The entries after `seq`, in order. */
  since(path: string, seq: number): Promise<Missed>;
  close(): Promise<void>;
}

export type EntryListener = (entry: ChangeEntry) => void;

function entryOf(seq: number, path: string, change: CollectionChange): ChangeEntry {
  return change.kind === 'update' ? { s: seq, p: path, k: 'update', o: change.object, v: change.previous } : { s: seq, p: path, k: change.kind, o: change.object };
}

/** One process: sequence numbers and the ring in memory; entries delivered at once. */
export class LocalChangeLog implements ChangeLog {
  private readonly logs = new Map<string, { seq: number; ring: ChangeEntry[] }>();

  constructor(
    private readonly ringSize: number,
    private readonly onEntry: EntryListener,
  ) {}

  publish(path: string, change: CollectionChange): void {
    let log = this.logs.get(path);
    if (!log) this.logs.set(path, (log = { seq: 0, ring: [] }));
    const entry = entryOf(++log.seq, path, change);
    log.ring.push(entry);
    // Trimmed in halves: one splice per ringSize/2 writes instead of a shift per write.
    if (log.ring.length > this.ringSize * 1.5) log.ring.splice(0, log.ring.length - this.ringSize);
    this.onEntry(entry);
  }

  head(path: string): Promise<number> {
    return Promise.resolve(this.logs.get(path)?.seq ?? 0);
  }

  since(path: string, seq: number): Promise<Missed> {
    return Promise.resolve(missedOf(this.logs.get(path)?.ring ?? [], this.logs.get(path)?.seq ?? 0, seq, this.ringSize));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Entries after `seq` from a ring in ascending order, or 'gap' when the ring no longer reaches back to it. */
function missedOf(ring: readonly ChangeEntry[], head: number, seq: number, ringSize: number): Missed {
  if (seq >= head) return [];
  // A client ahead of this log (another app, or a Redis that lost its data) starts afresh.
  if (seq < 0 || !Number.isInteger(seq)) return 'gap';
  const kept = ring.slice(-ringSize);
  const oldest = kept[0]?.s ?? head + 1;
  if (oldest > seq + 1) return 'gap';
  return kept.filter((e) => e.s > seq);
}

/** Longest wait of a write for Redis to number it (a slow Redis delays writes that long, no more). */
const PUBLISH_WAIT_MS = 2000;

/** The commands of a Redis client that the Redis change log uses (node-redis). */
export interface RedisCommands {
  sendCommand(args: string[]): Promise<unknown>;
}
export interface RedisSubscriber {
  subscribe(channel: string, listener: (message: string) => void): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
}

/**
 * One Lua call numbers the write, keeps it in the collection's ring and publishes it, so the
 * sequence, the ring and the order every process hears them in are the same.
 */
const PUBLISH_SCRIPT = `
local seq = redis.call('INCR', KEYS[1])
local msg = '{"s":' .. seq .. ',' .. string.sub(ARGV[1], 2)
redis.call('LPUSH', KEYS[2], msg)
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
redis.call('PUBLISH', KEYS[3], msg)
return seq`;

/**
 * Several processes over Redis: every process publishes its writes; every process (the writer
 * too) delivers them as Redis hands them out, in sequence order.
 */
export class RedisChangeLog implements ChangeLog {
  private readonly channel: string;

  private constructor(
    private readonly key: string,
    private readonly ringSize: number,
    private readonly pub: RedisCommands,
    private readonly sub: RedisSubscriber,
    private readonly logger: Logger,
    private readonly isReady: () => boolean,
  ) {
    this.channel = `${key}:live`;
  }

  static async open(options: { key: string; ringSize: number; pub: RedisCommands; sub: RedisSubscriber; logger: Logger; isReady: () => boolean; onEntry: EntryListener }): Promise<RedisChangeLog> {
    const log = new RedisChangeLog(options.key, options.ringSize, options.pub, options.sub, options.logger, options.isReady);
    await options.sub.subscribe(log.channel, (message) => {
      const entry = parseEntry(message);
      if (entry) options.onEntry(entry);
      else options.logger.warn('realtime: ignored a malformed live-query change from Redis');
    });
    return log;
  }

  /**
   * The write answers once Redis numbered it, so that the writer's next write (here or, after
   * the answer, in another process) is numbered after it. With Redis down nothing waits: the
   * command waits in the client's queue and the change is late.
   */
  publish(path: string, change: CollectionChange): Promise<void> | undefined {
    const { s: _seq, ...rest } = entryOf(0, path, change);
    const keys = this.keysOf(path);
    const sent = this.pub.sendCommand(['EVAL', PUBLISH_SCRIPT, '3', keys.seq, keys.ring, this.channel, JSON.stringify(rest), String(this.ringSize)]).then(
      () => undefined,
      (err: unknown) => {
        this.logger.warn(`realtime: a change of ${path} could not be published to Redis; live queries miss it (clients resume with a snapshot)`, { error: err });
      },
    );
    if (!this.isReady()) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, PUBLISH_WAIT_MS)));
    return Promise.race([sent, late]).finally(() => clearTimeout(timer));
  }

  async head(path: string): Promise<number> {
    const value = await this.pub.sendCommand(['GET', this.keysOf(path).seq]);
    return typeof value === 'string' ? Number(value) : 0;
  }

  async since(path: string, seq: number): Promise<Missed> {
    const keys = this.keysOf(path);
    const [head, raw] = await Promise.all([this.head(path), this.pub.sendCommand(['LRANGE', keys.ring, '0', '-1'])]);
    const ring: ChangeEntry[] = [];
    for (const text of Array.isArray(raw) ? raw : []) {
      const entry = typeof text === 'string' ? parseEntry(text) : undefined;
      if (entry) ring.push(entry);
    }
    ring.reverse();
    return missedOf(ring, head, seq, this.ringSize);
  }

  async close(): Promise<void> {
    await this.sub.unsubscribe(this.channel).catch(() => undefined);
  }

  private keysOf(path: string): { seq: string; ring: string } {
    return { seq: `${this.key}:live:seq:${path}`, ring: `${this.key}:live:ring:${path}` };
  }
}

function parseEntry(text: string): ChangeEntry | undefined {
  try {
    const value = JSON.parse(text) as Partial<ChangeEntry>;
    if (typeof value.s !== 'number' || typeof value.p !== 'string' || (value.k !== 'create' && value.k !== 'update' && value.k !== 'delete') || typeof value.o !== 'object' || value.o === null) return undefined;
    return value as ChangeEntry;
  } catch {
    return undefined;
  }
}
