// The client's names, apart from the client itself: `svc types` (generateTypes, in
// @svc/client/server) reads them without loading the client and socket.io-client with it.

/** 'add-follower' -> 'addfollower': the property name of a top-level resource. */
export function propertyName(path: string): string | undefined {
  const name = path.replace(/^\/+|\/+$/g, '');
  if (name === '' || name.includes('/')) return undefined;
  return name.replace(/-/g, '');
}

/** The client's own names, which no resource property hides. */
export const CLIENT_API: ReadonlySet<string> = new Set(['ajax', 'on', 'off', 'once', 'socketReady', 'close', 'socket', 'setBaseUrl', 'offline']);
