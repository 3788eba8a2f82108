import { createHmac } from 'node:crypto';
import { SvcError } from '../../errors.js';
import type { ProfileSource } from './oauthProviders.js';

/** What a provider told about the person who logged in. */
export interface ProviderProfile {
  /** The provider's stable id of the person (`sub`, GitHub's numeric id, Bitbucket's uuid). */
  subject: string;
  /** The person's address at the provider, whether or not the provider vouches for it. */
  email: string | undefined;
  /** True only when the provider itself says the address is verified (never for a provider without such a flag). */
  emailVerified: boolean;
  /** The ID token's claims (or the API's user object with the usual claim names added), for `map`. */
  claims: Record<string, unknown>;
}

/** GET requests to an OAuth2 provider's API with the access token of the login. */
export interface ProviderApi {
  /** The provider's name in `providers` (for messages). */
  readonly provider: string;
  /** `apiBase` (no trailing slash). */
  readonly base: string;
  readonly accessToken: string;
  readonly clientSecret: string;
  /** `path` under `base` (or an absolute URL of `base`'s origin), with `query`; a JSON array answers `{list}` when `list`. */
  get(path: string, options?: { query?: Record<string, string>; headers?: Record<string, string>; list?: boolean }): Promise<Record<string, unknown>>;
}

type Reader = (api: ProviderApi) => Promise<ProviderProfile>;
type Raw = Record<string, unknown>;

const GITHUB_HEADERS = { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };
/** Bitbucket pages its address list; the primary one is on the first page in practice. */
const MAX_PAGES = 5;

/**
 * How each OAuth2 provider names the person and their address. Only a flag of the provider's own
 * vouches for an address: GitHub's and Bitbucket's verified (confirmed) primary, Discord's
 * `verified`, Zoom's `verified: 1`; Facebook's and Spotify's addresses have no such flag (Spotify
 * documents its as unverified) and X gives none.
 */
export const PROFILE_READERS: Readonly<Record<ProfileSource, Reader>> = {
  async github(api) {
    const user = await api.get('/user', { headers: GITHUB_HEADERS });
    const emails = await api.get('/user/emails', { headers: GITHUB_HEADERS, list: true });
    const primary = listOf(emails.list).find((e) => e.primary === true);
    const email = address(primary?.email);
    const name = text(user.name) ?? text(user.login);
    return profile(api, user.id, email, primary?.verified === true, { ...user, name, preferred_username: user.login, picture: user.avatar_url });
  },

  async bitbucket(api) {
    const user = await api.get('/user');
    let primary: Raw | undefined;
    let page: Raw = await api.get('/user/emails');
    for (let n = 1; ; n++) {
      primary = listOf(page.values).find((e) => e.is_primary === true);
      if (primary !== undefined || typeof page.next !== 'string' || n >= MAX_PAGES) break;
      page = await api.get(page.next);
    }
    const avatar = (user.links as { avatar?: { href?: unknown } } | undefined)?.avatar?.href;
    return profile(api, user.uuid, address(primary?.email), primary?.is_confirmed === true, { ...user, name: user.display_name, preferred_username: user.username ?? user.nickname, picture: avatar });
  },

  async discord(api) {
    const user = await api.get('/users/@me');
    const picture = typeof user.avatar === 'string' && typeof user.id === 'string' ? `https://cdn.discordapp.com/avatars/${user.id}/${user.avatar}.png` : undefined;
    return profile(api, user.id, address(user.email), user.verified === true, { ...user, name: text(user.global_name) ?? user.username, preferred_username: user.username, picture });
  },

  async facebook(api) {
    // "Require App Secret" apps refuse Graph calls without this proof of the secret.
    const proof = createHmac('sha256', api.clientSecret).update(api.accessToken).digest('hex');
    const me = await api.get('/me', { query: { fields: 'id,name,first_name,last_name,email,picture', appsecret_proof: proof } });
    const picture = (me.picture as { data?: { url?: unknown } } | undefined)?.data?.url;
    return profile(api, me.id, address(me.email), false, { ...me, given_name: me.first_name, family_name: me.last_name, picture });
  },

  async x(api) {
    const me = await api.get('/2/users/me', { query: { 'user.fields': 'id,name,username,profile_image_url' } });
    const data = typeof me.data === 'object' && me.data !== null && !Array.isArray(me.data) ? (me.data as Raw) : {};
    return profile(api, data.id, undefined, false, { ...data, preferred_username: data.username, picture: data.profile_image_url });
  },

  async spotify(api) {
    const me = await api.get('/v1/me');
    const image = listOf(me.images)[0]?.url;
    return profile(api, me.id, address(me.email), false, { ...me, name: me.display_name, picture: image });
  },

  async zoom(api) {
    const me = await api.get('/v2/users/me');
    const name = text(me.display_name) ?? ([text(me.first_name), text(me.last_name)].filter(Boolean).join(' ') || undefined);
    return profile(api, me.id, address(me.email), me.verified === 1 || me.verified === true, { ...me, name, given_name: me.first_name, family_name: me.last_name, picture: me.pic_url });
  },
};

/** A profile with the usual claims for `map` (`email`, `email_verified`), its subject checked. */
function profile(api: ProviderApi, id: unknown, email: string | undefined, verified: boolean, claims: Raw): ProviderProfile {
  const subject = subjectOf(id);
  if (subject === undefined) throw new SvcError('BAD_GATEWAY', `${api.provider} answered no user id`);
  const emailVerified = email !== undefined && verified;
  return { subject, email, emailVerified, claims: { ...claims, email, email_verified: emailVerified } };
}

/** A provider's id of a person: a non-empty string of printable characters (at most 255) or a whole number. */
export function subjectOf(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  // eslint-disable-next-line no-control-regex
  return typeof value === 'string' && value.length > 0 && value.length <= 255 && !/[\u0000-\u001f\u007f]/.test(value) ? value : undefined;
}

/** An address as providers give it: one `local@domain`, no spaces, at most 254 characters. */
export function address(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= 254 && /^[^\s@]+@[^\s@]+$/.test(value) ? value : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

function listOf(value: unknown): Raw[] {
  return Array.isArray(value) ? value.filter((v): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v)) : [];
}
