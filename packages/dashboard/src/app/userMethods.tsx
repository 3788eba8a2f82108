import { useEffect, useState } from 'preact/hooks';
import { call } from './api.ts';
import type { ResourceView } from './api.ts';

/** How one user signs in, as GET /<users>/methods answers it. */
export interface SignInMethods {
  password: boolean;
  providers: string[];
  mfa: boolean;
}

/** Whether a collection has account settings (`auth`): then its grid shows each user's sign-in methods. */
export function hasAccounts(resource: ResourceView): boolean {
  return resource.type === 'UserCollection' && typeof resource.config.auth === 'object' && resource.config.auth !== null;
}

/** The sign-in methods of the shown users, fetched in one call per page of rows. */
export function useSignInMethods(resource: ResourceView, ids: readonly string[]): { methods: Record<string, SignInMethods>; reload(): void } {
  const [methods, setMethods] = useState<Record<string, SignInMethods>>({});
  const [round, setRound] = useState(0);
  const key = ids.join(',');
  useEffect(() => {
    if (!hasAccounts(resource) || key === '') return;
    let current = true;
    call<Record<string, SignInMethods>>('GET', `/${resource.name}/methods?ids=${encodeURIComponent(key)}`).then(
      (found) => current && setMethods(found),
      // An app whose server predates the call shows no methods; the grid works without them.
      () => current && setMethods({}),
    );
    return () => {
      current = false;
    };
  }, [resource, key, round]);
  return { methods, reload: () => setRound((n) => n + 1) };
}

/**
 * Root's "Reset two-factor" for a user who lost their device: the server turns MFA off and ends
 * every session of the user (POST /dashboard/api/resources/<users>/reset-mfa).
 */
async function resetTwoFactor(resource: ResourceView, id: string, done: () => void): Promise<void> {
  if (!confirm(`Reset two-factor of ${id}? Their authenticator codes and recovery codes stop working, every session of theirs ends, and their next login asks for the password only.`)) return;
  try {
    await call('POST', `/dashboard/api/resources/${resource.name}/reset-mfa`, { id });
  } catch (err) {
    alert(`Two-factor was not reset: ${(err as Error).message}`);
  }
  done();
}

/** "password · google · 2FA" for one user, and, with 2FA on, the reset action. */
export function SignInCell({ methods, resource, id, changed }: { methods: SignInMethods | undefined; resource: ResourceView; id: string; changed(): void }) {
  if (methods === undefined) return <td class="muted" data-col="sign-in" />;
  const parts = [...(methods.password ? ['password'] : []), ...methods.providers, ...(methods.mfa ? ['2FA'] : [])];
  return (
    <td class="mono" data-col="sign-in" title="how this user signs in (never a secret)">
      {parts.join(' · ') || 'none'}
      {methods.mfa && (
        <button class="btn small" type="button" data-test="reset-mfa" title="the user lost their device: two-factor off, all their sessions end" onClick={() => void resetTwoFactor(resource, id, changed)}>
          Reset two-factor
        </button>
      )}
    </td>
  );
}
