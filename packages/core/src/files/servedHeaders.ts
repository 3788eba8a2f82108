import { contentDisposition } from '../http/servedFile.js';

/**
 * Sniffed types a browser shows without running anything of the file on the page's origin (as
 * http/servedFile.ts's list, by type rather than by extension). Anything else is a download.
 */
const INLINE = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/bmp',
  'image/x-icon',
  'video/mp4',
  'video/webm',
  'video/ogg',
  'audio/mpeg',
  'audio/mp4',
  'audio/ogg',
  'audio/wav',
  'audio/flac',
  'application/pdf',
  'text/plain',
]);

/**
 * The headers a stored file is served with. Its type was sniffed from its bytes when it was
 * stored (never the uploader's Content-Type): an allow-listed type is shown inline, anything
 * else (HTML, SVG, XML, unknown bytes) is an `attachment` typed `application/octet-stream`
 * (SVG keeps its type, so that `<img src>` shows it: an image runs no script). Every answer has
 * `X-Content-Type-Options: nosniff` and a `Content-Security-Policy` with `sandbox` (but PDFs,
 * which Chromium's viewer will not open sandboxed and which run outside the page's origin).
 */
export function servedHeaders(type: string, name: string): Record<string, string> {
  if (INLINE.has(type)) {
    const contentType = type === 'text/plain' ? 'text/plain; charset=utf-8' : type;
    return {
      'content-type': contentType,
      'x-content-type-options': 'nosniff',
      ...(type === 'application/pdf' ? {} : { 'content-security-policy': 'sandbox' }),
      'content-disposition': contentDisposition('inline', name),
    };
  }
  return {
    'content-type': type === 'image/svg+xml' ? type : 'application/octet-stream',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'content-disposition': contentDisposition('attachment', name),
  };
}

/** A `Range: bytes=a-b` header of one range, read against the file's size; undefined: serve it whole. */
export function rangeOf(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  // Several ranges, or anything else: the whole file (RFC 9110 lets a server ignore Range).
  if (match === null || (match[1] === '' && match[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}
