/**
 * How an uploaded file is served: inline with a type taken from its extension, or as a download.
 * `headers` are the response headers to set (lower-case names).
 */
export interface ServedFile {
  inline: boolean;
  contentType: string;
  headers: Record<string, string>;
}

/**
 * Types a browser shows without running anything of the file on the page's origin. Any other
 * extension (html, svg, xml, js, css, json, ...) is a download: an uploaded file is not trusted
 * to be what its uploader says, and its name's extension is all the server goes by.
 */
const INLINE_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  bmp: 'image/bmp',
  ico: 'image/x-icon',
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  webm: 'video/webm',
  ogv: 'video/ogg',
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/ogg',
  wav: 'audio/wav',
  flac: 'audio/flac',
  // Browsers show PDFs in a viewer of their own, outside the page's origin.
  pdf: 'application/pdf',
  txt: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
};

/**
 * SVG is a download when opened, but keeps its type so that `<img src>` still shows it (an image
 * runs no script); the sandbox policy covers a browser that would render it anyway.
 */
const DOWNLOAD_TYPES: Record<string, string> = {
  svg: 'image/svg+xml',
};

const NOSNIFF = { 'x-content-type-options': 'nosniff' } as const;
/** A document opened from such a response gets an origin of its own and no script. */
const SANDBOX = 'sandbox';

/**
 * Decides how a stored file named `fileName` (a key such as 'photos/a.png') is served. The
 * type the uploader declared plays no part: 'evil.png' sent as text/html is served as image/png,
 * 'x.html' as an application/octet-stream attachment. Every answer carries
 * `X-Content-Type-Options: nosniff`, so no browser second-guesses the type.
 */
export function servedFile(fileName: string): ServedFile {
  const base = fileName.slice(fileName.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  // 'x.html.' and 'x.' have no extension; '.png' alone is a hidden file with none either.
  const ext = dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
  const inlineType = Object.hasOwn(INLINE_TYPES, ext) ? INLINE_TYPES[ext] : undefined;
  if (inlineType !== undefined) {
    // Chromium's PDF viewer refuses to open in a sandboxed document.
    const sandbox: Record<string, string> = ext === 'pdf' ? {} : { 'content-security-policy': SANDBOX };
    return { inline: true, contentType: inlineType, headers: { 'content-type': inlineType, ...NOSNIFF, ...sandbox } };
  }
  const contentType = (Object.hasOwn(DOWNLOAD_TYPES, ext) ? DOWNLOAD_TYPES[ext] : undefined) ?? 'application/octet-stream';
  return {
    inline: false,
    contentType,
    headers: {
      'content-type': contentType,
      ...NOSNIFF,
      'content-security-policy': `default-src 'none'; ${SANDBOX}`,
      'content-disposition': attachment(base),
    },
  };
}

function attachment(name: string): string {
  return contentDisposition('attachment', name);
}

/**
 * A Content-Disposition value with the name twice: a plain ASCII one for old clients (anything
 * else, quotes and backslashes replaced) and the exact one in RFC 8187 form. Neither can break
 * the header.
 */
export function contentDisposition(kind: 'inline' | 'attachment', name: string): string {
  if (name === '') return kind;
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  // encodeURIComponent throws on a lone surrogate; bidi controls would show 'x<RLO>gnp.html' as
  // 'xlmth.png' in a download bar.
  const wellFormed = name
    .replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')
    .replace(/[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g, '_');
  const exact = encodeURIComponent(wellFormed).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${exact}`;
}
