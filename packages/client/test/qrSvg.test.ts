import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';
import jsqrModule from 'jsqr';
import { describe, expect, it } from 'vitest';
import { createClient, otpauthQrSvg } from '@svc/client';
import type { MfaCalls } from '@svc/client';

const PIXELS_PER_MODULE = 4;
// jsqr is CommonJS whose types say `export default`: its module.exports is the function and has .default too.
const jsQR = jsqrModule.default;

/**
 * Draws the SVG the way a browser would (white background, each `M x y h1v1h-1z` square of the
 * path black) into an RGBA buffer and reads it back with a real QR decoder.
 */
function decodeSvg(svg: string): { text: string; bytes: number[]; version: number } | null {
  const viewBox = /viewBox="0 0 (\d+) (\d+)"/.exec(svg);
  const d = /<path fill="#000" d="([^"]*)"/.exec(svg);
  if (!viewBox || !d) throw new Error('not an SVG of otpauthQrSvg');
  const modules = Number(viewBox[1]);
  const side = modules * PIXELS_PER_MODULE;
  const rgba = new Uint8ClampedArray(side * side * 4).fill(255);
  const squares = [...(d[1] ?? '').matchAll(/M(\d+) (\d+)h1v1h-1z/g)];
  // Nothing else in the path: every dark module is one square.
  expect(squares.map((m) => m[0]).join('')).toBe(d[1]);
  for (const [, x, y] of squares) {
    for (let py = 0; py < PIXELS_PER_MODULE; py++) {
      for (let px = 0; px < PIXELS_PER_MODULE; px++) {
        const at = ((Number(y) * PIXELS_PER_MODULE + py) * side + Number(x) * PIXELS_PER_MODULE + px) * 4;
        rgba[at] = rgba[at + 1] = rgba[at + 2] = 0;
      }
    }
  }
  const found = jsQR(rgba, side, side, { inversionAttempts: 'dontInvert' });
  return found ? { text: found.data, bytes: found.binaryData, version: found.version } : null;
}

const uri = 'otpauth://totp/My%20App:ada%40example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=My%20App&algorithm=SHA1&digits=6&period=30';

describe('otpauthQrSvg: the otpauth URI as a QR code (SVG)', () => {
  it('a real decoder reads the URI back from the SVG', () => {
    const svg = otpauthQrSvg(uri);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(decodeSvg(svg)?.text).toBe(uri);
  });

  it('svc.<users>.mfa.qrSvg is the same helper on the client', () => {
    const svc = createClient('http://127.0.0.1:1', { resources: [{ path: '/users', kind: 'users' }] });
    expect((svc.users as { mfa: MfaCalls }).mfa.qrSvg(uri)).toBe(otpauthQrSvg(uri));
    svc.close();
  });

  it('non-ASCII text is encoded as UTF-8 bytes (an issuer name that was not percent-encoded)', () => {
    const text = 'otpauth://totp/Café Ünïcode:zoë?secret=ABC&issuer=Café Ünïcode';
    const read = decodeSvg(otpauthQrSvg(text));
    expect(Buffer.from(read?.bytes ?? []).toString('utf8')).toBe(text);
  });

  it('a longer URI takes a larger version and still decodes; the margin and size options apply', () => {
    const long = `${uri}&image=${'x'.repeat(300)}`;
    const read = decodeSvg(otpauthQrSvg(long));
    expect(read?.text).toBe(long);
    expect(read?.version).toBeGreaterThan(decodeSvg(otpauthQrSvg(uri))?.version ?? 99);
    const small = otpauthQrSvg(uri, { margin: 2, moduleSize: 3 });
    const modules = Number(/viewBox="0 0 (\d+)/.exec(small)?.[1]);
    expect(small).toContain(`width="${modules * 3}"`);
    expect(decodeSvg(small)?.text).toBe(uri);
  });

  it('every version (1 to 40) decodes: the byte lengths at each version\'s capacity and one past it', () => {
    const versions = new Set<number>();
    // Byte-mode capacities at level M, versions 1-40 (ISO/IEC 18004 table 7).
    const capacity = [14, 26, 42, 62, 84, 106, 122, 152, 180, 213, 251, 287, 331, 362, 412, 450, 504, 560, 624, 666, 711, 779, 857, 911, 997, 1059, 1125, 1190, 1264, 1370, 1452, 1538, 1628, 1722, 1809, 1911, 1989, 2099, 2213, 2331];
    capacity.forEach((bytes, i) => {
      for (const length of i === capacity.length - 1 ? [bytes] : [bytes, bytes + 1]) {
        const text = Array.from({ length }, (_, k) => String.fromCharCode(33 + ((k * 7) % 90))).join('');
        const read = decodeSvg(otpauthQrSvg(text));
        expect(read?.text, `${length} bytes`).toBe(text);
        expect(read?.version, `${length} bytes`).toBe(length === bytes ? i + 1 : i + 2);
        versions.add(read?.version ?? 0);
      }
    });
    expect(versions.size).toBe(40);
    expect(() => otpauthQrSvg('x'.repeat(2332))).toThrow(/more than a QR code holds/);
  });

  it('bad input is a TypeError, never a broken image', () => {
    expect(() => otpauthQrSvg('')).toThrow(TypeError);
    expect(() => otpauthQrSvg(42 as unknown as string)).toThrow(TypeError);
    expect(() => otpauthQrSvg('otpauth://totp/\ud800')).toThrow(/Unicode/);
    expect(() => otpauthQrSvg(uri, { margin: -1 })).toThrow(/margin/);
    expect(() => otpauthQrSvg(uri, { moduleSize: 1.5 })).toThrow(/moduleSize/);
    // Beyond what a QR code holds (version 40, M: 2331 bytes): the encoder's error, not a truncated code.
    expect(() => otpauthQrSvg('x'.repeat(3000))).toThrow();
  });

  const runtime = fileURLToPath(new URL('../dist/svc-runtime.js', import.meta.url));
  if (!existsSync(runtime) && process.env.CI !== 'true') process.stderr.write('SKIPPED the QR code of the built /svc.js: packages/client is not built (pnpm build)\n');
  it.skipIf(!existsSync(runtime) && process.env.CI !== 'true')('/svc.js (the built runtime) has svc.<users>.mfa.qrSvg, and its QR decodes', () => {
    const sandbox: { svc?: { users: { mfa: { qrSvg(u: string): string } } } } = {};
    runInNewContext(`${readFileSync(runtime, 'utf8')}; __svcRuntime.install([{ path: '/users', kind: 'users' }]);`, sandbox);
    expect(decodeSvg(sandbox.svc?.users.mfa.qrSvg(uri) ?? '')?.text).toBe(uri);
  });
});
