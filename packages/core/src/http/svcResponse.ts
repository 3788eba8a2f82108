import { ServerResponse } from 'node:http';
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';

type HeadersArg = OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined;

/**
 * The response class of svc's own HTTP server: it sends the request's X-Request-Id, and a new
 * visitor's session cookie, with the headers that write the answer instead of setting them on
 * arrival.
 *
 * Why: a header set with `setHeader` before `writeHead(status, headers)` puts node on its slow
 * path, where every header of the answer is set one by one (`setHeader`: checks, a lower-cased
 * name, a [name, value] pair each) instead of the object being written as it is; on a GET by id
 * that was a tenth of what the request allocated (bench/RESULTS.md, "Issue 39: what a plain
 * request leaves behind"), and a request without a cookie (an API client, a first visit) paid it
 * for its Set-Cookie ("Issue 39, round 13"). The answer is the same: the cookie first, then the id,
 * then the answer's own headers; a header X-Request-Id set or given by the code that answers wins
 * over the id, as it did.
 *
 * The cookie is kept exactly as `setHeader('set-cookie', ...)` at its arrival would have been:
 * the first time anything else reads or changes the headers one by one, it is set that way first
 * (so an appended cookie comes after it, a cookie set or a header removed replaces or removes it,
 * and a reader sees it); only an answer whose headers all come with writeHead carries it in that
 * object. Given there, a Set-Cookie of the answer's own replaces it, as writeHead's merge did.
 */
export class SvcServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** The X-Request-Id still to send (undefined once sent, or when there is none). */
  requestId: string | undefined = undefined;
  /** A new visitor's Set-Cookie not set yet (see {@link sendSessionCookie}). */
  #cookie: string | undefined = undefined;

  /**
   * Sends a new visitor's session cookie with this answer: held until writeHead while no header
   * was set one by one, else set now (what `setHeader('set-cookie', cookie)` does).
   */
  sendSessionCookie(cookie: string): void {
    if (this.headersSent || super.getHeaderNames().length > 0) {
      this.#cookie = undefined;
      super.setHeader('set-cookie', cookie);
    } else {
      this.#cookie = cookie;
    }
  }

  /** Sets the held cookie as setHeader would have at its arrival: before any other header is read or changed one by one. */
  #settle(): void {
    const cookie = this.#cookie;
    if (cookie === undefined) return;
    this.#cookie = undefined;
    super.setHeader('set-cookie', cookie);
  }

  override setHeader(name: string, value: number | string | readonly string[]): this {
    this.#settle();
    return super.setHeader(name, value);
  }

  override appendHeader(name: string, value: string | readonly string[]): this {
    this.#settle();
    return super.appendHeader(name, value);
  }

  override setHeaders(headers: Headers | Map<string, number | string | readonly string[]>): this {
    this.#settle();
    return super.setHeaders(headers);
  }

  override removeHeader(name: string): void {
    this.#settle();
    super.removeHeader(name);
  }

  override getHeader(name: string): number | string | string[] | undefined {
    this.#settle();
    return super.getHeader(name);
  }

  override getHeaders(): OutgoingHttpHeaders {
    this.#settle();
    return super.getHeaders();
  }

  override getHeaderNames(): string[] {
    this.#settle();
    return super.getHeaderNames();
  }

  /** Node's `getRawHeaderNames` (documented, not in @types/node): the held cookie settled first, as above. */
  getRawHeaderNames(): string[] {
    this.#settle();
    return (ServerResponse.prototype as unknown as { getRawHeaderNames(this: ServerResponse): string[] }).getRawHeaderNames.call(this);
  }

  /** Whether the answer has the header: the held cookie counts, and stays held (writeChecked asks for content-type). */
  override hasHeader(name: string): boolean {
    if (this.#cookie !== undefined && name.toLowerCase() === 'set-cookie') return true;
    return super.hasHeader(name);
  }

  override writeHead(statusCode: number, reason?: string | HeadersArg, headers?: HeadersArg): this {
    const id = this.requestId;
    const cookie = this.#cookie;
    if (id !== undefined || cookie !== undefined) {
      this.requestId = undefined;
      this.#cookie = undefined;
      if (typeof reason === 'string') return super.writeHead(statusCode, reason, this.#withOwn(id, cookie, headers));
      return super.writeHead(statusCode, this.#withOwn(id, cookie, reason));
    }
    // writeHead(status, reason, headers) and writeHead(status, headers) alike.
    return typeof reason === 'string' ? super.writeHead(statusCode, reason, headers) : super.writeHead(statusCode, reason);
  }

  /** The headers to write with the cookie and the id among them (the given ones win over them, as setHeader's did). */
  #withOwn(id: string | undefined, cookie: string | undefined, given: HeadersArg): HeadersArg {
    // Headers set one by one already: node writes those, the given ones merged in: the cookie and
    // the id join them. (A held cookie settles on the first such header, so only a header set
    // past this class's methods could meet one here: it is set unless the answer has its own.)
    if (super.getHeaderNames().length > 0) {
      if (cookie !== undefined && !super.hasHeader('set-cookie')) super.setHeader('set-cookie', cookie);
      if (id !== undefined && !super.hasHeader('x-request-id')) super.setHeader('x-request-id', id);
      return given;
    }
    if (given === undefined || given === null) {
      if (cookie === undefined) return { 'x-request-id': id as string };
      return id === undefined ? { 'set-cookie': cookie } : { 'set-cookie': cookie, 'x-request-id': id };
    }
    if (Array.isArray(given)) {
      let ownId = id === undefined;
      let ownCookie = cookie === undefined;
      for (let i = 0; i < given.length; i += 2) {
        const name = String(given[i]).toLowerCase();
        if (name === 'x-request-id') ownId = true;
        else if (name === 'set-cookie') ownCookie = true;
      }
      return [...(ownCookie ? [] : ['set-cookie', cookie as string]), ...(ownId ? [] : ['x-request-id', id as string]), ...given];
    }
    let ownId = id === undefined;
    let ownCookie = cookie === undefined;
    for (const name in given) {
      const lower = name.toLowerCase();
      if (lower === 'x-request-id') ownId = true;
      else if (lower === 'set-cookie') ownCookie = true;
    }
    if (ownId && ownCookie) return given;
    if (ownCookie) return { 'x-request-id': id as string, ...given };
    if (ownId) return { 'set-cookie': cookie as string, ...given };
    return { 'set-cookie': cookie as string, 'x-request-id': id as string, ...given };
  }
}
