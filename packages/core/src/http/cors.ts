import type { IncomingMessage } from 'node:http';

/** Cross-origin settings (app.json `cors`). */
export interface CorsOptions {
  /**
   * Origins allowed to call with credentials. Default: any origin in development, none in
   * production (same-origin only: a web site elsewhere cannot read a user's data through their
   * browser unless the app lists it).
   */
  origins?: '*' | readonly string[];
}

/** The origins in force: the app's list, else any in development and none in production. */
export function corsOrigins(options: CorsOptions | undefined, production: boolean): '*' | readonly string[] {
  return options?.origins ?? (production ? [] : '*');
}

/** The request headers a cross-origin client may send, exactly the spec's list. */
export const CORS_ALLOWED_HEADERS = 'Origin, Accept, Accept-Language, Content-Language, Content-Type, Last-Event-ID, If-Match, If-None-Match';
/** The answer headers a cross-origin page may read beyond the CORS-safelisted ones. */
export const CORS_EXPOSED_HEADERS = 'X-Request-Id, X-Total-Count, ETag';
const METHODS = 'GET, POST, PUT, DELETE, OPTIONS';

/**
 * The CORS headers for a request: the request's Origin echoed with credentials allowed, when the
 * origin is allowed. Answers undefined for same-origin requests and refused origins (the browser
 * then blocks the response).
 */
export function corsHeaders(req: IncomingMessage, allowed: '*' | readonly string[]): [string, string][] | undefined {
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  if (allowed !== '*' && !allowed.includes(origin)) return undefined;
  const headers: [string, string][] = [
    ['access-control-allow-origin', origin],
    ['access-control-allow-credentials', 'true'],
    ['vary', 'Origin'],
    // A page of another origin reads the request id it can quote in a bug report, and a list's $total.
    ['access-control-expose-headers', CORS_EXPOSED_HEADERS],
  ];
  if (req.method === 'OPTIONS') {
    headers.push(['access-control-allow-methods', METHODS], ['access-control-allow-headers', CORS_ALLOWED_HEADERS], ['access-control-max-age', '86400']);
  }
  return headers;
}
