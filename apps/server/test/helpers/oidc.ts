import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK } from 'jose';
import type { CryptoKey, JWK } from 'jose';
import Provider from 'oidc-provider';

/** A person at the test OpenID provider. */
export interface TestAccount {
  sub: string;
  email?: string;
  email_verified?: boolean | string;
  name?: string;
}

/** A real OpenID Connect provider (the `oidc-provider` package) on 127.0.0.1, port 0. */
export interface TestOp {
  issuer: string;
  accounts: Map<string, TestAccount>;
  /** The sub who "logs in" at the provider's next interaction (no login form to fill in). */
  next: string | undefined;
  /** The provider's signing key (private), so a test proxy can sign tokens as the provider would. */
  signingJwk: JWK;
  /** Registers the client (its redirect URIs are known once the app listens). */
  setClient(client: { clientId: string; clientSecret: string; redirectUris: string[] }): void;
  close(): Promise<void>;
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Starts a provider; its client is registered by {@link TestOp.setClient} before the first login. */
export async function startOp(): Promise<TestOp> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingJwk = { ...(await exportJWK(privateKey)), kid: `k-${Math.random().toString(36).slice(2)}`, alg: 'RS256', use: 'sig' };
  let provider: Provider | undefined;
  const op: TestOp = {
    issuer: '',
    accounts: new Map(),
    next: undefined,
    signingJwk,
    setClient(client) {
      provider = new Provider(op.issuer, {
        clients: [
          {
            client_id: client.clientId,
            client_secret: client.clientSecret,
            redirect_uris: client.redirectUris,
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        jwks: { keys: [signingJwk] },
        cookies: { keys: ['test-op-cookie-key'] },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
        // Only login + consent below: no devInteractions form to fill in.
        features: { devInteractions: { enabled: false } },
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        findAccount: (_ctx, id) => {
          const account = op.accounts.get(id);
          return account === undefined ? undefined : { accountId: id, claims: () => ({ ...account }) };
        },
      });
      provider.on('server_error', (_ctx, err) => process.stderr.write(`test OP: ${String(err)}\n`));
    },
    async close() {
      await stop(server);
    },
  };
  const { server, url } = await listen((req, res) => {
    if (provider === undefined) {
      res.writeHead(503).end();
      return;
    }
    if (req.url?.startsWith('/interaction/')) {
      void finishInteraction(provider, op, req, res).catch((err: unknown) => {
        res.writeHead(500).end(String(err));
      });
      return;
    }
    void provider.callback()(req, res);
  });
  op.issuer = url;
  return op;
}

/** The person `op.next` logs in and consents to what the client asked. */
async function finishInteraction(provider: Provider, op: TestOp, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const accountId = op.next;
  if (accountId === undefined) throw new Error('test OP: nobody to log in (set op.next)');
  const grant = new provider.Grant({ accountId, clientId: String(details.params.client_id) });
  grant.addOIDCScope(String(details.params.scope));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
}

/** How the tampering token proxy rewrites the ID token of the provider's answer. */
export type IdTokenTamper = 'resign' | 'audience' | 'issuer' | 'expired' | 'nonce' | 'no-nonce' | 'alg-none' | 'wrong-key' | 'hs256' | 'drop';

/**
 * An attacker between svc and the provider's token endpoint: forwards the code exchange to the
 * real provider, then rewrites the ID token per `mode` (signed with the provider's own key when
 * the claim is what is wrong, with another key or none when the signature is).
 */
export async function startTokenProxy(op: TestOp, clientSecret: string): Promise<{ url: string; mode: IdTokenTamper; close(): Promise<void> }> {
  const state = { mode: 'resign' as IdTokenTamper };
  const opKey = await importJWK(op.signingJwk, 'RS256');
  const { privateKey: otherKey } = await generateKeyPair('RS256');
  const { server, url } = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const answer = await fetch(`${op.issuer}/token`, {
          method: 'POST',
          headers: { 'content-type': String(req.headers['content-type']), authorization: String(req.headers.authorization ?? '') },
          body: Buffer.concat(chunks),
        });
        const json = (await answer.json()) as Record<string, unknown>;
        if (typeof json.id_token === 'string') json.id_token = await tamper(json.id_token, state.mode, { opKey, otherKey, clientSecret });
        if (state.mode === 'drop') delete json.id_token;
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      })().catch((err: unknown) => res.writeHead(500).end(String(err)));
    });
  });
  return {
    url: `${url}/token`,
    get mode() {
      return state.mode;
    },
    set mode(mode: IdTokenTamper) {
      state.mode = mode;
    },
    close: () => stop(server),
  };
}

