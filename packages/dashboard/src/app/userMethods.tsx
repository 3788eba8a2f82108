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
export function useSignInMethods(resource: ResourceView, ids: readonly string[]): Record<string, SignInMethods> {
  const [methods, setMethods] = useState<Record<string, SignInMethods>>({});
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
  }, [resource, key]);
  return methods;
}

/** "password · google · 2FA" for one user. */
export function SignInCell({ methods }: { methods: SignInMethods | undefined }) {
  if (methods === undefined) return <td class="muted" data-col="sign-in" />;
  const parts = [...(methods.password ? ['password'] : []), ...methods.providers, ...(methods.mfa ? ['2FA'] : [])];
  return (
    <td class="mono" data-col="sign-in" title="how this user signs in (never a secret)">
      {parts.join(' · ') || 'none'}
    </td>
  );
}
