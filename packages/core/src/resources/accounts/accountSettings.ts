/**
 * The mail-based account settings of a UserCollection (config.json `auth.verification`,
 * `auth.reset`, `auth.codes`). `auth.mail` (how mail goes out) is checked by the server, which hands
 * the collection an {@link AccountMailer}.
 */
export interface AccountSettings {
  verification?: { enabled?: boolean; required?: boolean; expiresMinutes?: number; url?: string };
  reset?: { enabled?: boolean; expiresMinutes?: number; url?: string };
  codes?: { enabled?: boolean; expiresMinutes?: number; length?: number; maxAttempts?: number; url?: string };
}

/** The settings with their defaults filled in; a flow left out of `auth` is off. */
export interface AccountPolicy {
  verification: { enabled: boolean; required: boolean; expiresMs: number; url: string | undefined };
  reset: { enabled: boolean; expiresMs: number; url: string | undefined };
  codes: { enabled: boolean; expiresMs: number; length: number; maxAttempts: number; url: string | undefined };
}

const MINUTE = 60_000;
const SECTIONS = { verification: ['enabled', 'required', 'expiresMinutes', 'url'], reset: ['enabled', 'expiresMinutes', 'url'], codes: ['enabled', 'expiresMinutes', 'length', 'maxAttempts', 'url'] } as const;

/**
 * Checks `auth`'s mail-based sections and fills in the defaults. A wrong value stops the start,
 * naming the resource and the setting. Only `parseAuthSettings` calls it (with `auth`
 * already checked to be an object): one reader of `auth` for every part of svc.
 */
export function parseAccountFlows(resource: string, given: Readonly<Record<string, unknown>>): AccountPolicy {
  const where = (key: string) => `resource ${resource}: auth.${key}`;
  const section = (name: keyof typeof SECTIONS): Record<string, unknown> | undefined => {
    const value = given[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${where(name)} must be an object`);
    const unknown = Object.keys(value).filter((k) => !(SECTIONS[name] as readonly string[]).includes(k));
    if (unknown.length > 0) throw new Error(`${where(name)}: unknown setting ${unknown.join(', ')} (known: ${SECTIONS[name].join(', ')})`);
    return value as Record<string, unknown>;
  };
  const bool = (s: Record<string, unknown> | undefined, name: string, key: string, fallback: boolean): boolean => {
    const v = s?.[key];
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean') throw new Error(`${where(`${name}.${key}`)} must be true or false`);
    return v;
  };
  const int = (s: Record<string, unknown> | undefined, name: string, key: string, fallback: number, min: number, max: number): number => {
    const v = s?.[key];
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new Error(`${where(`${name}.${key}`)} must be a whole number from ${min} to ${max}`);
    return v;
  };
  const url = (s: Record<string, unknown> | undefined, name: string): string | undefined => {
    const v = s?.url;
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !/^https?:\/\/[^\s]+$/.test(v) || !v.includes('{token}')) {
      throw new Error(`${where(`${name}.url`)} must be an http(s) URL holding {token}, e.g. "https://app.example.com/reset?token={token}"`);
    }
    return v;
  };
  const verification = section('verification');
  const reset = section('reset');
  const codes = section('codes');
  return {
    verification: {
      enabled: bool(verification, 'verification', 'enabled', verification !== undefined),
      required: bool(verification, 'verification', 'required', false),
      expiresMs: int(verification, 'verification', 'expiresMinutes', 24 * 60, 1, 30 * 24 * 60) * MINUTE,
      url: url(verification, 'verification'),
    },
    reset: {
      enabled: bool(reset, 'reset', 'enabled', reset !== undefined),
      expiresMs: int(reset, 'reset', 'expiresMinutes', 60, 1, 24 * 60) * MINUTE,
      url: url(reset, 'reset'),
    },
    codes: {
      enabled: bool(codes, 'codes', 'enabled', codes !== undefined),
      expiresMs: int(codes, 'codes', 'expiresMinutes', 10, 1, 60) * MINUTE,
      length: int(codes, 'codes', 'length', 6, 6, 10),
      maxAttempts: int(codes, 'codes', 'maxAttempts', 5, 1, 20),
      url: url(codes, 'codes'),
    },
  };
}

/** True when any mail-based flow is on (the collection then needs a mailer). */
export function sendsMail(policy: AccountPolicy): boolean {
  return policy.verification.enabled || policy.reset.enabled || policy.codes.enabled;
}
