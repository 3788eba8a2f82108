import * as qrcodeModule from 'qrcode-generator';

// The package's types are CommonJS (`export =`); the ESM build that Node and bundlers load has the
// factory as its default export.
// Typed here: how the package's types read depends on the importer's esModuleInterop.
const qrcode = (qrcodeModule as unknown as { default: QrFactory }).default;

/** What this file uses of the encoder. */
type QrFactory = (typeNumber: 0, errorCorrection: 'M') => {
  addData(data: string, mode: 'Byte'): void;
  make(): void;
  getModuleCount(): number;
  isDark(row: number, col: number): boolean;
};

/** Options of {@link otpauthQrSvg}. */
export interface QrSvgOptions {
  /** Pixels per module in the SVG's width/height (the viewBox is in modules). Default 4. */
  moduleSize?: number;
  /** The light border, in modules: 4 is what the QR standard asks for and scanners expect. Default 4. */
  margin?: number;
}

/**
 * The QR code of a text (an otpauth:// URI from `mfa.enroll`) as an SVG string: byte mode, error
 * correction M, the smallest version that fits. Every dark module is one square of a single path,
 * so the image stays crisp at any size; put it in the page with innerHTML.
 */
export function otpauthQrSvg(uri: string, options: QrSvgOptions = {}): string {
  if (typeof uri !== 'string' || uri === '') throw new TypeError('otpauthQrSvg: the URI must be a non-empty string');
  const moduleSize = positiveInteger(options.moduleSize, 4, 'moduleSize');
  const margin = positiveInteger(options.margin, 4, 'margin');
  const qr = qrcode(0, 'M');
  // UTF-8 bytes: the library's own string-to-bytes keeps only the low byte of each character.
  qr.addData(utf8Latin1(uri), 'Byte');
  qr.make();
  const count = qr.getModuleCount();
  const size = count + 2 * margin;
  let path = '';
  for (let row = 0; row < count; row++) {
    for (let col = 0; col < count; col++) if (qr.isDark(row, col)) path += `M${col + margin} ${row + margin}h1v1h-1z`;
  }
  const pixels = size * moduleSize;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${pixels}" height="${pixels}" viewBox="0 0 ${size} ${size}" shape-rendering="crispEdges"><rect width="${size}" height="${size}" fill="#fff"/><path fill="#000" d="${path}"/></svg>`;
}

/** Each UTF-8 byte of the text as one character (what the encoder's byte mode takes). */
function utf8Latin1(text: string): string {
  // encodeURIComponent: UTF-8 without TextEncoder, which not every runtime of /svc.js has.
  let escaped: string;
  try {
    escaped = encodeURIComponent(text);
  } catch {
    throw new TypeError('otpauthQrSvg: the URI is not valid Unicode (a lone surrogate)');
  }
  return escaped.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0 || value > 64) throw new TypeError(`otpauthQrSvg: ${name} must be an integer from 0 to 64`);
  return value;
}
