import type { Reply } from '@svc/core';

/**
 * A response of the storage provider with a status of 300 or more, kept byte for byte: the spec
 * passes provider errors through as they are (status, content type and body, usually XML).
 */
export class ProviderError extends Error {
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: Buffer;

  constructor(status: number, contentType: string | undefined, body: Buffer) {
    super(`storage provider answered ${status}`);
    this.name = 'ProviderError';
    this.status = status;
    this.contentType = contentType;
    this.body = body;
  }

  /** The reply that hands the provider's answer to the client unchanged. */
  toReply(): Reply {
    if (this.body.length === 0) return { status: this.status };
    return {
      status: this.status,
      // The body is the provider's XML, which may quote the requested key: shown, never run.
      headers: { 'content-type': this.contentType ?? 'application/xml', 'x-content-type-options': 'nosniff', 'content-security-policy': "default-src 'none'; sandbox" },
      // writeReply sends a string body as it is when a content type is set.
      body: this.body.toString('utf8'),
    };
  }
}
