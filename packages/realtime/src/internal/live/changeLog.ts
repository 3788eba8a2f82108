import type { CollectionChange, Logger } from '@svc/core';
import { randomUUID } from 'node:crypto';
import type { ChangeEntry } from './protocol.js';
import { HeldPaths } from './HeldPaths.js';

/** Entries missed since a sequence number, or 'gap' when some of them are no longer kept. */
export type Missed = ChangeEntry[] | 'gap';

/**
 * Numbers every stored write of a collection (one sequence per collection) and keeps the last
 * `ringSize` of them for clients that resume; entries reach `onEntry` in sequence order.
 *
 * Only while some process holds a collection (has a live query on it, or had one lately) are its
 * writes numbered and passed on: with none anywhere, a write costs nothing here. A collection
 * taken again after nobody held it starts a new stretch: its sequence moves on by one and the
 * ring is emptied, so a client resuming from before gets a fresh snapshot (writes in between
 * were not kept).
 */
export interface ChangeLog {
  /** Numbers and passes on a write; a promise answered settles once it is numbered (or could not be). */
  publish(path: string, change: CollectionChange): void | Promise<void>;
  /** Whether writes of `path` are published now (some process holds it, or this one cannot tell). */
  wanted(path: string): boolean;
  /**
   * A live query of this process needs `path`: settles once every process publishes its writes
   * (a write any process makes after this settles is published).
   */
  hold(path: string): Promise<void>;
  /** That live query ended (the last one of a path lets go of it after a while). */
  release(path: string): void;
  /** The last sequence number given for `path` (0 before any). */
  head(path: string): Promise<number>;
  /** The entries after `seq`, in order. */
  since(path: string, seq: number): Promise<Missed>;
  close(): Promise<void>;
}

export type EntryListener = (entry: ChangeEntry) => void;

/** How long a collection stays held after its last live query here ended, by default. */
export const DEFAULT_IDLE_HOLD_MS = 60_000;

function entryOf(seq: number, path: string, change: CollectionChange): ChangeEntry {
  switch (change.kind) {
    case 'update':
      return { s: seq, p: path, k: 'update', o: change.object, v: change.previous };
    case 'resync':
      return { s: seq, p: path, k: 'resync' };
    default:
      return { s: seq, p: path, k: change.kind, o: change.object };
  }
}

/** One process: sequence numbers and the ring in memory; entries delivered at once. */
export class LocalChangeLog implements ChangeLog {
  private readonly logs = new Map<string, { seq: number; ring: ChangeEntry[] }>();
  private readonly held: HeldPaths;
  /** Paths whose writes went unpublished since they were last held. */
  private readonly skipped = new Set<string>();

  constructor(
    private readonly ringSize: number,
    private readonly onEntry: EntryListener,
    idleHoldMs = DEFAULT_IDLE_HOLD_MS,
  ) {
    this.held = new HeldPaths(idleHoldMs, (path) => Promise.resolve(this.take(path)), () => Promise.resolve());
  }

  wanted(path: string): boolean {
    return this.held.has(path);
  }

  hold(path: string): Promise<void> {
    return this.held.hold(path);
  }

  release(path: string): void {
    this.held.release(path);
  }

  publish(path: string, change: CollectionChange): void {
    if (!this.held.has(path)) {
      this.skipped.add(path);
      return;
    }
    const log = this.logOf(path);
    const entry = entryOf(++log.seq, path, change);
    log.ring.push(entry);
    // Trimmed in halves: one splice per ringSize/2 writes instead of a shift per write.
    if (log.ring.length > this.ringSize * 1.5) log.ring.splice(0, log.ring.length - this.ringSize);
    this.onEntry(entry);
  }

  head(path: string): Promise<number> {
    return Promise.resolve(this.logs.get(path)?.seq ?? this.base);
  }

  since(path: string, seq: number): Promise<Missed> {
    return Promise.resolve(missedOf(this.logs.get(path)?.ring ?? [], this.logs.get(path)?.seq ?? this.base, seq, this.ringSize));
  }

