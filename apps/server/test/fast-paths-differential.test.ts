import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Agent, request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ANSWER_PLANS, createEmbeddedStore, createEngineStore, createMongoStore } from '@svc/core';
import type { Logger, Store } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { appStores, writeApp } from './helpers/app.js';
import { COLLECTIONS, differentialApp, idLabels, pairwiseSubset, requestTable, valuePairs } from './helpers/readTable.js';
import type { Caller, CollectionName, Ids, TableRequest } from './helpers/readTable.js';

// Issue 39: every shortcut of the read side (answers from kept texts, kept answers, answers at
// once, static script plans) must answer exactly what the plain path answers. Two servers share
// one store: one with the shortcuts (the default), one with app.json `fastPaths: false`. A
// generated table of requests (helpers/readTable.ts: every caller, rule, hidden property, On Get,
// query option) goes to both, the fast one twice (its kept answers are made, then given), and
// every answer must have the same status, headers and bytes. Writes between the rounds change
// objects, related objects, owners and users, so that kept answers meet changed data.
//
// On the MongoDB store the rounds send a part of the table (readTable.ts pairwiseSubset): each
// request (collection, object, option) once, from one caller in turn, plus a row for any pair of
// values still missing, so that every pair of caller, collection (its rules, hidden and private
// properties, On Get, BeforeRequest), object and option (each query option, $expand level, count,
// odd method, body, header) the table has is sent at least once: 752 of its 4,914 rows. That is
// enough there because that store has none of the text reads every shortcut and kept answer needs
// (checked below): its fast server differs from its plain one only by the static plans of On Get
// scripts (scripts.ts staticPlans), which depend on the collection's script and the caller, not
// on the store, and which both embedded stores meet on the whole table; what MongoDB adds is its
// own queries, which depend on the collection and the option, and every such pair is sent. Both
// embedded stores also check that the rows of the part met every plan (ANSWER_PLANS) in their
// whole-table round, so the part would reach each shortcut on a store that had them.

/** Headers that differ between two answers by nature: the time, the request id, the connection. */
const UNCOMPARED = new Set(['date', 'x-request-id', 'connection', 'keep-alive']);

interface Answer {
  status: number;
  headers: string;
  body: string;
  /** X-Request-Id: the access line of this answer has it. */
  id: string;
}

