import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { CollectionDef, LiveEvent, ResourceList, SvcClient as AnyClient, UserCollectionDef } from '@svc/client';
import { appStores, memoryLogger, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { settle, until } from './helpers/wait.js';

/**
 * Live queries and emits of objects through a real app: private properties, On Get (which hides
 * a property from all but the owner and cancels archived objects for everyone) and event scripts
 * that emit their own objects. Each subscriber and each recipient sees what its own GET would.
 */
const APP: Record<string, string | object> = {
  'resources/users/config.json': { type: 'UserCollection', properties: {} },
  'resources/notes/config.json': {
    type: 'Collection',
    properties: {
      text: { type: 'string' },
      owner: { type: 'string' },
      archived: { type: 'boolean' },
      secret: { type: 'string', private: true },
      note: { type: 'string' },
    },
  },
  'resources/notes/get.js': "if (this.archived) cancel('archived', 404);\nif (!me || me.id !== this.owner) hide('note');\n",
  'resources/notes/post.js': "emit('notes:created', this);\nemit('notes:plain', { text: this.text, secret: 'script data is trusted' });\n",
  'resources/notes/put.js': "emit('users', { id: this.owner }, 'notes:yours', this);\n",
};

type Note = { id: string; text?: string; owner?: string; archived?: boolean; secret?: string; note?: string };
interface Types {
  resources: { notes: CollectionDef<Note>; users: UserCollectionDef<{ id: string; username: string }> };
}
type SvcClient = AnyClient<Types>;
const resources: ResourceList = [
  { path: '/notes', kind: 'collection' },
  { path: '/users', kind: 'users' },
];
type Obj = Record<string, unknown>;

describe.each(appStores())('live queries and emits of objects in an app (%s store)', (store) => {
  let h: AppHandle;
  const clients: SvcClient[] = [];
  let ann: SvcClient;
  let bo: SvcClient;
  let annId: string;
  const logger = memoryLogger();

  const root = (method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> => h.request(method, path, body, { 'svc-ssh-key': 'k' });
  const clientFor = async (username?: string): Promise<SvcClient> => {
    const c = createClient<Types>(h.url, { resources });
    clients.push(c);
    if (username) await c.users.login({ username, password: 'pw' });
    await new Promise<void>((resolve) => c.socketReady(resolve));
    return c;
  };

  beforeAll(async () => {
    h = await runApp(APP, { store, logger });
    annId = ((await root('POST', '/users', { username: 'ann', password: 'pw' })).body as { id: string }).id;
    await root('POST', '/users', { username: 'bo', password: 'pw' });
    ann = await clientFor('ann');
    bo = await clientFor('bo');
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await h?.close();
  });

  it('each subscriber gets what its own GET shows: no private property, On Get per subscriber, leave when On Get starts hiding', async () => {
    const annEvents: LiveEvent<Note>[] = [];
    const boEvents: LiveEvent<Note>[] = [];
    ann.notes.subscribe({ owner: annId }, (e) => annEvents.push(e));
    bo.notes.subscribe({ owner: annId }, (e) => boEvents.push(e));
    await until(() => annEvents.length === 1 && boEvents.length === 1);
    const made = (await root('POST', '/notes', { text: 'hello', owner: annId, secret: 's3cret', note: 'for ann' })).body as Note;
    // The app's first On Get run (script processes start cold on a loaded machine).
    await until(() => annEvents.length === 2 && boEvents.length === 2, 30_000).catch((e: unknown) => {
      console.log('DBG', JSON.stringify(annEvents), JSON.stringify(boEvents));
      throw e;
    });
    const forAnn = annEvents[1] as { type: string; object: Obj };
    const forBo = boEvents[1] as { type: string; object: Obj };
    expect(forAnn).toMatchObject({ type: 'create', object: { text: 'hello', note: 'for ann' } });
    expect(forAnn.object).not.toHaveProperty('secret');
    expect(forBo).toMatchObject({ type: 'create', object: { text: 'hello' } });
    expect(forBo.object).not.toHaveProperty('note');
    expect(forBo.object).not.toHaveProperty('secret');
    // Exactly what their GETs answer.
    expect(forAnn.object).toEqual(await ann.notes.get(made.id));
    expect(forBo.object).toEqual(await bo.notes.get(made.id));
    // On Get now cancels it (archived): it leaves, for both; un-archived, it enters again.
    await root('PUT', `/notes/${made.id}`, { archived: true });
    await until(() => annEvents.length === 3 && boEvents.length === 3);
    expect(annEvents[2]).toEqual({ type: 'leave', id: made.id });
    expect(boEvents[2]).toEqual({ type: 'leave', id: made.id });
    await root('PUT', `/notes/${made.id}`, { archived: false });
    await until(() => annEvents.length === 4 && boEvents.length === 4);
    expect(annEvents[3]).toMatchObject({ type: 'update', object: { id: made.id, note: 'for ann' } });
    // A change a subscriber may never see is never told to it.
    const hidden = (await root('POST', '/notes', { text: 'always archived', owner: annId, archived: true })).body as Note;
    await root('PUT', `/notes/${hidden.id}`, { text: 'still archived' });
    await root('DELETE', `/notes/${hidden.id}`);
    await settle();
    expect(annEvents).toHaveLength(4);
    expect(boEvents).toHaveLength(4);
  });

  it("a script's emit of its own collection's object reaches each socket as its GET would show it (private properties and On Get), other data as it is", async () => {
    const anonymous = await clientFor();
    const got = new Map<SvcClient, Obj[]>();
    const plain: unknown[] = [];
    for (const c of [ann, bo, anonymous]) {
      got.set(c, []);
      c.on('notes:created', (d) => got.get(c)!.push(d as Obj));
    }
    anonymous.on('notes:plain', (d) => plain.push(d));
    await root('POST', '/notes', { text: 'emitted', owner: annId, secret: 'never on a socket', note: 'ann only' });
    await until(() => [...got.values()].every((g) => g.length === 1) && plain.length === 1);
    expect(got.get(ann)![0]).toMatchObject({ text: 'emitted', note: 'ann only' });
    for (const c of [ann, bo, anonymous]) expect(got.get(c)![0]).not.toHaveProperty('secret');
    expect(got.get(bo)![0]).not.toHaveProperty('note');
    expect(got.get(anonymous)![0]).not.toHaveProperty('note');
    // Data that is not an object of the collection is the script's own: sent as it is (documented).
    expect(plain[0]).toEqual({ text: 'emitted', secret: 'script data is trusted' });
    // An object On Get cancels reaches nobody.
    await root('POST', '/notes', { text: 'archived on arrival', owner: annId, archived: true });
    await settle();
    for (const c of [ann, bo, anonymous]) expect(got.get(c)).toHaveLength(1);
  });

  it('a user-targeted emit of an object is shown to that user as their GET would', async () => {
    const yours: Obj[] = [];
    const notYours: Obj[] = [];
    ann.on('notes:yours', (d) => yours.push(d as Obj));
    bo.on('notes:yours', (d) => notYours.push(d as Obj));
    const made = (await root('POST', '/notes', { text: 'to change', owner: annId, secret: 'x', note: 'n' })).body as Note;
    await root('PUT', `/notes/${made.id}`, { text: 'changed' });
    await until(() => yours.length === 1);
    await settle();
    expect(yours[0]).toMatchObject({ id: made.id, text: 'changed', note: 'n' });
    expect(yours[0]).not.toHaveProperty('secret');
    expect(notYours).toHaveLength(0);
  });
});
