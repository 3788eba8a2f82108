import { SvcError } from '../../errors.js';
import type { Doc, StoreCollection } from '../../store/Store.js';
import type { Context, Reply } from '../../types.js';
import type { AccountHost, LoginResult } from './AccountHost.js';
import { AuthRecords } from './AuthRecords.js';
import type { AuthSettings } from './authSettings.js';
import { MFA_FIELDS, MfaFlow } from './MfaFlow.js';
import { OAuthLogin } from './OAuthLogin.js';

/** Store-only fields of a user kept by the account flows: never answered, never filterable. */
export const ACCOUNT_FIELDS: readonly string[] = [...MFA_FIELDS, '_identities'];

/** What the UserCollection gives (the rest, `records` and `finishLogin`, is made here). */
export type AccountHostParts = Omit<AccountHost, 'records' | 'finishLogin'>;

/**
 * OAuth/OIDC login and TOTP MFA of one UserCollection, routed from its `handle`: the collection
 * keeps the one login path (limits, On Login, the session) and these flows call into it.
 */
export class AccountFlows {
  private constructor(
    private readonly records: AuthRecords,
    private readonly mfa: MfaFlow,
    private readonly oauth: OAuthLogin | undefined,
    private readonly mfaOn: boolean,
  ) {}

  /** The flows of a collection whose config.json has `auth.oauth` or `auth.mfa`; undefined otherwise. */
  static create(options: { path: string; auth?: AuthSettings | undefined; authStore?: StoreCollection | undefined }, parts: AccountHostParts): AccountFlows | undefined {
    const auth = options.auth;
    if (auth === undefined || (auth.mfa === undefined && auth.oauth === undefined)) return undefined;
    if (options.authStore === undefined) throw new Error(`resource ${options.path.slice(1)}: auth needs the _auth store collection`);
    const records = new AuthRecords(options.authStore, options.path);
    // The MFA flow needs the host and the host's finishLogin needs the flow.
    const late: { mfa?: MfaFlow } = {};
    const host: AccountHost = {
      ...parts,
      records,
      // Keys of other methods start with a line break, so that no username can share their counts.
      attempt: (ctx, key) => parts.attempt(ctx, `\n${key}`),
      finishLogin: async (ctx, user): Promise<LoginResult> => (await late.mfa?.secondStep(user)) ?? { kind: 'session', reply: await parts.startSession(ctx, user) },
    };
    const mfa = new MfaFlow(host, auth.mfa, options.path.slice(1));
    late.mfa = mfa;
    return new AccountFlows(records, mfa, auth.oauth === undefined ? undefined : new OAuthLogin(host, auth.oauth), auth.mfa !== undefined);
  }

  /** The answer of an account route (/oauth/..., /mfa/...), or undefined for any other request. */
  route(ctx: Context): Promise<Reply> | undefined {
    const head = ctx.parts[0];
    if (head === 'mfa') {
      if (!this.mfaOn) throw new SvcError('NOT_FOUND', 'two-factor authentication is not on for this collection (auth.mfa)');
      return this.mfa.handle(ctx);
    }
    if (head === 'oauth') {
      if (this.oauth === undefined) throw new SvcError('NOT_FOUND', 'no OAuth providers are configured');
      return this.oauth.handle(ctx);
    }
    return undefined;
  }

  /** After a right password: the MFA step's answer when one is due, else undefined. */
  async secondStep(user: Doc): Promise<Reply | undefined> {
    const step = await this.mfa.secondStep(user);
    if (step === undefined || step.kind !== 'mfa') return undefined;
    return { status: 200, body: { mfaRequired: true, mfaToken: step.mfaToken, ...(step.enroll ? { enroll: true } : {}) } };
  }

  /** Deleted users: their identities go with them (a new account may then use the provider). */
  async forgetUsers(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.records.removeWhere({ uid: { $in: [...ids] } });
  }
}
