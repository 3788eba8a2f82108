import { ServerResponse } from 'node:http';
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';

type HeadersArg = OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined;

/**
 * The response class of svc's own HTTP server: it sends the request's X-Request-Id with the
 * headers that write the answer instead of setting it on arrival.
 *
 * Why: a header set with `setHeader` before `writeHead(status, headers)` puts node on its slow
 * path, where every header of the answer is set one by one (`setHeader`: checks, a lower-cased
 * name, a [name, value] pair each) instead of the object being written as it is; on a GET by id
 * that was a tenth of what the request allocated (bench/RESULTS.md, "Issue 39: what a plain
 * request leaves behind"). The answer is the same: the id first, then the answer's own headers;
 * a header X-Request-Id set or given by the code that answers wins over it, as it did.
 */
export class SvcServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** The X-Request-Id still to send (undefined once sent, or when there is none). */
  requestId: string | undefined = undefined;

  override writeHead(statusCode: number, reason?: string | HeadersArg, headers?: HeadersArg): this {
    const id = this.requestId;
    if (id !== undefined) {
      this.requestId = undefined;
      if (typeof reason === 'string') return super.writeHead(statusCode, reason, this.#withId(id, headers));
      return super.writeHead(statusCode, this.#withId(id, reason));
    }
    // writeHead(status, reason, headers) and writeHead(status, headers) alike.
    return typeof reason === 'string' ? super.writeHead(statusCode, reason, headers) : super.writeHead(statusCode, reason);
  }

  /** The headers to write with the id among them (the given ones win over it, as setHeader's did). */
  #withId(id: string, given: HeadersArg): HeadersArg {
    // Headers set one by one already: node writes those, the given ones merged in: the id joins them.
    if (this.getHeaderNames().length > 0) {
      if (!this.hasHeader('x-request-id')) this.setHeader('x-request-id', id);
      return given;
    }
    if (given === undefined || given === null) return { 'x-request-id': id };
    if (Array.isArray(given)) {
      for (let i = 0; i < given.length; i += 2) if (String(given[i]).toLowerCase() === 'x-request-id') return given;
      return ['x-request-id', id, ...given];
    }
    for (const name in given) if (name.toLowerCase() === 'x-request-id') return given;
    return { 'x-request-id': id, ...given };
  }
}
