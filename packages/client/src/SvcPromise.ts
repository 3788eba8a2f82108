/**
 * A native Promise (so Promises/A+) with dpd.js's `fail(fn)`. `then` answers an SvcPromise too, so
 * `svc.todos.get().then(f).fail(g)` works as pages written for Deployd expect.
 */
export class SvcPromise<T> extends Promise<T> {
  override then<A = T, B = never>(
    onFulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): SvcPromise<A | B> {
    return super.then(onFulfilled, onRejected) as SvcPromise<A | B>;
  }

  override catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): SvcPromise<T | B> {
    return this.then(undefined, onRejected);
  }

  /** `then(undefined, onRejected)`, as dpd.js promises have it. */
  fail<B = never>(onRejected: (error: unknown) => B | PromiseLike<B>): SvcPromise<T | B> {
    return this.then(undefined, onRejected);
  }
}
