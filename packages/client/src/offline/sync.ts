import type { SvcErrorBody } from '../types.js';
import { etagOfObject } from './etag.js';
import type { Replica } from './Replica.js';
import { keyOf, visibleOf } from './state.js';
import type { QueuedWrite, ReplicaObject } from './types.js';

const RETRY_MS = 2000;
const MAX_CONFLICT_ROUNDS = 5;

type Outcome = 'sent' | 'stop';

/**
 * Sends a replica's queued writes in order, one at a time, each with the version it was based on
 * (If-Match; a create with If-None-Match: * at its client-made id), only as the user who made it:
 * before a round, the session is asked who it is (GET /<users>/me), and writes made as another
 * user (or before a session ended) wait for that user to log in again. Answers settle each write:
 * done (the server's object is kept), a conflict (412: the collection's policy), refused (the
 * server's error: rolled back in the replica and reported), or unreachable (wait, try again).
 */
export class Sync {
  private running: Promise<void> | undefined;
  private again: Promise<void> | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private watching = false;

  constructor(private readonly replica: Replica) {}

  etag(object: ReplicaObject): string {
    return etagOfObject(object);
  }

  /** The signed-in user's id, undefined for none, 'unreachable' when the server does not answer. */
  async me(): Promise<string | undefined | 'unreachable'> {
    try {
      const me = (await this.replica.transport.send({ method: 'GET', path: `${this.replica.options.users ?? '/users'}/me` })) as { id?: unknown } | null;
      return typeof me?.id === 'string' ? me.id : undefined;
    } catch (err) {
      const status = (err as SvcErrorBody).status;
      return status === 0 || status >= 500 ? 'unreachable' : undefined;
    }
  }

  /** Browser online/offline events start a round or mark the replica offline. */
  watchNetwork(): void {
    if (this.watching) return;
    this.watching = true;
    const target = globalThis as { addEventListener?: (type: string, fn: () => void) => void };
    target.addEventListener?.('online', () => void this.flush());
    target.addEventListener?.('offline', () => this.replica.setStatus('offline'));
  }

  /** GET /<c>/<id>: the server's object becomes the confirmed one (404: gone). */
  async fetchOne(path: string, id: string): Promise<void> {
    try {
      this.replica.confirmed(path, id, (await this.replica.transport.send({ method: 'GET', path: `${path}/${encodeURIComponent(id)}` })) as ReplicaObject);
    } catch (err) {
      if ((err as SvcErrorBody).status === 404) this.replica.confirmed(path, id, null);
      else throw err;
    }
  }

  /**
   * A round of sending, one at a time: a call during a round answers the next round, run after it
   * (the one under way may have started before the network came back).
   */
  flush(): Promise<void> {
    if (this.running !== undefined) {
      this.again ??= this.running.then(() => {
        this.again = undefined;
        return this.flush();
      });
      return this.again;
    }
    this.running = this.round().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async round(): Promise<void> {
    const replica = this.replica;
    if (replica.data.queue.length === 0) {
      const me = await this.me();
      replica.setStatus(me === 'unreachable' ? 'offline' : 'online');
      if (me === 'unreachable') this.retryLater();
      return;
    }
    const me = await this.me();
    if (me === 'unreachable') {
      replica.setStatus('offline');
      return this.retryLater();
    }
    replica.setStatus('syncing');
    while (replica.data.queue.length > 0) {
      const write = replica.data.queue[0] as QueuedWrite;
      // Never as another session's user: the writes wait for theirs (docs/offline.md).
      if (write.uid !== me) return replica.setStatus('signed-out');
      if ((await this.send(write)) === 'stop') return;
    }
    await replica.flushSave();
    replica.setStatus('online');
  }

  private retryLater(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, RETRY_MS);
    (this.timer as { unref?: () => void }).unref?.();
  }

  private async send(write: QueuedWrite): Promise<Outcome> {
    let last: SvcErrorBody = { status: 409, statusCode: 409, message: 'the object kept changing while this write was being sent' };
    for (let round = 0; round < MAX_CONFLICT_ROUNDS; round++) {
      try {
        const answer = await this.request(write);
        await this.done(write, answer);
        return 'sent';
      } catch (err) {
        const error = err as SvcErrorBody & { current?: ReplicaObject };
        if (error.status === 0 || error.status >= 500) {
          this.replica.setStatus('offline');
          this.retryLater();
          return 'stop';
        }
        if (error.status === 401) {
          this.replica.setStatus('signed-out');
          return 'stop';
        }
        if (error.status === 404 && write.kind === 'delete') return (await this.done(write, null), 'sent');
        // Sent before, its answer lost (the connection dropped after the server applied it): the
        // server's object already is what this write makes. Done, not a conflict nor a refusal.
        if (error.status === 412) {
          const server = write.kind === 'create' ? await this.serverObject(write) : error.current;
          if (server !== undefined && landed(write, server)) return (await this.done(write, server), 'sent');
        }
        if (error.status === 412 && write.kind !== 'create' && error.current !== undefined) {
          if (!(await this.settle(write, error.current))) return 'sent';
          continue;
        }
        // The object moved while the server's scripts ran for this write: nothing was written
        // (the server does not run them twice for one request); sent again, a few times.
        if (error.status === 409 && write.kind !== 'create') {
          last = error;
          continue;
        }
        await this.refused(write, error);
        return 'sent';
      }
    }
    await this.refused(write, last);
    return 'sent';
  }

