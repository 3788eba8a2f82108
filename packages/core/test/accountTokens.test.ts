import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { AccountTokens } from '../src/resources/accounts/AccountTokens.js';
import { parseAuthSettings } from '../src/resources/accounts/authSettings.js';
import { storeKinds } from './helpers/stores.js';
import type { TestStore } from './helpers/stores.js';

// Issue 27: account tokens are stored hashed, expire, and are single use under any concurrency on
// every store (the claim is an insert, not a conditional update: FerretDB's are not atomic).

describe.each(storeKinds())('account tokens ($name store)', (kind) => {
  let made: TestStore;
  let tokens: AccountTokens;
  let others: AccountTokens;

  beforeAll(async () => {
    made = await kind.make();
    tokens = new AccountTokens(made.store.collection('_accounts'), '/users');
    others = new AccountTokens(made.store.collection('_accounts'), '/members');
    await tokens.init();
  });
  afterAll(() => made.dispose());
  afterEach(() => vi.useRealTimers());

  it('keeps only the SHA-256 of a token; the token finds its record, a forged one none', async () => {
    const token = await tokens.issue('reset', { uid: 'u1', email: 'a@example.com' }, 60_000);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const all = await made.store.collection('_accounts').find({});
    expect(JSON.stringify(all)).not.toContain(token);
    expect(await tokens.find('reset', token)).toMatchObject({ uid: 'u1', email: 'a@example.com' });
    expect(await tokens.find('reset', 'A'.repeat(43))).toBeNull();
  });

  it('a token of another kind or another collection is no match', async () => {
    const token = await tokens.issue('verification', { uid: 'u2', email: 'b@example.com', from: 'b@example.com' }, 60_000);
    expect(await tokens.find('reset', token)).toBeNull();
    expect(await tokens.find('login', token)).toBeNull();
    expect(await others.find('verification', token)).toBeNull();
    expect(await tokens.find('verification', token)).not.toBeNull();
  });

  it('an expired token and an expired code find nothing', async () => {
    const token = await tokens.issue('reset', { uid: 'u3', email: 'c@example.com' }, 60_000);
    const code = await tokens.issueCode('u3', 'c@example.com', 6, 60_000);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 60_001 });
    expect(await tokens.find('reset', token)).toBeNull();
    expect(await tokens.findCode('c@example.com')).toBeNull();
    vi.useRealTimers();
    const record = await tokens.findCode('c@example.com');
    expect(record !== null && tokens.codeMatches(record, code)).toBe(true);
  });

  it('20 parallel claims of one token: exactly one wins', async () => {
    const token = await tokens.issue('login', { uid: 'u4', email: 'd@example.com' }, 60_000);
    const record = await tokens.find('login', token);
    expect(record).not.toBeNull();
    const wins = await Promise.all(Array.from({ length: 20 }, () => tokens.claim(record!)));
    expect(wins.filter(Boolean)).toHaveLength(1);
    expect(await tokens.find('login', token)).toBeNull();
  });

  it('a new code replaces the previous one; wrong guesses use a code up', async () => {
    const first = await tokens.issueCode('u5', 'e@example.com', 6, 60_000);
    const second = await tokens.issueCode('u5', 'e@example.com', 6, 60_000);
    let record = await tokens.findCode('e@example.com');
    expect(record !== null && tokens.codeMatches(record, second)).toBe(true);
    if (first !== second) expect(tokens.codeMatches(record!, first)).toBe(false);
    for (let i = 0; i < 3; i++) {
      record = await tokens.findCode('e@example.com');
      expect(record !== null && (await tokens.takeAttempt(record, 3))).toBe(true);
      await tokens.wrongGuess(record!, 3);
    }
    expect(await tokens.findCode('e@example.com')).toBeNull();
  });

  it('30 guesses at once at one code: exactly maxAttempts of them get an attempt, then the code is gone', async () => {
    await tokens.issueCode('u8', 'h@example.com', 6, 60_000);
    const record = await tokens.findCode('h@example.com');
    const taken = await Promise.all(Array.from({ length: 30 }, () => tokens.takeAttempt(record!, 5)));
    expect(taken.filter(Boolean)).toHaveLength(5);
    expect(await tokens.findCode('h@example.com')).toBeNull();
  });

  it('voidUser removes the unused tokens of a kind for one user only', async () => {
    const mine = await tokens.issue('reset', { uid: 'u6', email: 'f@example.com' }, 60_000);
    const theirs = await tokens.issue('reset', { uid: 'u7', email: 'g@example.com' }, 60_000);
    await tokens.voidUser('reset', 'u6');
    expect(await tokens.find('reset', mine)).toBeNull();
    expect(await tokens.find('reset', theirs)).not.toBeNull();
  });
});