  close(): Promise<void> {
    this.held.close();
    return Promise.resolve();
  }

  /** Held again after writes went unpublished: a new stretch (resumes from before get a snapshot). */
  private take(path: string): void {
    if (!this.skipped.delete(path)) return;
    const log = this.logOf(path);
    log.seq++;
    log.ring = [];
  }

  private logOf(path: string): { seq: number; ring: ChangeEntry[] } {
    let log = this.logs.get(path);
    if (!log) this.logs.set(path, (log = { seq: this.base, ring: [] }));
    return log;
  }

  /**
   * Where this process's numbers start: above any an earlier process of the server gave (its
   * start time in µs, below 2^53 until the year 2255), so that a client resuming across a restart
   * with a number of the old log is 'gap' (a fresh snapshot), never a replay of unrelated entries.
   */
  private readonly base = Date.now() * 1000;
}

/** Entries after `seq` from a ring in ascending order, or 'gap' when the ring no longer reaches back to it. */
function missedOf(ring: readonly ChangeEntry[], head: number, seq: number, ringSize: number): Missed {
  if (seq === head) return [];
  // A client ahead of this log (another app, a server restarted with a new log, a Redis that
  // lost its data) starts afresh: its number means nothing here.
  if (seq > head || seq < 0 || !Number.isInteger(seq)) return 'gap';
  const kept = ring.slice(-ringSize);
  const oldest = kept[0]?.s ?? head + 1;
  if (oldest > seq + 1) return 'gap';
  return kept.filter((e) => e.s > seq);
}

/** Longest wait of a write for Redis to number it (a slow Redis delays writes that long, no more). */
const PUBLISH_WAIT_MS = 2000;
/** Longest wait for the other processes to confirm that they publish a collection just held. */
const HOLD_WAIT_MS = 5000;
/** How long a process's hold of a collection lasts in Redis unless renewed (renewed every third of it). */
const DEFAULT_LEASE_MS = 30_000;
/** Beyond a lease, how long the other processes still count it (their clocks, not Redis's). */
const LEASE_MARGIN_MS = 5000;

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
 * Takes (or renews) this process's hold of a collection: the holders hash maps
 * "<path>\n<process>" to when the hold lapses (Redis time). Lapsed holds are dropped. When no
 * other hold of the path is live, writes may have gone unpublished: the sequence moves on by one
 * and the ring is emptied, so a resume from before answers 'gap' (a fresh snapshot). Answers 1
 * when this process's own hold was still live (nothing lapsed for it), else 0.
 */
