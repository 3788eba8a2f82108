import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io-client';
import { LIVE_EVENT } from '@svc/realtime';
import type { LiveMessage, SubscribeRequest } from '@svc/realtime';
import { HttpClient, settle, signUpAndLogin, until } from './helpers.js';
import type { RtServer } from './helpers.js';
import { LIVE_STORES, rootRequest, startLiveServer, subscribe } from './liveHelpers.js';
import type { LiveStore } from './liveHelpers.js';

/**
 * Attacks on live queries modelled on Parse LiveQuery's advisories: protected fields tested
 * through query constraints (every operator, `$or`/`$and`/`$nor`, dotted paths, sort), `$or` given
 * as an array-like object, subscriptions as an existence oracle, session tokens and password
 * hashes in payloads. What must hold: nothing a subscriber receives, nor whether and how its
 * subscription is answered, depends on a property it may not read.
 */
describe.each(LIVE_STORES)('live queries under attack ($name store)', (kind) => {
  let store: LiveStore;
  let rt: RtServer;
  const sockets: Socket[] = [];
  let mallory: HttpClient;
  let socket: Socket;
  const raw: string[] = [];
  let n = 0;

  beforeAll(async () => {
    store = await kind.make();
    rt = await startLiveServer(store.store);
    mallory = new HttpClient(rt.url);
    await signUpAndLogin(mallory, `mallory-${kind.name}`);
    socket = await mallory.socket();
    sockets.push(socket);
    socket.on(LIVE_EVENT, (m: unknown) => raw.push(JSON.stringify(m)));
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await rt?.close();
    await store?.dispose();
  });

  /** What a subscription answers and receives, without its own id, for comparing two of them. */
  async function observe(query: Record<string, unknown>, write: () => Promise<void>, options: Partial<SubscribeRequest> = {}): Promise<{ answer: unknown; messages: unknown[] }> {
    const id = `probe-${++n}`;
    const { answer, messages } = await subscribe(socket, { id, path: '/todos', query, snapshot: true, ...options });
    await write();
    await settle(200);
    socket.emit('svc:unsubscribe', id);
    const strip = (m: LiveMessage): unknown => {
      const { sub: _sub, ...rest } = m as LiveMessage & { seq?: number };
      delete (rest as { seq?: number }).seq;
      return rest;
    };
    return { answer: (answer as { ok: boolean }).ok ? { ok: true } : answer, messages: messages.map(strip) };
  }

  /** Two guesses at a private value must be indistinguishable, for the snapshot and for events. */
  async function assertNoOracle(tag: string, right: Record<string, unknown>, wrong: Record<string, unknown>): Promise<void> {
    const made = (await rootRequest(rt.url, 'POST', '/todos', { title: tag, owner: tag, secret: 'hunter2', rank: 1 })).body as { id: string };
    const bump = (i: number) => async (): Promise<void> => void (await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { rank: i }));
    const a = await observe({ owner: tag, ...right }, bump(2));
    const b = await observe({ owner: tag, ...wrong }, bump(3));
    // The events differ by the rank written only.
    const normal = (r: { answer: unknown; messages: unknown[] }): string => JSON.stringify(r).replace(/"rank":\d/g, '"rank":_');
    expect(normal(a), `${tag}: ${JSON.stringify(right)} vs ${JSON.stringify(wrong)}`).toBe(normal(b));
  }

  const oracles: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ['equality', { secret: 'hunter2' }, { secret: 'nope' }],
    ['regex', { secret: { $regex: '^hun' } }, { secret: { $regex: '^xyz' } }],
    ['range', { secret: { $gt: 'h' } }, { secret: { $lt: 'h' } }],
    ['in', { secret: { $in: ['hunter2'] } }, { secret: { $in: ['nope'] } }],
    ['exists', { secret: { $exists: true } }, { secret: { $exists: false } }],
    ['ne', { secret: { $ne: 'nope' } }, { secret: { $ne: 'hunter2' } }],
    ['not', { secret: { $not: { $regex: '^xyz' } } }, { secret: { $not: { $regex: '^hun' } } }],
    ['or', { $or: [{ secret: 'hunter2' }, { title: 'never' }] }, { $or: [{ secret: 'nope' }, { title: 'never' }] }],
    ['and', { $and: [{ secret: 'hunter2' }] }, { $and: [{ secret: 'nope' }] }],
    ['nor', { $nor: [{ secret: 'nope' }] }, { $nor: [{ secret: 'hunter2' }] }],
    ['dotted', { 'secret.length': 7 }, { 'secret.length': 3 }],
    ['array-like $or', { $or: { 0: { secret: 'hunter2' } } }, { $or: { 0: { secret: 'nope' } } }],
    ['sort', { $sort: { secret: 1 } }, { $sort: { secret: -1 } }],
  ];
  for (const [tag, right, wrong] of oracles) {
    it(`a filter on a private property (${tag}) decides nothing`, async () => {
      await assertNoOracle(`oracle-${tag.replace(/\W/g, '')}`, right, wrong);
    });
  }

  // Issue 38 item 9: $fields naming a private property answered 400; it reveals nothing, so it
  // is answered as the same subscription without that name in $fields.
  it('$fields naming a private property is answered as without it: snapshot and events alike, no value', async () => {
    const tag = 'fields-private';
    const made = (await rootRequest(rt.url, 'POST', '/todos', { title: tag, owner: tag, secret: 'hunter2', rank: 1 })).body as { id: string };
    const bump = (i: number) => async (): Promise<void> => void (await rootRequest(rt.url, 'PUT', `/todos/${made.id}`, { title: `${tag}-${i}` }));
    const pairs: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ secret: 1, title: 1 }, { title: 1 }],
      [{ secret: 1 }, {}],
      [{ secret: 0, rank: 0 }, { rank: 0 }],
    ];
    let i = 0;
    for (const [asked, same] of pairs) {
      const a = await observe({ owner: tag, $fields: asked }, bump(++i));
      const b = await observe({ owner: tag, ...(Object.keys(same).length > 0 ? { $fields: same } : {}) }, bump(++i));
      expect(a.answer, JSON.stringify(asked)).toEqual({ ok: true });
      // The two differ by the title each one's write set only.
      const normal = (r: { messages: unknown[] }): string => JSON.stringify(r.messages).replace(/fields-private(?:-\d+)?/g, 'T');
      expect(normal(a), JSON.stringify(asked)).toBe(normal(b));
      expect(a.messages.length).toBeGreaterThan(0);
    }
    expect(raw.join('\n')).not.toContain('hunter2');
    // A sort on it stays refused.
    expect((await subscribe(socket, { id: 'fields-sort', path: '/todos', query: { $sort: { secret: 1 } } })).answer.ok).toBe(false);
  });

  it('a subscription answers alike whether the objects it names exist or not (no existence oracle)', async () => {
    const made = (await rootRequest(rt.url, 'POST', '/todos', { title: 'exists', owner: 'x' })).body as { id: string };
    const there = await subscribe(socket, { id: 'exists-1', path: '/todos', query: { id: made.id } });
    const absent = await subscribe(socket, { id: 'exists-2', path: '/todos', query: { id: 'ffffffffffffffff' } });
    expect(Object.keys(there.answer).sort()).toEqual(Object.keys(absent.answer).sort());
    expect(there.answer.ok && absent.answer.ok).toBe(true);
  });

  it('never sends a session id, a password or its hash, nor a private property, whatever is subscribed to', async () => {
    const victim = new HttpClient(rt.url);
    const victimId = await signUpAndLogin(victim, `victim-${kind.name}`);
    await rootRequest(rt.url, 'PUT', `/users/${victimId}`, { secret: 'victim-private', role: 'admin' });
    const users = await subscribe(socket, { id: 'all-users', path: '/users', query: {}, snapshot: true });
    expect(users.answer.ok).toBe(true);
    // The victim's writes: a password change (which ends the victim's other sessions) and a login.
    await victim.request('PUT', `/users/${victimId}`, { password: 'changed-pw', name: 'V' });
    await victim.request('POST', '/users/login', { username: `victim-${kind.name}`, password: 'changed-pw' });
    await until(() => users.messages.some((m) => m.type === 'update'));
    await settle(200);
    const everything = raw.join('\n');
    expect(everything).not.toContain(victim.sid);
    expect(everything).not.toContain(mallory.sid);
    expect(everything).not.toContain('victim-private');
    expect(everything).not.toContain('hunter2');
    expect(everything).not.toMatch(/"password"|"secret"|\$2[aby]\$/);
  });

  it('refuses what is not a subscription: odd ids, paths, query shapes', async () => {
    const answers = await Promise.all(
      [
        { id: '__proto__', path: '/todos', query: { __proto__: { polluted: true } } },
        { id: 'x'.repeat(65), path: '/todos' },
        { id: 'p1', path: '/todos/../users' },
        { id: 'p2', path: '/todos', query: { $where: 'sleep(1000)' } },
        { id: 'p3', path: '/todos', query: { title: { $function: 'x' } } },
        { id: 'p4', path: '/todos', since: -1 },
        { id: 'p5', path: '/todos', query: 'title=x' },
      ].map((request) => socket.timeout(5000).emitWithAck('svc:subscribe', request) as Promise<{ ok: boolean; error?: { status: number; message: string } }>),
    );
    expect(answers[0]?.ok).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    for (const answer of answers.slice(1)) {
      expect(answer.ok).toBe(false);
      expect(answer.error?.status).toBeGreaterThanOrEqual(400);
      expect(answer.error?.status).toBeLessThan(500);
      expect(answer.error?.message).not.toMatch(/\/work|node_modules|at .*\.ts/);
    }
  });
});
