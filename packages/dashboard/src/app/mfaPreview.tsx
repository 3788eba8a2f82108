import { otpauthQrSvg } from '@svc/client';

/** A made-up secret: the preview shows the shape of the code, never a user's secret. */
const SAMPLE_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
const SAMPLE_ACCOUNT = 'ada@example.com';

/** The URI `mfa/enroll` answers, for a sample account (as the server builds it: totp.ts). */
export function sampleOtpauthUri(issuer: string): string {
  const name = encodeURIComponent(issuer);
  return `otpauth://totp/${name}:${encodeURIComponent(SAMPLE_ACCOUNT)}?secret=${SAMPLE_SECRET}&issuer=${name}&algorithm=SHA1&digits=6&period=30`;
}

/**
 * A preview of what users scan at enrolment: the issuer name as their authenticator app will show
 * it, for a sample account and secret, drawn by the same encoder as `svc.<users>.mfa.qrSvg`.
 */
export function MfaQrPreview({ issuer }: { issuer: string }) {
  const uri = sampleOtpauthUri(issuer);
  let svg: string;
  try {
    svg = otpauthQrSvg(uri, { moduleSize: 3 });
  } catch {
    return <p class="muted">The issuer name is too long for a QR code.</p>;
  }
  return (
    <figure class="mfa-preview" data-test="mfa-qr" title={uri}>
      {/* The SVG is made here from numbers only (one path of squares): nothing of the issuer is markup. */}
      <div dangerouslySetInnerHTML={{ __html: svg }} />
      <figcaption class="muted">
        Sample: what users scan at enrolment (account {SAMPLE_ACCOUNT}, a made-up secret); their app shows the issuer “{issuer}”.
      </figcaption>
    </figure>
  );
}