const HOLD_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prefix = ARGV[1] .. '\\n'
local own = redis.call('HGET', KEYS[1], ARGV[2])
local ownLive = own and tonumber(own) >= now
local anyLive = false
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) < now then redis.call('HDEL', KEYS[1], all[i])
  elseif string.sub(all[i], 1, #prefix) == prefix then anyLive = true end
end
redis.call('HSET', KEYS[1], ARGV[2], now + tonumber(ARGV[3]))
if not anyLive then
  redis.call('DEL', KEYS[3])
  redis.call('INCR', KEYS[2])
end
if ownLive then return 1 end
return 0`;

/** What the processes tell each other about their holds (channel `<key>:live:holds`). */
type HoldMessage = { t: 'hold'; id: string; p: string; n: string } | { t: 'renew'; id: string; ps: string[] } | { t: 'drop'; id: string; p: string };

/** Answers awaited to a hold message: how many came, and how many processes it reached (once known). */
interface AckWait {
  got: number;
  need: number | undefined;
  done: () => void;
}

/** Options of {@link RedisChangeLog.open}. */
export interface RedisChangeLogOptions {
  key: string;
  ringSize: number;
  pub: RedisCommands;
  sub: RedisSubscriber;
  logger: Logger;
  isReady: () => boolean;
  onEntry: EntryListener;
  /** Registers a listener of reconnections to Redis (pub/sub messages were lost meanwhile). */
  onReconnect: (listener: () => void) => void;
  /**
   * Told of paths whose writes this process's live queries may have missed (Redis was away, or
   * its hold lapsed): their subscriptions take a fresh snapshot.
   */
  onLapse: (paths: readonly string[]) => void;
  idleHoldMs?: number;
  leaseMs?: number;
}

/**
 * Several processes over Redis: every process publishes the writes of the collections some
 * process holds; every process (the writer too) delivers them as Redis hands them out, in
 * sequence order.
 *
 * Why no write a live query needs goes unpublished: a process holding a path first writes its
 * hold to Redis, then tells every process (pub/sub) and waits until each has answered that it
 * publishes that path's writes; only then does the live query read its snapshot or resume. A
 * write that a process decided not to publish was stored before that process answered, so before
 * the snapshot was read, and is in it. A process that cannot tell (starting, Redis away) publishes
 * every write. A process that answers nothing in HOLD_WAIT_MS (gone, or cut off from Redis) is
 * waited for no longer; writes it makes before it hears of the hold may be missed (logged).
 */
export class RedisChangeLog implements ChangeLog {
  private readonly channel: string;
  private readonly holdsChannel: string;
  private readonly ackChannel: string;
  private readonly holdersKey: string;
  /** This process's id in the holders hash and hold messages. */
  private readonly id = randomUUID();
  private readonly held: HeldPaths;
  /** The other processes' holds: path -> process id -> until when (this process's clock). */
  private readonly remote = new Map<string, Map<string, number>>();
  /** False until the holders were read from Redis (and again after a reconnection): every write is published. */
  private synced = false;
  private readonly acks = new Map<string, AckWait>();
  private readonly renewer: NodeJS.Timeout;
  private readonly leaseMs: number;

  private constructor(private readonly options: RedisChangeLogOptions) {
    const key = options.key;
    this.channel = `${key}:live`;
    this.holdsChannel = `${key}:live:holds`;
    this.ackChannel = `${key}:live:ack:${this.id}`;
    this.holdersKey = `${key}:live:holders`;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.held = new HeldPaths(
      options.idleHoldMs ?? DEFAULT_IDLE_HOLD_MS,
      (path) => this.take(path),
      (path) => this.letGo(path),
    );
    this.renewer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.leaseMs / 3)));
    this.renewer.unref();
  }

  static async open(options: RedisChangeLogOptions): Promise<RedisChangeLog> {
    const log = new RedisChangeLog(options);
    await options.sub.subscribe(log.channel, (message) => {
      const entry = parseEntry(message);
      if (entry) options.onEntry(entry);
      else options.logger.warn('realtime: ignored a malformed live-query change from Redis');
    });
    await options.sub.subscribe(log.holdsChannel, (message) => log.heard(message));
    await options.sub.subscribe(log.ackChannel, (message) => log.acked(message));
    await log.sync();
    options.onReconnect(() => void log.reconnected());
    return log;
  }

  wanted(path: string): boolean {
    if (!this.synced || this.held.has(path) || !this.options.isReady()) return true;
    const holders = this.remote.get(path);
    if (holders === undefined) return false;
    const now = Date.now();
    for (const [id, until] of holders) {
      if (until >= now) return true;
      holders.delete(id);
    }
    this.remote.delete(path);
    return false;
  }

  hold(path: string): Promise<void> {
    return this.held.hold(path);
  }

  release(path: string): void {
    this.held.release(path);
  }

  /**
   * The write answers once Redis numbered it, so that the writer's next write (here or, after
   * the answer, in another process) is numbered after it. With Redis down nothing waits: the
   * command waits in the client's queue and the change is late.
   */
  publish(path: string, change: CollectionChange): Promise<void> | undefined {
    if (!this.wanted(path)) return undefined;
    const { s: _seq, ...rest } = entryOf(0, path, change);
    const keys = this.keysOf(path);
    const sent = this.options.pub.sendCommand(['EVAL', PUBLISH_SCRIPT, '3', keys.seq, keys.ring, this.channel, JSON.stringify(rest), String(this.options.ringSize)]).then(
      () => undefined,
      (err: unknown) => {
        this.options.logger.warn(`realtime: a change of ${path} could not be published to Redis; live queries miss it (clients resume with a snapshot)`, { error: err });
      },
    );
    if (!this.options.isReady()) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, PUBLISH_WAIT_MS)));
    return Promise.race([sent, late]).finally(() => clearTimeout(timer));
  }

  async head(path: string): Promise<number> {
    const value = await this.options.pub.sendCommand(['GET', this.keysOf(path).seq]);
    return typeof value === 'string' ? Number(value) : 0;
  }

  async since(path: string, seq: number): Promise<Missed> {
    const keys = this.keysOf(path);
    const [head, raw] = await Promise.all([this.head(path), this.options.pub.sendCommand(['LRANGE', keys.ring, '0', '-1'])]);
    const ring: ChangeEntry[] = [];
    for (const text of Array.isArray(raw) ? raw : []) {
      const entry = typeof text === 'string' ? parseEntry(text) : undefined;
      if (entry) ring.push(entry);
    }
    ring.reverse();
    return missedOf(ring, head, seq, this.options.ringSize);
  }

  async close(): Promise<void> {
    clearInterval(this.renewer);
    this.held.close();
    for (const wait of this.acks.values()) wait.done();
    // The other processes stop publishing for this one's holds now rather than at their lapse.
    for (const path of this.held.paths()) await this.letGo(path).catch(() => undefined);
    for (const channel of [this.channel, this.holdsChannel, this.ackChannel]) await this.options.sub.unsubscribe(channel).catch(() => undefined);
  }

  /** Writes this process's hold of `path` to Redis, then waits until every process has heard of it. */
  private async take(path: string): Promise<void> {
    const keys = this.keysOf(path);
    try {
      await this.options.pub.sendCommand(['EVAL', HOLD_SCRIPT, '3', this.holdersKey, keys.seq, keys.ring, path, this.fieldOf(path), String(this.leaseMs)]);
      await this.announce(path);
    } catch (err) {
      this.options.logger.warn(`realtime: could not tell the other processes that live queries need the writes of ${path}; they may miss some until Redis is back`, { error: err });
    }
  }

  private async announce(path: string): Promise<void> {
    const nonce = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const wait: AckWait = { got: 0, need: undefined, done: () => undefined };
    const answered = new Promise<boolean>((resolve) => {
      wait.done = () => resolve(true);
      timer = setTimeout(() => resolve(false), HOLD_WAIT_MS);
    });
    this.acks.set(nonce, wait);
    try {
      // PUBLISH answers how many processes it reached (this one included): each of them answers.
      const reached = await this.options.pub.sendCommand(['PUBLISH', this.holdsChannel, JSON.stringify({ t: 'hold', id: this.id, p: path, n: nonce } satisfies HoldMessage)]);
      wait.need = Number(reached);
      if (wait.got >= wait.need) wait.done();
      const all = await answered;
      if (!all) this.options.logger.warn(`realtime: ${wait.need - wait.got} process(es) did not confirm in ${HOLD_WAIT_MS} ms that they publish the writes of ${path}; a write they make before they hear of it may not reach live queries`);
    } finally {
      clearTimeout(timer);
      this.acks.delete(nonce);
    }
  }

  private async letGo(path: string): Promise<void> {
    try {
      await this.options.pub.sendCommand(['HDEL', this.holdersKey, this.fieldOf(path)]);
      await this.options.pub.sendCommand(['PUBLISH', this.holdsChannel, JSON.stringify({ t: 'drop', id: this.id, p: path } satisfies HoldMessage)]);
    } catch {
      // The hold lapses by itself in leaseMs.
    }
  }

  /** Renews this process's holds; one that lapsed (a long pause, Redis away) is a gap for its live queries. */
  private async renew(): Promise<void> {
    const paths = this.held.paths();
    if (paths.length === 0 || !this.options.isReady()) return;
    const lapsed: string[] = [];
    try {
      for (const path of paths) {
        const keys = this.keysOf(path);
        const own = await this.options.pub.sendCommand(['EVAL', HOLD_SCRIPT, '3', this.holdersKey, keys.seq, keys.ring, path, this.fieldOf(path), String(this.leaseMs)]);
        if (Number(own) !== 1) lapsed.push(path);
      }
      await this.options.pub.sendCommand(['PUBLISH', this.holdsChannel, JSON.stringify({ t: 'renew', id: this.id, ps: paths } satisfies HoldMessage)]);
      for (const path of lapsed) await this.announce(path);
    } catch (err) {
      this.options.logger.warn('realtime: could not renew the holds of live queries in Redis', { error: err });
    }
    if (lapsed.length > 0) this.options.onLapse(lapsed);
  }

  /** Reads every process's holds (after subscribing to the holds channel: nothing falls in between). */
  private async sync(): Promise<void> {
    this.synced = false;
    const raw = await this.options.pub.sendCommand(['HGETALL', this.holdersKey]);
    const until = Date.now() + this.leaseMs + LEASE_MARGIN_MS;
    const list = Array.isArray(raw) ? raw : [];
    for (let i = 0; i + 1 < list.length; i += 2) {
      const field = String(list[i]);
      const cut = field.lastIndexOf('\n');
      if (cut > 0) this.holdOf(field.slice(0, cut), field.slice(cut + 1), until);
    }
    this.synced = true;
  }

  /** Back from a lost connection: holds heard of are stale, and this process's own may have lapsed. */
  private async reconnected(): Promise<void> {
    try {
      await this.sync();
    } catch (err) {
      this.options.logger.warn('realtime: could not read the holds of live queries from Redis', { error: err });
    }
    const paths = this.held.paths();
    for (const path of paths) await this.take(path);
    if (paths.length > 0) this.options.onLapse(paths);
  }

  private heard(text: string): void {
    let message: HoldMessage;
    try {
      message = JSON.parse(text) as HoldMessage;
    } catch {
      return;
    }
    if (typeof message !== 'object' || message === null || typeof message.id !== 'string') return;
    const until = Date.now() + this.leaseMs + LEASE_MARGIN_MS;
    if (message.t === 'hold' && typeof message.p === 'string' && typeof message.n === 'string') {
      if (message.id !== this.id) this.holdOf(message.p, message.id, until);
      // Answered once this process publishes the path's writes (from now on, synchronously).
      this.options.pub.sendCommand(['PUBLISH', `${this.options.key}:live:ack:${message.id}`, message.n]).catch(() => undefined);
    } else if (message.t === 'renew' && Array.isArray(message.ps)) {
      if (message.id !== this.id) for (const path of message.ps) if (typeof path === 'string') this.holdOf(path, message.id, until);
    } else if (message.t === 'drop' && typeof message.p === 'string') {
      const holders = this.remote.get(message.p);
      holders?.delete(message.id);
      if (holders?.size === 0) this.remote.delete(message.p);
    }
  }

  private acked(nonce: string): void {
    const wait = this.acks.get(nonce);
    if (!wait) return;
    wait.got++;
    if (wait.need !== undefined && wait.got >= wait.need) wait.done();
  }

  private holdOf(path: string, id: string, until: number): void {
    if (id === this.id) return;
    let holders = this.remote.get(path);
    if (!holders) this.remote.set(path, (holders = new Map()));
    holders.set(id, until);
  }

  private fieldOf(path: string): string {
    return `${path}\n${this.id}`;
  }

  private keysOf(path: string): { seq: string; ring: string } {
    return { seq: `${this.options.key}:live:seq:${path}`, ring: `${this.options.key}:live:ring:${path}` };
  }
}

function parseEntry(text: string): ChangeEntry | undefined {
  try {
    const value = JSON.parse(text) as Partial<ChangeEntry>;
    if (typeof value.s !== 'number' || typeof value.p !== 'string') return undefined;
    if (value.k === 'resync') return value as ChangeEntry;
    if ((value.k !== 'create' && value.k !== 'update' && value.k !== 'delete') || typeof value.o !== 'object' || value.o === null) return undefined;
    return value as ChangeEntry;
  } catch {
    return undefined;
  }
}
