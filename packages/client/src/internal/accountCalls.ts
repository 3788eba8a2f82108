import { SvcPromise } from '../SvcPromise.js';
import { otpauthQrSvg } from '../qrSvg.js';
import type { Callback, LoginAnswer, MfaCalls, ProviderLoginOptions, SvcErrorBody } from '../types.js';
import type { AccessorContext, run as runCall } from './accessors.js';
import type { SortedArgs } from './calls.js';

/** How often a popup login looks whether the provider sent the window back. */
const POPUP_POLL_MS = 250;
const POPUP_NAME = 'svc-login';

interface BrowserWindow {
  name?: string;
  opener?: unknown;
  location: { href: string; hash: string; assign(url: string): void };
  open(url: string, target: string, features: string): PopupWindow | null;
  history?: { replaceState(data: unknown, unused: string, url: string): void };
}

interface PopupWindow {
  closed: boolean;
  location: { href: string };
  close(): void;
}

/** The account calls of a user collection: provider login and the MFA steps. */
export function accountCalls(ctx: AccessorContext, path: string, run: typeof runCall): { loginWithProvider: unknown; providerLoginResult: unknown; mfa: MfaCalls } {
  const post = (func: string, body: Record<string, unknown>, fn?: Callback<never>) => run(ctx, { method: 'POST', path: `${path}/mfa/${func}`, body }, callbackOf(fn));
  const mfa = {
    status: (fn?: Callback<never>) => run(ctx, { method: 'GET', path: `${path}/mfa` }, callbackOf(fn)),
    enroll: (input?: { mfaToken?: string } | Callback<never>, fn?: Callback<never>) => (typeof input === 'function' ? post('enroll', {}, input) : post('enroll', input ?? {}, fn)),
    confirm: (input: { code: string; mfaToken?: string }, fn?: Callback<never>) => post('confirm', input, fn),
    verify: (input: { mfaToken: string; code: string }, fn?: Callback<never>) => post('verify', input, fn),
    disable: (input: { code: string }, fn?: Callback<never>) => post('disable', input, fn),
    qrSvg: otpauthQrSvg,
  } as unknown as MfaCalls;

  /** The URL that starts a provider login (the browser goes there, in the page or a popup). */
  const startUrl = (provider: string, options: ProviderLoginOptions): string => {
    const query = new URLSearchParams({ redirect: options.redirect, ...(options.link === true ? { link: 'true' } : {}) });
    return `${ctx.transport.baseUrl}${path}/oauth/${encodeURIComponent(provider)}?${query.toString()}`;
  };

  const loginWithProvider = (provider: string, options: ProviderLoginOptions): SvcPromise<LoginAnswer> =>
    new SvcPromise<LoginAnswer>((resolve, reject) => {
      const win = (globalThis as { window?: BrowserWindow }).window;
      if (win === undefined) {
        reject(failure('loginWithProvider needs a browser window'));
        return;
      }
      const url = startUrl(provider, options);
      if (options.mode !== 'popup') {
        // The page goes to the provider and comes back to `redirect`: read it with providerLoginResult().
        win.location.assign(url);
        return;
      }
      const popup = win.open(url, POPUP_NAME, 'width=520,height=680');
      if (popup === null) {
        reject(failure('the login window was blocked'));
        return;
      }
      const timer = setInterval(() => {
        if (popup.closed) {
          clearInterval(timer);
          reject(failure('the login window was closed'));
          return;
        }
        let href: string;
        try {
          href = popup.location.href;
        } catch {
          return; // Still at the provider (another origin).
        }
        if (!href.startsWith(options.redirect)) return;
        clearInterval(timer);
        popup.close();
        const answer = parseFragment(new URL(href).hash);
        if (answer === null) reject(failure('the login answered nothing'));
        else if ('error' in answer) reject(failure(answer.error));
        else void bindThen(ctx, answer).then(resolve);
      }, POPUP_POLL_MS);
    });

  /** After a redirect login: the answer in the page's fragment (removed from the address bar), or null. */
  const providerLoginResult = (hash?: string): LoginAnswer | null => {
    const win = (globalThis as { window?: BrowserWindow }).window;
    // The page loaded in a login popup leaves the answer to the window that opened it.
    if (hash === undefined && win?.name === POPUP_NAME && win.opener !== null && win.opener !== undefined) return null;
    const answer = parseFragment(hash ?? win?.location.hash ?? '');
    if (answer === null) return null;
    if (hash === undefined && win?.history !== undefined) win.history.replaceState(null, '', win.location.href.split('#')[0] ?? '');
    if ('error' in answer) throw failure(answer.error);
    void bindThen(ctx, answer);
    return answer;
  };

  return { loginWithProvider, providerLoginResult, mfa };
}

/** The realtime socket follows the new session, as after /login. */
async function bindThen(ctx: AccessorContext, answer: LoginAnswer): Promise<LoginAnswer> {
  if ('id' in answer) await ctx.realtime.bind(answer.id);
  return answer;
}

function parseFragment(hash: string): LoginAnswer | { error: string } | null {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const error = params.get('svc_oauth_error');
  if (error !== null) return { error };
  const mfaToken = params.get('svc_mfa');
  if (mfaToken !== null) return { mfaRequired: true, mfaToken, ...(params.get('svc_mfa_enroll') === 'true' ? { enroll: true } : {}) };
  const id = params.get('svc_session');
  const uid = params.get('svc_uid');
  const path = params.get('svc_path');
  return id !== null && uid !== null && path !== null ? { id, uid, path } : null;
}

function callbackOf(fn: unknown): SortedArgs['fn'] {
  return typeof fn === 'function' ? (fn as SortedArgs['fn']) : undefined;
}

function failure(message: string): SvcErrorBody {
  return { status: 401, statusCode: 401, message };
}
