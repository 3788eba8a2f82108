import { createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';

/** Apple's "Sign in with Apple" key of an app: the client secret is a JWT signed with it. */
export interface AppleKey {
  teamId: string;
  keyId: string;
  privateKey: KeyObject;
}

/** How long a client secret svc signs is valid (Apple allows up to 6 months; a short one limits a leak). */
const LIFETIME_S = 60 * 60;
/** A secret is signed again this long before it expires. */
const RENEW_BEFORE_S = 5 * 60;

/**
 * Checks the key at start: a PKCS #8 PEM of a P-256 key, as Apple's .p8 file holds. An environment
 * variable often holds it on one line with `\n` written out; both forms are read. The message
 * never quotes the key.
 */
export function parseAppleKey(input: { teamId: string; keyId: string; privateKey: string }, where: string): AppleKey {
  if (!/^[A-Z0-9]{10}$/.test(input.teamId)) throw new Error(`${where}.teamId must be Apple's 10-character team id`);
  if (!/^[A-Z0-9]{10}$/.test(input.keyId)) throw new Error(`${where}.keyId must be Apple's 10-character key id`);
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: input.privateKey.replaceAll('\\n', '\n'), format: 'pem' });
  } catch {
    throw new Error(`${where}.privateKey is not a PEM private key (the contents of Apple's AuthKey_<keyId>.p8)`);
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new Error(`${where}.privateKey must be Apple's P-256 (ES256) key`);
  return { teamId: input.teamId, keyId: input.keyId, privateKey: key };
}

/**
 * Apple's client secret: an ES256 JWT from the team (iss) for the Services ID (sub), to Apple
 * (aud: the issuer), signed with the app's key. Kept and reused until shortly before it expires.
 */
export class AppleClientSecret {
  private current: { jwt: string; expiresAt: number } | undefined;

  constructor(
    private readonly key: AppleKey,
    private readonly clientId: string,
    private readonly audience: string,
  ) {}

  async value(): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    if (this.current !== undefined && this.current.expiresAt - RENEW_BEFORE_S > now) return this.current.jwt;
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: this.key.keyId })
      .setIssuer(this.key.teamId)
      .setSubject(this.clientId)
      .setAudience(this.audience)
      .setIssuedAt(now)
      .setExpirationTime(now + LIFETIME_S)
      .sign(this.key.privateKey);
    this.current = { jwt, expiresAt: now + LIFETIME_S };
    return jwt;
  }
}
