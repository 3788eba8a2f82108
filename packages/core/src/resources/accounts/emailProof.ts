import type { Doc } from '../../store/Store.js';

/**
 * svc's own record that a user's address was proved, store-only (never answered, never written by
 * a POST or PUT, root's included): `{email}` when svc proved it by mail (a verification link, a
 * reset link, a code or link sign-in), `{email, provider}` when a provider vouched for it as it
 * created the user. A provider sign-in joins an existing account only through it (issue 38):
 * never through a property such as `verified`, which clients, root or scripts may have written.
 */
export const EMAIL_PROOF = '_emailProof';

/** What {@link EMAIL_PROOF} holds. */
export interface EmailProof {
  email: string;
  /** The provider that vouched for the address; absent when svc proved it by mail. */
  provider?: string;
}

/** The proof of `email` made by svc's mail flows, or by `provider` when given. */
export function emailProof(email: string, provider?: string): EmailProof {
  return provider === undefined ? { email } : { email, provider };
}

/**
 * Whether svc knows `user`'s address `email` to be theirs: proved by mail (good for any provider)
 * or vouched for by `provider` itself. The proof names its address, so it lapses when the address
 * changes by other means (root, a script, an unchecked PUT).
 */
export function provesEmail(user: Doc, email: string, provider?: string): boolean {
  const proof = user[EMAIL_PROOF];
  if (typeof proof !== 'object' || proof === null || Array.isArray(proof)) return false;
  const { email: proved, provider: by } = proof as Partial<Record<keyof EmailProof, unknown>>;
  if (typeof proved !== 'string' || proved !== email) return false;
  return by === undefined || (provider !== undefined && by === provider);
}
