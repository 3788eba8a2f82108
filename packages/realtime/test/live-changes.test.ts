import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'socket.io-client';
import { Collection, UserCollection } from '@svc/core';
import type { Store } from '@svc/core';
import type { LiveMessage } from '@svc/realtime';
import { HttpClient, serveWithRealtime, settle, signUpAndLogin, until } from './helpers.js';
import type { RtServer } from './helpers.js';
import { LIVE_STORES, rootRequest, subscribe } from './liveHelpers.js';
import type { LiveStore } from './liveHelpers.js';

// Writes that do not come through a collection's own requests still reach its live queries, each
// through the subscriber's read path: a relation's onDelete (cascade removes, setNull updates) and
// a change told in bulk (resync). Tasks and notes are readable by their owner only.

const OWNER_ONLY = { list: { owner: '@me.id' }, read: { owner: '@me.id' } };

function startRelationsServer(store: Store): Promise<RtServer> {
  const resources = [
    new UserCollection({ path: '/users', properties: { name: { type: 'string' } }, store: store.collection('users'), passwordCost: 4 }),
    new Collection({ path: '/projects', properties: { name: { type: 'string' } }, store: store.collection('projects') }),
    new Collection({
      path: '/tasks',
      properties: { title: { type: 'string' }, owner: { type: 'string' }, secret: { type: 'string', private: true }, project: { type: 'relation', collection: '/projects', onDelete: 'cascade' } },
      store: store.collection('tasks'),
      rules: OWNER_ONLY,
    }),
    new Collection({
      path: '/notes',
      properties: { title: { type: 'string' }, owner: { type: 'string' }, secret: { type: 'string', private: true }, project: { type: 'relation', collection: '/projects', onDelete: 'setNull' } },
      store: store.collection('notes'),
      rules: OWNER_ONLY,
    }),
  ];
  return serveWithRealtime(store, resources);
}

describe.each(LIVE_STORES)('writes outside a collection’s own requests reach its live queries ($name store)', (kind) => {
  let store: LiveStore;
  let app: RtServer;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    store = await kind.make();
    app = await startRelationsServer(store.store);
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await app?.close();
    for (const name of ['projects', 'tasks', 'notes']) await store?.store.collection(name).remove({});
    await store?.dispose();
  });

  async function user(name: string): Promise<{ socket: Socket; id: string }> {
    const client = new HttpClient(app.url);
    const id = await signUpAndLogin(client, `${name}-${kind.name}`);
    const socket = await client.socket();
    sockets.push(socket);
    return { socket, id };
  }
  const idOf = (body: unknown): string => (body as { id: string }).id;

  it('a cascade tells each subscriber the deletes of what it could see; setNull tells the updates, as GET shows them', async () => {
    const ann = await user('ann');
    const bo = await user('bo');
    const project = idOf((await rootRequest(app.url, 'POST', '/projects', { name: 'p' })).body);
    const annTask = idOf((await rootRequest(app.url, 'POST', '/tasks', { title: 'ann-task', owner: ann.id, project, secret: 's1' })).body);
    const boTask = idOf((await rootRequest(app.url, 'POST', '/tasks', { title: 'bo-task', owner: bo.id, project, secret: 's2' })).body);
    const annNote = idOf((await rootRequest(app.url, 'POST', '/notes', { title: 'ann-note', owner: ann.id, project, secret: 's3' })).body);
    const boNote = idOf((await rootRequest(app.url, 'POST', '/notes', { title: 'bo-note', owner: bo.id, project, secret: 's4' })).body);

    // Each subscribes to everything: the rules keep it to their own.
    const annTasks = await subscribe(ann.socket, { id: 't', path: '/tasks', snapshot: true });
    const annNotes = await subscribe(ann.socket, { id: 'n', path: '/notes', snapshot: true });
    const boTasks = await subscribe(bo.socket, { id: 't', path: '/tasks', snapshot: true });
    const boNotes = await subscribe(bo.socket, { id: 'n', path: '/notes', snapshot: true });
    await until(() => [annTasks, annNotes, boTasks, boNotes].every((s) => s.messages.length === 1));

    expect((await rootRequest(app.url, 'DELETE', `/projects/${project}`)).status).toBe(204);
    await until(() => [annTasks, annNotes, boTasks, boNotes].every((s) => s.messages.length === 2));
    await settle();

    const shape = (m: LiveMessage | undefined): unknown => (m === undefined ? undefined : m.type === 'delete' || m.type === 'leave' ? { type: m.type, id: m.id } : m.type === 'update' || m.type === 'enter' ? { type: m.type, object: m.object } : m.type);
    expect(shape(annTasks.messages[1])).toEqual({ type: 'delete', id: annTask });
    expect(shape(boTasks.messages[1])).toEqual({ type: 'delete', id: boTask });
    expect(shape(annNotes.messages[1])).toEqual({ type: 'update', object: { id: annNote, title: 'ann-note', owner: ann.id, project: null } });
    expect(shape(boNotes.messages[1])).toEqual({ type: 'update', object: { id: boNote, title: 'bo-note', owner: bo.id, project: null } });
    // Nothing of the other user's objects, nor any private property, reached either socket.
    const annSaw = JSON.stringify([annTasks.messages, annNotes.messages]);
    const boSaw = JSON.stringify([boTasks.messages, boNotes.messages]);
    for (const hidden of [boTask, boNote, 'bo-', 's1', 's2', 's3', 's4']) expect(annSaw).not.toContain(hidden);
    for (const hidden of [annTask, annNote, 'ann-', 's1', 's2', 's3', 's4']) expect(boSaw).not.toContain(hidden);
  });

  it('a resync told by the collection (a restore) gives each subscriber a fresh snapshot of its own query, nothing else', async () => {
    const cy = await user('cy');
    const dee = await user('dee');
    await rootRequest(app.url, 'POST', '/tasks', { title: 'cy-1', owner: cy.id });
    const cyTasks = await subscribe(cy.socket, { id: 'r', path: '/tasks', snapshot: true });
    const deeTasks = await subscribe(dee.socket, { id: 'r', path: '/tasks', snapshot: true });
    await until(() => cyTasks.messages.length === 1 && deeTasks.messages.length === 1);
    // Changed behind the collection's back (as a restore writes the store), then told in bulk.
    await store.store.collection('tasks').insert({ id: 'restored-1', title: 'cy-restored', owner: cy.id });
    const tasks = app.server.resources.find((r) => r.path === '/tasks') as Collection;
    await tasks.tellResync();
    await until(() => cyTasks.messages.length === 2 && deeTasks.messages.length === 2);
    await settle();
    const titles = (m: LiveMessage | undefined): unknown => (m?.type === 'snapshot' ? m.objects.map((o) => o.title).sort() : m?.type);
    expect(titles(cyTasks.messages[1])).toEqual(['cy-1', 'cy-restored']);
    expect(titles(deeTasks.messages[1])).toEqual([]);
  });
});
