import { SvcError } from '../../errors.js';
import type { Doc, StoreCollection } from '../../store/Store.js';
import type { Context, Reply } from '../../types.js';
import type { AccountHost, LoginResult } from './AccountHost.js';
import { AuthRecords } from './AuthRecords.js';
import type { AuthSettings } from './authSettings.js';
import { EMAIL_PROOF } from './emailProof.js';
import { MFA_FIELDS, MfaFlow } from './MfaFlow.js';
import { OAuthLogin } from './OAuthLogin.js';

/** How one user signs in: never a secret, only which methods exist. */
function methodsOf(user: Doc): { password: boolean; providers: string[]; mfa: boolean } {
  const providers = Array.isArray(user._identities) ? user._identities.filter((p): p is string => typeof p === 'string') : [];
  const mfa = typeof user._mfa === 'object' && user._mfa !== null && (user._mfa as { enabled?: unknown }).enabled === true;
  return { password: typeof user.password === 'string', providers, mfa };
}

/** Store-only fields of a user kept by the account flows: never answered, never filterable (UserCollection gives them to Collection as store-only fields). */
export const ACCOUNT_FIELDS: readonly string[] = [...MFA_FIELDS, '_identities', EMAIL_PROOF];

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
    private readonly host: AccountHost,
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
    return new AccountFlows(records, mfa, auth.oauth === undefined ? undefined : new OAuthLogin(host, auth.oauth, auth.flows.verification.required), auth.mfa !== undefined, host);
  }

  /** Prepares the records' collection (its index). */
  init(): Promise<void> {
    return this.records.init();
  }

  /** The answer of an account route (/oauth/..., /mfa/...), or undefined for any other request. */
  route(ctx: Context): Promise<Reply> | undefined {
    const head = ctx.parts[0];
    if (head === 'mfa') {
      if (!this.mfaOn) throw new SvcError('NOT_FOUND', 'two-factor authentication is not on for this collection (auth.mfa)');
      return this.mfa.handle(ctx);
    }
    if (head === 'methods' && ctx.parts.length === 1 && ctx.method === 'GET') return this.methods(ctx);
    if (head === 'oauth') {
      if (this.oauth === undefined) throw new SvcError('NOT_FOUND', 'no OAuth providers are configured');
      return this.oauth.handle(ctx);
    }
    return undefined;
  }

  /**
   * GET /<users>/methods: how a user signs in (password, providers, two-factor), for account pages
   * and the dashboard. A user sees their own; root names users with `?ids=a,b` (at most 200).
   */
  private async methods(ctx: Context): Promise<Reply> {
    if (ctx.isRoot) {
      const ids = typeof ctx.query.ids === 'string' ? ctx.query.ids.split(',').filter((id) => id !== '') : [];
      if (ids.length === 0 || ids.length > 200 || ids.some((id) => id.length > 64)) throw new SvcError('BAD_REQUEST', 'ids must name 1 to 200 users, comma-separated');
      const users = await this.host.find({ id: { $in: ids } });
      return { status: 200, body: Object.fromEntries(users.map((user) => [user.id, methodsOf(user)])) };
    }
    const uid = ctx.me?.id;
    if (uid === undefined || ctx.session.path?.toLowerCase() !== this.host.path.toLowerCase()) throw new SvcError('UNAUTHORIZED', 'not logged in');
    const user = await this.host.findById(uid);
    if (user === null) throw new SvcError('UNAUTHORIZED', 'not logged in');
    return { status: 200, body: methodsOf(user) };
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
