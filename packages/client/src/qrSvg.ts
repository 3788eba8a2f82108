import { encodeQr } from './qrEncode.js';

/** Options of {@link otpauthQrSvg}. */
export interface QrSvgOptions {
  /** Pixels per module in the SVG's width/height (the viewBox is in modules). Default 4. */
  moduleSize?: number;
  /** The light border, in modules: 4 is what the QR standard asks for and scanners expect. Default 4. */
  margin?: number;
}

/**
 * The QR code of a text (an otpauth:// URI from `mfa.enroll`) as an SVG string: byte mode, error
 * correction M, the smallest version that fits (qrEncode.ts). Every dark module is one square of
 * a single path, so the image stays crisp at any size; put it in the page with innerHTML.
 */
export function otpauthQrSvg(uri: string, options: QrSvgOptions = {}): string {
  if (typeof uri !== 'string' || uri === '') throw new TypeError('otpauthQrSvg: the URI must be a non-empty string');
  const moduleSize = positiveInteger(options.moduleSize, 4, 'moduleSize');
  const margin = positiveInteger(options.margin, 4, 'margin');
  let matrix: boolean[][];
  try {
    matrix = encodeQr(utf8Bytes(uri));
  } catch (err) {
    throw new TypeError(`otpauthQrSvg: ${(err as Error).message}`, { cause: err });
  }
  const count = matrix.length;
  const size = count + 2 * margin;
  let path = '';
  for (let row = 0; row < count; row++) {
    for (let col = 0; col < count; col++) if (matrix[row]?.[col] === true) path += `M${col + margin} ${row + margin}h1v1h-1z`;
  }
  const pixels = size * moduleSize;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${pixels}" height="${pixels}" viewBox="0 0 ${size} ${size}" shape-rendering="crispEdges"><rect width="${size}" height="${size}" fill="#fff"/><path fill="#000" d="${path}"/></svg>`;
}

/** The UTF-8 bytes of the text. */
function utf8Bytes(text: string): number[] {
  // encodeURIComponent: UTF-8 without TextEncoder, which not every runtime of /svc.js has.
  let escaped: string;
  try {
    escaped = encodeURIComponent(text);
  } catch {
    throw new TypeError('otpauthQrSvg: the URI is not valid Unicode (a lone surrogate)');
  }
  const bytes: number[] = [];
  for (const part of escaped.split(/(%[0-9A-F]{2})/)) {
    if (part.startsWith('%')) bytes.push(parseInt(part.slice(1), 16));
    else for (let i = 0; i < part.length; i++) bytes.push(part.charCodeAt(i));
  }
  return bytes;
}

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0 || value > 64) throw new TypeError(`otpauthQrSvg: ${name} must be an integer from 0 to 64`);
  return value;
}