/** A raw HTTP client: the bytes as sent, every header, any method with any body. */
function send(base: string, agent: Agent, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, agent, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const kept = Object.entries(res.headers)
          .filter(([name]) => !UNCOMPARED.has(name))
          .map(([name, value]) => `${name}: ${name === 'set-cookie' ? 'sid' : String(value)}`)
          .sort();
        resolve({ status: res.statusCode ?? 0, headers: kept.join('\n'), body: Buffer.concat(chunks).toString('latin1'), id: String(res.headers['x-request-id']) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The sid a response set, if any. */
function sidOf(setCookie: string[] | undefined): string | undefined {
  const cookie = setCookie?.find((c) => c.startsWith('sid='));
  return cookie === undefined ? undefined : cookie.slice(4, cookie.indexOf(';'));
}

async function json(base: string, method: string, path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown>; sid?: string }> {
  const res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  const sid = sidOf(res.headers.getSetCookie());
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), ...(sid ? { sid } : {}) };
}

const ROOT = { 'svc-ssh-key': 'development' };

/** A logger that keeps nothing but the plans of the answers (access lines): which ways answered, and by request id. */
function planLogger(plans: Map<string, number>, byId?: Map<string, string | undefined>): Logger {
  const none = (): void => undefined;
  return {
    info: none,
    warn: none,
    error: none,
    access: (entry) => {
      byId?.set(entry.id, entry.plan);
      if (entry.plan !== undefined) plans.set(entry.plan, (plans.get(entry.plan) ?? 0) + 1);
    },
  };
}

// Both embedded stores: the engine (SQLite, the default) and the files store (app.json embeddedStore.engine "files").
const STORES = appStores().flatMap((kind) => (kind === 'embedded' ? ['embedded engine', 'embedded files'] : [kind]));

describe.each(STORES)('the shortcuts answer what the plain path answers (%s store)', (storeKind) => {
  let dir: string;
  let store: Store;
  let fast: RunningApp;
  let plain: RunningApp;
  let mongoDb: string | undefined;
  const ids: Ids = {};
  // The new visitor ('new') sends no cookie: its headers stay empty.
  const cookies: Record<Caller, Record<string, string>> = { anon: {}, new: {}, ann: {}, bob: {}, root: {}, internal: {} };
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const fastPlans = new Map<string, number>();
  const plainPlans = new Map<string, number>();
  // The fast answers' plans by request id, and the request ids of each row sent to the fast server.
  const planOf = new Map<string, string | undefined>();
  const rowIds = new Map<string, string[]>();
  const rowKey = (row: TableRequest): string => JSON.stringify([row.caller, row.method, row.path, row.body, row.headers]);
  const partOnly = storeKind === 'mongodb';

  const asRoot = (method: string, path: string, body?: unknown) => json(fast.url, method, path, body, ROOT);

  beforeAll(async () => {
    dir = await writeApp(differentialApp());
    const mongo = process.env.SVC_TEST_MONGODB_URL;
    if (storeKind === 'mongodb' && mongo) {
      mongoDb = `svc_diff_${randomBytes(5).toString('hex')}`;
      store = await createMongoStore({ url: `${mongo.replace(/\/$/, '')}/${mongoDb}` });
    } else {
      store = storeKind === 'embedded files' ? await createEmbeddedStore({ dir: join(dir, 'data') }) : await createEngineStore({ dir: join(dir, 'data') });
    }
    const typeEvent = (await import('@svc/type-event')).default;
    const common = { appDir: dir, port: 0, host: '127.0.0.1', env: 'development' as const, store, dashboard: false, resourceTypes: [typeEvent] };
    fast = await startApp({ ...common, logger: planLogger(fastPlans, planOf) });
    plain = await startApp({ ...common, logger: planLogger(plainPlans), fastPaths: false });
    await seed();
  }, 120_000);

  afterAll(async () => {
    agent.destroy();
    await fast?.close();
    await plain?.close();
    await store?.close();
    if (mongoDb && process.env.SVC_TEST_MONGODB_URL) {
      const { MongoClient } = await import('mongodb');
      const c = new MongoClient(process.env.SVC_TEST_MONGODB_URL);
      await c.db(mongoDb).dropDatabase().catch(() => undefined);
      await c.close();
    }
    await rm(dir, { recursive: true, force: true });
  });

  /** Users, projects and, in every other collection, objects of ann, of bob, of nobody, and one a script treats apart. */
  async function seed(): Promise<void> {
    for (const [name, role] of [['ann', 'member'], ['bob', 'blocked']] as const) {
      const made = await asRoot('POST', '/users', { username: name, password: `pw-${name}-1`, name: name.toUpperCase(), role, diary: `${name}'s diary` });
      expect(made.status).toBe(200);
      ids[name] = made.body.id as string;
      const login = await json(fast.url, 'POST', '/users/login', { username: name, password: `pw-${name}-1` }, {});
      expect(login.status).toBe(200);
      cookies[name] = { cookie: `sid=${login.sid as string}` };
    }
    const member = await asRoot('POST', '/members', { username: 'member', password: 'pw-member-1', name: 'M' });
    expect(member.status).toBe(200);
    ids.member = member.body.id as string;
    // An anonymous visitor's signed id: what the answers at once need.
    const first = await fetch(`${fast.url}/todos`);
    cookies.anon = { cookie: `sid=${sidOf(first.headers.getSetCookie()) as string}` };
    cookies.internal = cookies.anon;
    cookies.root = { ...cookies.anon, ...ROOT };
    for (const [label, name, lead] of [['alpha', 'alpha', 'ann'], ['beta', 'beta ☃', 'bob']] as const) {
      const made = await asRoot('POST', '/projects', { name, owner: ids[lead], lead: ids[lead] });
      expect(made.status).toBe(200);
      ids[label] = made.body.id as string;
    }
    for (const [label, text] of [['red', 'red "label"'], ['blue', 'blue']] as const) {
      const made = await asRoot('POST', '/labels', { text });
      expect(made.status).toBe(200);
      ids[label] = made.body.id as string;
    }
    for (const name of Object.keys(COLLECTIONS) as CollectionName[]) {
      if (name === 'users' || name === 'members' || name === 'projects' || name === 'labels') continue;
      const objects: [string | undefined, Record<string, unknown>][] = [
        [`${name}:ann`, { title: 'ann one', n: 1, done: false, owner: ids.ann, secret: 'ann-secret', tags: ['a'], project: ids.alpha, label: ids.red, marks: [ids.red, ids.blue], score: 5, note: 'n1' }],
        [`${name}:bob`, { title: 'bob "two"', n: 2, done: true, owner: ids.bob, secret: 'bob-secret', project: ids.beta, label: ids.red, marks: [ids.blue], score: 7 }],
        // No project but a label: a list whose objects have one relation's value and not another's.
        [`${name}:none`, { title: 'naïve \u2028 line', n: 3, done: false, tags: [], label: ids.blue, marks: [] }],
        [`${name}:big`, { title: 'big', n: 5, done: false, owner: ids.ann, project: ids.alpha, tags: ['x', { y: null }], marks: [ids.red] }],
        [undefined, { title: 'zero', n: 0, owner: ids.bob, project: ids.beta, label: ids.blue }],
        [undefined, { n: 4, done: true, owner: ids.ann }],
      ];
      for (const [label, object] of objects) {
        const made = await asRoot('POST', `/${name}`, object);
        expect(made.status, `${name} ${JSON.stringify(made.body)}`).toBe(200);
        if (label !== undefined) ids[label] = made.body.id as string;
      }
    }
  }

  /** Sends a row of the table to both servers (the fast one twice) and says how they differ, if they do. */
  async function compare(row: TableRequest): Promise<string | undefined> {
    const headers = row.headers === undefined ? cookies[row.caller] : { ...cookies[row.caller], ...row.headers };
    const once = await send(fast.url, agent, row.method, row.path, headers, row.body);
    const twice = await send(fast.url, agent, row.method, row.path, headers, row.body);
    const expected = await send(plain.url, agent, row.method, row.path, headers, row.body);
    rowIds.set(rowKey(row), [once.id, twice.id]);
    for (const [which, got] of [['first', once], ['second', twice]] as const) {
      if (got.status !== expected.status || got.headers !== expected.headers || got.body !== expected.body) {
        return `${row.caller} ${row.method} ${decodeURIComponent(row.path)}${row.body ? ` (body ${row.body.length} bytes)` : ''}${row.headers ? ` (${JSON.stringify(row.headers)})` : ''}: ${which} fast answer\n  ${got.status} ${got.headers.replaceAll('\n', '; ')}\n  ${got.body.slice(0, 600)}\nplain answer\n  ${expected.status} ${expected.headers.replaceAll('\n', '; ')}\n  ${expected.body.slice(0, 600)}`;
      }
    }
    return undefined;
  }

  async function round(full = true): Promise<string[]> {
    const whole = requestTable(ids, full);
    const table = partOnly ? pairwiseSubset(whole, ids) : whole;
    expect(valuePairs(table, ids)).toEqual(valuePairs(whole, ids));
    const differences: string[] = [];
    // A few at a time: kept answers are per server, shared by every caller.
    const width = 4;
    for (let i = 0; i < table.length; i += width) {
      const found = await Promise.all(table.slice(i, i + width).map(compare));
      for (const f of found) if (f !== undefined) differences.push(f);
      if (differences.length >= 5) break;
    }
    return differences;
  }

  it('answers the table alike', async () => {
    expect((await round()).join('\n\n')).toBe('');
    // The table meets every plan (the shortcuts need the embedded store's texts), and with the
    // shortcuts off only the plain path answers.
    expect([...fastPlans.keys()].sort()).toEqual(storeKind !== 'mongodb' ? [...ANSWER_PLANS].sort() : ['objects']);
    expect([...plainPlans.keys()]).toEqual(['objects']);
    if (partOnly) {
      // No text read on this store: no shortcut, no kept answer can answer (CollectionReads.textReads).
      const reads = store.collection('todos');
      expect([reads.findOneJsonNow, reads.findOneWithJsonNow, reads.findOneJson, reads.findJson, reads.findTexts, reads.findWithJson, reads.findTextsOfIdsNow]).toEqual(Array(7).fill(undefined));
      return;
    }
    // The rows MongoDB sends met every plan here too (their access lines are written once their answers closed).
    const part = pairwiseSubset(requestTable(ids), ids);
    const sent = part.flatMap((row) => rowIds.get(rowKey(row)) ?? []);
    expect(sent).toHaveLength(part.length * 2);
    await vi.waitFor(() => expect(sent.filter((id) => !planOf.has(id))).toEqual([]), { timeout: 30_000 });
    const partPlans = new Set(sent.map((id) => planOf.get(id)).filter((plan) => plan !== undefined));
    expect([...partPlans].sort()).toEqual([...ANSWER_PLANS].sort());
  }, 600_000);

  it('answers it alike after objects, related objects and users changed', async () => {
    // Objects of the list and of each object path, a related object, a new object, an owner.
    for (const name of Object.keys(COLLECTIONS) as CollectionName[]) {
      if (name === 'users' || name === 'members' || name === 'projects' || name === 'labels') continue;
      expect((await asRoot('PUT', `/${name}/${ids[`${name}:ann`]}`, { title: 'ann one, renamed', n: 6 })).status).toBe(200);
      expect((await asRoot('PUT', `/${name}/${ids[`${name}:big`]}`, { owner: ids.bob, done: true })).status).toBe(200);
      expect((await asRoot('POST', `/${name}`, { title: 'new', n: 1, owner: ids.bob, project: ids.alpha })).status).toBe(200);
    }
    expect((await asRoot('PUT', `/projects/${ids.alpha}`, { name: 'alpha, renamed' })).status).toBe(200);
    // A related object changing hands: what its owner rule lets each caller see of it changes.
    expect((await asRoot('PUT', `/projects/${ids.beta}`, { owner: ids.ann })).status).toBe(200);
    expect((await asRoot('PUT', `/labels/${ids.red}`, { text: 'red, renamed' })).status).toBe(200);
    expect((await asRoot('PUT', `/users/${ids.bob}`, { role: 'member', name: 'Robert' })).status).toBe(200);
    expect((await round()).join('\n\n')).toBe('');
    // Deletes: an object (setNull upkeep of none), a related object (its referrers set to null).
    for (const name of Object.keys(COLLECTIONS) as CollectionName[]) {
      if (name === 'users' || name === 'members' || name === 'projects' || name === 'labels') continue;
      expect((await asRoot('DELETE', `/${name}/${ids[`${name}:none`]}`)).status).toBe(204);
      expect(idLabels(name)).toContain(`${name}:none`);
    }
    expect((await asRoot('DELETE', `/projects/${ids.beta}`)).status).toBe(204);
    expect((await round(false)).join('\n\n')).toBe('');
    // Related objects alone, right after that round: the lists it read stay kept (no write of
    // theirs), with the `$expand` answers kept beside them; what those expand changed.
    expect((await asRoot('PUT', `/projects/${ids.alpha}`, { name: 'alpha, renamed again' })).status).toBe(200);
    expect((await asRoot('PUT', `/labels/${ids.red}`, { text: 'red, renamed again' })).status).toBe(200);
    expect((await asRoot('PUT', `/users/${ids.ann}`, { name: 'Ann again' })).status).toBe(200);
    expect((await round(false)).join('\n\n')).toBe('');
    // A related object changing hands alone: what its owner rule lets each caller see of it.
    expect((await asRoot('PUT', `/projects/${ids.alpha}`, { owner: ids.bob })).status).toBe(200);
    expect((await round(false)).join('\n\n')).toBe('');
  }, 900_000);
});
