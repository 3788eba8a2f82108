/** How many leading bytes {@link sniffType} looks at. */
export const SNIFF_BYTES = 4100;

const OCTET = 'application/octet-stream';

/** Magic numbers at offset 0 (`?` in the pattern: any byte). */
const SIGNATURES: readonly [type: string, bytes: readonly (number | null)[]][] = [
  ['image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/gif', [0x47, 0x49, 0x46, 0x38]],
  ['image/bmp', [0x42, 0x4d]],
  ['image/x-icon', [0x00, 0x00, 0x01, 0x00]],
  ['image/tiff', [0x49, 0x49, 0x2a, 0x00]],
  ['image/tiff', [0x4d, 0x4d, 0x00, 0x2a]],
  ['application/pdf', [0x25, 0x50, 0x44, 0x46, 0x2d]],
  ['audio/flac', [0x66, 0x4c, 0x61, 0x43]],
  ['application/zip', [0x50, 0x4b, 0x03, 0x04]],
  ['application/gzip', [0x1f, 0x8b]],
  ['audio/mpeg', [0x49, 0x44, 0x33]],
];

/** `ftyp` brands (ISO base media files) and the type each is. */
const BRANDS: Record<string, string> = {
  avif: 'image/avif',
  avis: 'image/avif',
  heic: 'image/heic',
  heix: 'image/heic',
  mif1: 'image/heif',
  isom: 'video/mp4',
  iso2: 'video/mp4',
  mp41: 'video/mp4',
  mp42: 'video/mp4',
  avc1: 'video/mp4',
  dash: 'video/mp4',
  'M4V ': 'video/mp4',
  'M4A ': 'audio/mp4',
  qt: 'video/quicktime',
};

/**
 * The type of a file from its first bytes ({@link SNIFF_BYTES}), never from what its uploader
 * declared. What is not recognised is `application/octet-stream`; markup (HTML, SVG, XML) is
 * named as such so that it is only ever served as a download.
 */
export function sniffType(head: Buffer): string {
  for (const [type, bytes] of SIGNATURES) if (startsWith(head, bytes)) return type;
  if (head.length >= 12 && head.toString('latin1', 4, 8) === 'ftyp') {
    const brand = head.toString('latin1', 8, 12);
    return BRANDS[brand] ?? BRANDS[brand.trim()] ?? 'video/mp4';
  }
  if (head.length >= 12 && head.toString('latin1', 0, 4) === 'RIFF') {
    const form = head.toString('latin1', 8, 12);
    if (form === 'WEBP') return 'image/webp';
    if (form === 'WAVE') return 'audio/wav';
    if (form === 'AVI ') return 'video/x-msvideo';
  }
  if (head.length >= 4 && head.toString('latin1', 0, 4) === 'OggS') return head.includes('theora', 0, 'latin1') ? 'video/ogg' : 'audio/ogg';
  if (startsWith(head, [0x1a, 0x45, 0xdf, 0xa3])) return head.includes('webm', 0, 'latin1') ? 'video/webm' : 'video/x-matroska';
  // MPEG audio frames without an ID3 tag: 11 sync bits.
  if (head.length >= 2 && head[0] === 0xff && ((head[1] as number) & 0xe0) === 0xe0 && ((head[1] as number) & 0x06) !== 0) return 'audio/mpeg';
  return markupType(head) ?? (isText(head) ? 'text/plain' : OCTET);
}

function startsWith(head: Buffer, bytes: readonly (number | null)[]): boolean {
  if (head.length < bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== null && head[i] !== bytes[i]) return false;
  return true;
}

/** Tags that make a browser's sniffer take a text for HTML (WHATWG MIME Sniffing, 7.1). */
const HTML_TAGS = /^<(?:!doctype html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p|!--|object|embed|img|meta|link|form|svg|math|base|frameset|template)[\s>/]/i;

/**
 * HTML, SVG or other XML at the start of a text (after a BOM and white space), however the file
 * is named: served as a download whatever else it might be too.
 */
function markupType(head: Buffer): string | undefined {
  let text = head.toString('latin1', 0, Math.min(head.length, 1024));
  // UTF-16 markup: every other byte 0.
  if (text.startsWith('\xfe\xff') || text.startsWith('\xff\xfe')) text = head.toString(text.startsWith('\xff\xfe') ? 'utf16le' : 'latin1').replace(/\0/g, '');
  text = text.replace(/^\xef\xbb\xbf/, '').replace(/^\ufeff/, '').trimStart();
  if (!text.startsWith('<')) return undefined;
  if (/^<svg[\s>/]/i.test(text) || (/^<\?xml/i.test(text) && /<svg[\s>/]/i.test(text))) return 'image/svg+xml';
  if (HTML_TAGS.test(text)) return 'text/html';
  if (/^<\?xml/i.test(text) || /^<!doctype/i.test(text)) return 'application/xml';
  // Any other tag-like start: a browser that sniffed would likely render it; a download it is.
  return /^<[a-z!?/]/i.test(text) ? 'text/html' : undefined;
}

/** Valid UTF-8 without control characters but tab, line feed, form feed and carriage return. */
function isText(head: Buffer): boolean {
  if (head.length === 0) return false;
  // A multi-byte character cut at the end of the head is fine.
  const sample = head.length >= SNIFF_BYTES ? head.subarray(0, trimCut(head)) : head;
  for (const byte of sample) if ((byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0c && byte !== 0x0d) || byte === 0x7f) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample);
    return true;
  } catch {
    return false;
  }
}

/** The length of `head` without a UTF-8 sequence cut at its end. */
function trimCut(head: Buffer): number {
  let end = head.length;
  for (let back = 1; back <= 3 && end - back >= 0; back++) {
    const byte = head[end - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    if (byte >= 0xc0) end -= back;
    break;
  }
  return end;
}
