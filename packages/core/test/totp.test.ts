import { describe, expect, it } from 'vitest';
import { base32Decode, base32Encode, matchTotp, otpauthUri, totpCode, totpStep } from '../src/resources/accounts/totp.js';

// RFC 6238 appendix B, SHA-1, secret "12345678901234567890": the last 6 of the 8 digits.
const SECRET = base32Encode(Buffer.from('12345678901234567890'));
const VECTORS: [number, string][] = [
  [59, '287082'],
  [1111111109, '081804'],
  [1111111111, '050471'],
  [1234567890, '005924'],
  [2000000000, '279037'],
  [20000000000, '353130'],
];

describe('TOTP (RFC 6238)', () => {
  it.each(VECTORS)('at %i s the code is %s', (seconds, code) => {
    expect(totpCode(SECRET, totpStep(seconds * 1000))).toBe(code);
  });

  it('base32 round-trips and matches RFC 4648', () => {
    expect(base32Encode(Buffer.from('foobar'))).toBe('MZXW6YTBOI');
    expect(base32Decode('MZXW6YTBOI').toString()).toBe('foobar');
    expect(base32Decode('mzxw6ytboi======').toString()).toBe('foobar');
    expect(() => base32Decode('MZXW1')).toThrow(TypeError);
  });

  it('accepts the codes of one step either side and says which step, nothing further', () => {
    const now = 1111111111 * 1000;
    const step = totpStep(now);
    expect(matchTotp(SECRET, totpCode(SECRET, step), now)).toBe(step);
    expect(matchTotp(SECRET, totpCode(SECRET, step - 1), now)).toBe(step - 1);
    expect(matchTotp(SECRET, totpCode(SECRET, step + 1), now)).toBe(step + 1);
    expect(matchTotp(SECRET, totpCode(SECRET, step - 2), now)).toBeUndefined();
    expect(matchTotp(SECRET, totpCode(SECRET, step + 2), now)).toBeUndefined();
    for (const bad of ['', '12345', '1234567', 'abcdef', ' 50471', '050471 ']) expect(matchTotp(SECRET, bad, now)).toBeUndefined();
  });

  it('writes the otpauth URI authenticator apps read', () => {
    expect(otpauthUri('JBSWY3DPEHPK3PXP', 'My App', 'ann@example.com')).toBe(
      'otpauth://totp/My%20App:ann%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=My%20App&algorithm=SHA1&digits=6&period=30',
    );
  });
});