  private async request(write: QueuedWrite): Promise<unknown> {
    const at = `${write.path}/${encodeURIComponent(write.id)}`;
    if (write.kind === 'create') return this.replica.transport.send({ method: 'POST', path: write.path, body: write.body, headers: { 'if-none-match': '*' } });
    if (write.base === undefined) {
      // Based on the write before it on this object: the version that write left, as the server shows it.
      await this.fetchOne(write.path, write.id);
      const confirmed = this.replica.data.objects[write.path]?.[write.id];
      if (confirmed === undefined) throw { status: 404, statusCode: 404, message: 'not found' } satisfies SvcErrorBody;
      write.base = this.etag(confirmed);
    }
    const headers = { 'if-match': write.base };
    if (write.kind === 'delete') return this.replica.transport.send({ method: 'DELETE', path: at, headers });
    return this.replica.transport.send({ method: 'PUT', path: at, body: write.body, headers });
  }

  /** The server's object at a write's id as this session reads it (undefined: none, or unreachable). */
  private async serverObject(write: QueuedWrite): Promise<ReplicaObject | undefined> {
    try {
      return (await this.replica.transport.send({ method: 'GET', path: `${write.path}/${encodeURIComponent(write.id)}` })) as ReplicaObject;
    } catch {
      return undefined;
    }
  }

  /** The server took the write: its answer is the confirmed object, the write leaves the queue (noted before the next is sent). */
  private done(write: QueuedWrite, answer: unknown): Promise<void> {
    this.drop(write, false);
    return this.replica.acknowledged(write, write.kind === 'delete' ? null : (answer as ReplicaObject));
  }

  /**
   * 412: the server's object moved since the write's base. Answers true when the write is to be
   * sent again (rebased on the server's object), false when it was dropped.
   */
  private async settle(write: QueuedWrite, server: ReplicaObject): Promise<boolean> {
    const replica = this.replica;
    const policy = replica.policies.get(write.path) ?? 'server-wins';
    const local = visibleOf(replica.data, write.path, write.id);
    replica.confirmed(write.path, write.id, server);
    let result: ReplicaObject | null = server;
    let again = false;
    if (policy === 'last-writer-wins') {
      // The properties this write changed, over the server's object; the rest stays the server's.
      write.base = this.etag(server);
      result = write.kind === 'delete' ? null : local;
      again = true;
    } else if (policy === 'app' && replica.options.resolve !== undefined) {
      const merged = await replica.options.resolve({ path: write.path, id: write.id, local, server, base: write.baseObject ?? null });
      if (merged !== null) {
        write.kind = 'update';
        write.body = changesFrom(server, merged);
        write.base = this.etag(server);
        result = merged;
        again = true;
      }
    }
    if (!again) {
      this.drop(write, true);
      replica.data.conflicted[keyOf(write.path, write.id)] = true;
    }
    replica.emit('conflict', { path: write.path, id: write.id, policy, local, server, result });
    replica.changed();
    return again;
  }

  /** The server refused the write: it and the later writes of that object are rolled back. */
  private async refused(write: QueuedWrite, error: SvcErrorBody): Promise<void> {
    this.drop(write, true);
    try {
      await this.fetchOne(write.path, write.id);
    } catch {
      // Unreachable again: the confirmed object stays; the next live answer settles it.
    }
    this.replica.emit('rejected', { write, error });
    this.replica.changed();
  }

  /** Takes the write (and, `following`, the later ones of the same object) out of the queue. */
  private drop(write: QueuedWrite, following: boolean): void {
    const data = this.replica.data;
    data.queue = data.queue.filter((w) => w !== write && !(following && w.path === write.path && w.id === write.id && w.seq > write.seq));
    this.replica.emit('queued', data.queue.length);
    this.replica.emit('object', { path: write.path, id: write.id, flags: this.replica.flags(write.path, write.id) });
  }
}

/**
 * Whether the server's object already holds what a create or an update wrote: each property of
 * its body as written (null: absent). Extra properties (set by the server's scripts) do not count.
 */
function landed(write: QueuedWrite, server: ReplicaObject): boolean {
  if (write.kind === 'delete' || typeof server !== 'object' || server === null || server.id !== write.id) return false;
  return Object.entries(write.body ?? {}).every(([key, value]) => key === 'id' || (value === null ? !(key in server) : JSON.stringify(server[key]) === JSON.stringify(value)));
}

/** The PUT body that turns `from` into `to`: changed properties, and null for those `to` lacks. */
function changesFrom(from: ReplicaObject, to: ReplicaObject): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(to)) if (key !== 'id' && JSON.stringify(value) !== JSON.stringify(from[key])) out[key] = value;
  for (const key of Object.keys(from)) if (key !== 'id' && !(key in to)) out[key] = null;
  return out;
}
