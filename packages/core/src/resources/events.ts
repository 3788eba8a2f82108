import type { Context } from '../types.js';
import type { Doc } from '../store/Store.js';

/**
 * The events of a Collection, in the spec's names: On Get, On Validate, On Post, On Put, On
 * Delete; and Deployd 1.2's On BeforeRequest (before any other event of GET/POST/PUT/DELETE), On
 * AfterCommit (after a write is stored) and, on a UserCollection, On Login (every login attempt) and
 * On BeforeReset (a password reset about to be made: docs/accounts.md).
 */
export type CollectionEvent = 'get' | 'validate' | 'post' | 'put' | 'delete' | 'beforerequest' | 'aftercommit' | 'login' | 'beforereset';

/** What one event run did to its object. */
export interface EventOutcome {
  /** `this` after the script: changes are stored (validate/post/put) or answered (get). */
  object: Record<string, unknown>;
  /** Properties hide() removed from the response (unhide() puts them back). */
  hidden: readonly string[];
  /** Properties protect() keeps from being written (unprotect() frees them). */
  protectedProps: readonly string[];
  /**
   * When the runner can tell: the properties the run assigned a new value (in `object`) and those
   * it deleted; nothing else of `object` differs from the input. Absent: not known.
   */
  changes?: { assigned: readonly string[]; deleted: readonly string[] };
  /** On BeforeRequest: the request's query as the script left it. */
  query?: Record<string, unknown>;
  /** With `answerCancel`: the error of a cancel() or error(), returned with `this` as it was left. */
  cancelled?: Error;
}

/** Input of one event run. */
export interface EventInput {
  ctx: Context;
  object: Record<string, unknown>;
  /** The stored values before an update; `{}` on create. */
  previous?: Record<string, unknown>;
  /**
   * Properties hidden and protected from the start of the run (an earlier event of the request,
   * `id` on an update); the outcome's lists are then the state after the run.
   */
  hidden?: readonly string[];
  protectedProps?: readonly string[];
  /** More variables of the event: `event` ('GET', 'POST', ...), `success` (On Login). */
  locals?: Record<string, unknown>;
  /**
   * A cancel() or error() is answered in the outcome's `cancelled` rather than thrown (a failed
   * login stores what its On Login changed, even when it cancels).
   */
  answerCancel?: boolean;
}

/**
 * Runs a Collection's event scripts: what core needs of them, nothing more. Implemented by the
 * server from @svc/script-runtime (apps/server/src/collectionEvents.ts); core only knows this
 * interface. A cancel() or error() rejects with an SvcError carrying the status, message and errors.
 */
export interface CollectionEventRunner {
  has(event: CollectionEvent): boolean;
  run(event: CollectionEvent, input: EventInput): Promise<EventOutcome>;
  /**
   * On Get over a list in one go; a cancelled object answers null and is left out. The objects
   * are the query's own copies: the runner may change them in place.
   */
  runGetBatch(ctx: Context, objects: readonly Doc[]): Promise<(EventOutcome | null)[]>;
  /**
   * Optional: On Get when it names every property of `this` it uses (`this.<name>`), run on the
   * values of those alone (a list answered by the `columns` plan). Fixed for the runner.
   */
  readonly getColumns?: GetColumns | undefined;
  /**
   * Optional, present only when On Get does the same whatever the request (a static plan that
   * reads nothing): On Get over one stored object at once, with no request at hand (a GET by id
   * answered without a context, the `constantPlan` plan). The outcome, or undefined when the plan
   * does not model the run, or for a run that cancels or calls error() (the request then takes
   * the usual path, which answers those). The object is the caller's copy: the runner may change it.
   */
  getNow?(object: Doc): EventOutcome | undefined;
}

/** On Get run on the values of the properties it names ({@link CollectionEventRunner.getColumns}). */
export interface GetColumns {
  /** The properties of `this` On Get reads or writes. */
  readonly reads: readonly string[];
  /**
   * On Get over stored objects given as the values of `reads` (`values[i * reads.length + k]`,
   * undefined where an object has none), for `count` objects. Nothing is copied: per object what
   * its run changed, or null when it cancelled.
   */
  run(ctx: Context, values: readonly unknown[], count: number): Promise<(GetChanges | null)[]>;
}

/** What an On Get run changed (runGetChanges): `values[k]` is the new value of `assigned[k]`. */
export interface GetChanges {
  assigned: readonly string[];
  values: readonly unknown[];
  deleted: readonly string[];
  hidden: readonly string[];
}