describe('auth settings (config.json)', () => {
  const flowsOf = (auth: unknown) => parseAuthSettings('users', auth, new Set()).flows;

  it.each([
    [{ verification: true }, 'resource users: auth.verification must be an object'],
    [{ reset: { expiresMinutes: 0 } }, 'resource users: auth.reset.expiresMinutes must be a whole number from 1 to 1440'],
    [{ codes: { length: 4 } }, 'resource users: auth.codes.length must be a whole number from 6 to 10'],
    [{ reset: { url: 'https://x.example/reset' } }, 'resource users: auth.reset.url must be an http(s) URL holding {token}, e.g. "https://app.example.com/reset?token={token}"'],
    [{ reset: { url: 'javascript:alert(1)//{token}' } }, 'resource users: auth.reset.url must be an http(s) URL holding {token}, e.g. "https://app.example.com/reset?token={token}"'],
    [{ verification: { requried: true } }, 'resource users: auth.verification: unknown setting requried (known: enabled, required, expiresMinutes, url)'],
    [[], 'resource users: auth must be an object'],
    [{ verfication: {} }, 'resource users: auth: unknown setting verfication (known: verification, reset, codes, mail, mfa, oauth)'],
  ])('%j is refused', (auth, message) => {
    expect(() => flowsOf(auth)).toThrow(message);
  });

  it('a section given turns its flow on with the defaults; others stay off', () => {
    const policy = flowsOf({ reset: {}, mail: { anything: 1 } });
    expect(policy.reset).toEqual({ enabled: true, expiresMs: 3_600_000, url: undefined });
    expect(policy.verification.enabled).toBe(false);
    expect(policy.codes).toMatchObject({ enabled: false, length: 6, maxAttempts: 5 });
    expect(flowsOf(undefined)).toEqual({ ...policy, reset: { ...policy.reset, enabled: false } });
  });

  it('one reading for every part: sections checked as written, then every value read resolved', () => {
    const seen: unknown[] = [];
    const resolve = (auth: unknown) => {
      seen.push(auth);
      return JSON.parse(JSON.stringify(auth).replaceAll('${env:BASE}', 'https://app.example.com')) as unknown;
    };
    // A misspelt section is named before any reference is resolved.
    expect(() => parseAuthSettings('users', { oatuh: { baseUrl: '${env:BASE}' } }, new Set(), resolve)).toThrow('resource users: auth: unknown setting oatuh');
    expect(seen).toEqual([]);
    const settings = parseAuthSettings('users', { reset: { url: '${env:BASE}/reset?token={token}' }, mail: { resource: '${env:BASE}' }, mfa: {}, oauth: { baseUrl: '${env:BASE}' } }, new Set(['email']), resolve);
    expect(settings.flows.reset.url).toBe('https://app.example.com/reset?token={token}');
    expect(settings.mail).toEqual({ resource: 'https://app.example.com' });
    expect(settings.oauth).toMatchObject({ baseUrl: 'https://app.example.com', emailProperty: 'email' });
    expect(settings.mfa).toEqual({ required: false, issuer: undefined });
  });
});