async function tamper(token: string, mode: IdTokenTamper, keys: { opKey: CryptoKey | Uint8Array; otherKey: CryptoKey; clientSecret: string }): Promise<string> {
  const payload = decodeJwt(token);
  const header = decodeProtectedHeader(token);
  const now = Math.floor(Date.now() / 1000);
  const sign = (claims: Record<string, unknown>, key: CryptoKey | Uint8Array = keys.opKey, alg = 'RS256') =>
    new SignJWT(claims).setProtectedHeader({ alg, ...(header.kid ? { kid: header.kid } : {}) }).sign(key);
  switch (mode) {
    case 'resign':
    case 'drop':
      return sign(payload);
    case 'audience':
      return sign({ ...payload, aud: 'another-client' });
    case 'issuer':
      return sign({ ...payload, iss: 'https://evil.example' });
    case 'expired':
      return sign({ ...payload, iat: now - 7200, exp: now - 3600 });
    case 'nonce':
      return sign({ ...payload, nonce: 'a-nonce-of-another-login' });
    case 'no-nonce': {
      const { nonce: _nonce, ...rest } = payload;
      return sign(rest);
    }
    case 'wrong-key':
      return sign(payload, keys.otherKey);
    case 'hs256':
      return sign(payload, new TextEncoder().encode(keys.clientSecret), 'HS256');
    case 'alg-none': {
      const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      return `${part({ alg: 'none', kid: header.kid })}.${part(payload)}.`;
    }
  }
}

/**
 * A browser as far as redirects and cookies go: cookies kept per origin (host and port), every
 * redirect followed by hand, so a test sees (and may tamper with) each step.
 */
export class TestBrowser {
  private readonly jars = new Map<string, Map<string, string>>();

  async get(url: string, init: RequestInit = {}): Promise<Response> {
    const origin = new URL(url).host;
    const jar = this.jars.get(origin) ?? new Map<string, string>();
    this.jars.set(origin, jar);
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) } });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  }

  /** Follows redirects from `url` until one leads to a URL starting with `stopAt`; answers that URL. */
  async followUntil(url: string, stopAt: string): Promise<string> {
    let next = url;
    for (let hops = 0; hops < 20; hops++) {
      if (next.startsWith(stopAt)) return next;
      const res = await this.get(next);
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || location === null) throw new Error(`no redirect from ${next}: ${res.status} ${await res.text()}`);
      next = new URL(location, next).toString();
    }
    throw new Error('too many redirects');
  }

  /** Drops the cookies of one origin (the person logged out at the provider). */
  forget(host: string): void {
    this.jars.delete(host);
  }

  setCookie(host: string, name: string, value: string): void {
    const jar = this.jars.get(host) ?? new Map<string, string>();
    jar.set(name, value);
    this.jars.set(host, jar);
  }

  cookie(host: string, name: string): string | undefined {
    return this.jars.get(host)?.get(name);
  }
}

/**
 * GitHub's user API (GET /user, GET /user/emails) in front of the test provider: the access token
 * is checked by the provider's own userinfo endpoint, and the person's email is listed as primary,
 * verified as the provider's account says, beside a verified secondary one.
 */
export async function startGitHubApi(op: TestOp): Promise<{ url: string; close(): Promise<void> }> {
  const { server, url } = await listen((req, res) => {
    void (async () => {
      const info = await fetch(`${op.issuer}/me`, { headers: { authorization: String(req.headers.authorization ?? '') } });
      if (!info.ok) {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Bad credentials' }));
        return;
      }
      const claims = (await info.json()) as TestAccount;
      const body =
        req.url === '/user/emails'
          ? [
              { email: `secondary-${claims.sub}@example.com`, primary: false, verified: true },
              ...(claims.email ? [{ email: claims.email, primary: true, verified: claims.email_verified === true }] : []),
            ]
          : { id: claims.sub, login: claims.sub, name: claims.name ?? null };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    })().catch((err: unknown) => res.writeHead(500).end(String(err)));
  });
  return { url, close: () => stop(server) };
}
