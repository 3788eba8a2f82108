import { randomBytes } from 'node:crypto';
import { SvcError, isSvcError } from '../../errors.js';
import { DuplicateKeyError } from '../../store/Store.js';
import type { Doc } from '../../store/Store.js';
import type { Context } from '../../types.js';
import type { AccountHost } from './AccountHost.js';
import type { OAuthProviderSettings, OAuthSettings } from './authSettings.js';
import { EMAIL_PROOF, emailProof, provesEmail } from './emailProof.js';
import type { ProviderProfile } from './providerProfiles.js';

/** Identities are kept until their user is deleted. */
const FOREVER = Infinity;

/**
 * Which account a provider sign-in is: the one its identity (provider, subject) is linked to; for
 * a first sign-in, the account svc proved the provider's vouched-for address for (by mail, or by
 * this same provider when it made the account), else a new one. An address the provider does not
 * vouch for (Facebook's, Spotify's, an unverified one) never joins an account: whoever holds it
 * signs in to a new account without an address, or links the provider from their account.
 */
export class ProviderAccounts {
  constructor(
    private readonly host: AccountHost,
    private readonly settings: OAuthSettings,
    /** auth.verification.required: an account without a verified address could not log in. */
    private readonly verificationRequired: boolean,
  ) {}

  async userOfIdentity(identityKey: string): Promise<Doc | null> {
    const identity = await this.host.records.find('identity', identityKey);
    if (identity === undefined || typeof identity.uid !== 'string') return null;
    return this.host.findById(identity.uid);
  }

  /** Stores the identity for the user (once: a unique record per provider and subject). */
  async link(identityKey: string, provider: OAuthProviderSettings, uid: string): Promise<Doc> {
    if (!(await this.host.records.claim('identity', identityKey, FOREVER, { uid }))) {
      const owner = await this.userOfIdentity(identityKey);
      if (owner === null || owner.id !== uid) throw new SvcError('CONFLICT', `this ${provider.name} account is linked to another user`);
    }
    const user = await this.host.updateUser({ id: uid }, { $addToSet: { _identities: [provider.name] } });
    if (user === null) throw new SvcError('NOT_FOUND', 'no such user');
    return user;
  }

  /** An identity seen for the first time: the account its vouched-for address proves, or a new one. */
  async firstSignIn(ctx: Context, provider: OAuthProviderSettings, profile: ProviderProfile, identityKey: string): Promise<Doc> {
    const email = profile.email?.toLowerCase();
    if (email !== undefined && profile.emailVerified) return this.byVouchedAddress(ctx, provider, profile, identityKey, email);
    if (email !== undefined && (await this.host.findOne({ [this.settings.emailProperty]: email })) !== null) {
      throw new SvcError('CONFLICT', `an account with this email exists, and ${provider.name} does not vouch for the address; log in to it and link ${provider.name} from there`);
    }
    if (!this.settings.signup) throw new SvcError('FORBIDDEN', 'sign-up through a provider is off for this collection');
    if (!this.settings.signupWithoutEmail || this.verificationRequired) {
      throw new SvcError('FORBIDDEN', `${provider.name} did not give a verified email; log in another way and link ${provider.name} from your account`);
    }
    return this.create(ctx, provider, profile, identityKey, undefined);
  }

  /**
   * The provider vouches for the address. An account with it is joined only when svc proved the
   * address for it (by mail, or this provider when it made the account): never because of a
   * property such as `verified`, which whoever made the account may have set. No account has it:
   * a user is created with it.
   */
  private async byVouchedAddress(ctx: Context, provider: OAuthProviderSettings, profile: ProviderProfile, identityKey: string, email: string): Promise<Doc> {
    const { emailProperty } = this.settings;
    // Without a unique index several accounts may hold the address: the one svc proved it for, if any
    // (looked up by its proof, so that any number of squatting accounts cannot hide it).
    const proved = await this.host.find({ [emailProperty]: email, [`${EMAIL_PROOF}.email`]: email });
    const owner = proved.find((user) => provesEmail(user, email, provider.name));
    if (owner !== undefined) return this.link(identityKey, provider, owner.id);
    if ((await this.host.findOne({ [emailProperty]: email })) !== null) {
      throw new SvcError('CONFLICT', `an account with this email exists but svc has not verified the address for it; log in to it and link ${provider.name} from there`);
    }
    if (!this.settings.signup) throw new SvcError('FORBIDDEN', 'sign-up through a provider is off for this collection');
    return this.create(ctx, provider, profile, identityKey, email);
  }

  /**
   * A new user through POST's path (On Validate and On Post run; no password): the vouched-for
   * address as username and email, or without one `<provider>:<subject>` as username (with a
   * random tail when someone signed up with that name first). The mapped claims never set the
   * address or the verified flag: only the provider's vouched-for address does.
   */
  private async create(ctx: Context, provider: OAuthProviderSettings, profile: ProviderProfile, identityKey: string, email: string | undefined): Promise<Doc> {
    const { emailProperty, verifiedProperty } = this.settings;
    const base = mapped(provider.map, profile.claims, this.host.properties, new Set(['username', 'password', 'email', 'verified', emailProperty, verifiedProperty]));
    const username = email ?? `${provider.name}:${profile.subject}`;
    let created: Doc | undefined;
    for (const name of email === undefined ? [username, `${username}:${randomBytes(6).toString('base64url')}`] : [username]) {
      try {
        created = await this.host.createUser(ctx, { ...base, username: name, ...(email === undefined ? {} : { [emailProperty]: email }) });
        break;
      } catch (err) {
        // The same person's parallel first login made the user a moment ago: use theirs.
        if (!(err instanceof DuplicateKeyError) && !(isSvcError(err) && err.code === 'VALIDATION_FAILED')) throw err;
        const raced = await this.userOfIdentity(identityKey);
        if (raced !== null) return raced;
        if (email !== undefined || name !== username || !(await this.squatted(name))) throw err;
      }
    }
    if (created === undefined) throw new SvcError('INTERNAL', 'the new user was not made');
    if (email !== undefined) {
      // Set past the scripts (this is no client): the provider's word for the address, and the flag apps show.
      const fields: Record<string, unknown> = { [EMAIL_PROOF]: emailProof(email, provider.name) };
      if (Object.hasOwn(this.host.properties, verifiedProperty)) fields[verifiedProperty] = true;
      await this.host.updateUser({ id: created.id }, { $set: fields });
    }
    return this.link(identityKey, provider, created.id);
  }

  /**
   * Whether a username a new account without an address wanted is held by someone who signed up
   * with a password (names such as `x:<id>` can be registered first, to keep that person out);
   * a passwordless holder is the same person's parallel first sign-in, which must not get a
   * second account.
   */
  private async squatted(username: string): Promise<boolean> {
    const holder = await this.host.findOne({ username });
    return typeof holder?.password === 'string';
  }
}

/** Declared properties only, copied from the claims named by `map`, and only values of the property's type. */
function mapped(map: Record<string, string>, claims: Record<string, unknown>, properties: AccountHost['properties'], never: ReadonlySet<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [property, claim] of Object.entries(map)) {
    const def = Object.hasOwn(properties, property) ? properties[property] : undefined;
    const value = Object.hasOwn(claims, claim) ? claims[claim] : undefined;
    if (def === undefined || value === undefined || never.has(property)) continue;
    const fits = def.type === 'array' ? Array.isArray(value) : def.type === 'object' ? typeof value === 'object' && value !== null && !Array.isArray(value) : typeof value === def.type;
    if (fits) out[property] = value;
  }
  return out;
}
