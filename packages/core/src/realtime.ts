/**
 * Sends realtime messages. @svc/realtime implements it over Socket.IO; core and scripts only know
 * this interface. Until a transport is attached, messages go to a recorder.
 */
export interface Realtime {
  /** Sends `message` with `data` to every connected client. */
  emit(message: string, data?: unknown): void;
  /** Sends to the sockets of the users of `usersPath` matching `query` only. */
  emitToUsers(usersPath: string, query: Record<string, unknown>, message: string, data?: unknown): Promise<void>;
  /**
   * Optional: sends objects of the collection at `collectionPath` (an object, or an array of
   * them) to every socket (or those of the users of `users.path` matching `users.query`), each
   * recipient getting them as its own GET would show them (`Collection.showTo`): an object it may
   * not see is left out, a property it may not read is absent. Scripts' emits of their own
   * collection's objects go through it.
   */
  emitObjects?(collectionPath: string, message: string, data: unknown, users?: { path: string; query: Record<string, unknown> }): Promise<void>;
}

/** One message a {@link RecordingRealtime} saw. */
export interface RecordedMessage {
  message: string;
  data: unknown;
  /** Present for user-targeted messages. */
  users?: { path: string; query: Record<string, unknown> };
}

/** A Realtime that keeps what was emitted: the default without a transport, and a test double. */
export class RecordingRealtime implements Realtime {
  readonly messages: RecordedMessage[] = [];
  private readonly limit: number;

  constructor(limit = 1000) {
    this.limit = limit;
  }

  emit(message: string, data?: unknown): void {
    this.push({ message, data });
  }

  emitToUsers(path: string, query: Record<string, unknown>, message: string, data?: unknown): Promise<void> {
    this.push({ message, data, users: { path, query } });
    return Promise.resolve();
  }

  private push(entry: RecordedMessage): void {
    this.messages.push(entry);
    if (this.messages.length > this.limit) this.messages.shift();
  }
}
