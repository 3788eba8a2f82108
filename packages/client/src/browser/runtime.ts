// Entry of the /svc.js runtime (rollup: IIFE `__svcRuntime`, socket.io-client bundled in).
import { createClient } from '../createClient.js';
import type { ResourceList } from '../types.js';

interface SvcGlobals {
  svc?: unknown;
  _svc?: { ajax: { headers: Record<string, string> } };
}

/**
 * Defines `svc` (the client, with svc.<resource> for each top-level resource) and `_svc` (dpd.js's
 * `_dpd`: `_svc.ajax.headers` adds headers to every request) on the page. The server's origin is
 * the one svc.js was loaded from, so a page on another origin works too; the socket connects at
 * once, as dpd.js's did, since messages sent before it connects are lost.
 */
export function install(resources: ResourceList): void {
  const script = typeof document === 'undefined' ? null : (document.currentScript as HTMLScriptElement | null);
  const origin = script?.src ? new URL(script.src, location.href).origin : '';
  const base = origin === '' || origin === location.origin ? '' : origin;
  const client = createClient(base, { resources, connect: 'eager', cookies: false });
  const globals = globalThis as SvcGlobals;
  globals.svc = client;
  globals._svc = { ajax: client.ajax };
}
