/**
 * What a host function may answer to fail only the script's callback: `fn(null, error)` is
 * called, while the promise of the call resolves with `value` (null by default) rather than
 * rejecting. The svc client answers a refused recursive call this way: Deployd's callback error,
 * without failing a script that awaits the call.
 */
export class CallbackError {
  constructor(
    readonly error: unknown,
    readonly value: unknown = null,
  ) {}
}
