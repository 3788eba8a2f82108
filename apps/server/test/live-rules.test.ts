import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { CollectionDef, LiveEvent, ResourceList, SvcClient as AnyClient, UserCollectionDef } from '@svc/client';
import { appStores, runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';
import { settle, until } from './helpers/wait.js';

/**
 * Live queries and emits under access rules (issue 24): the list rule limits what each subscriber
 * is told, property read rules take properties out per subscriber, a filter on a property the
 * subscriber may not read is refused as GET refuses it, and a change of the subscriber's own user
 * (its role) applies from the next event on.
 */
const APP: Record<string, string | object> = {
  'resources/users/config.json': { type: 'UserCollection', properties: { role: { type: 'string' } } },
  'resources/posts/config.json': {
    type: 'Collection',
    properties: {
      title: { type: 'string' },
      owner: { type: 'string', index: true },
      published: { type: 'boolean' },
      salary: { type: 'number', read: { '@me.role': 'hr' } },
      notes: { type: 'string', read: { owner: '@me.id' } },
      editor: { type: 'relation', collection: 'users', onDelete: 'setNull' },
    },
    rules: {
      list: { $or: [{ published: true }, { owner: '@me.id' }, { '@me.role': 'admin' }] },
      read: { $or: [{ published: true }, { owner: '@me.id' }, { '@me.role': 'admin' }] },
    },
  },
  'resources/posts/put.js': "emit('posts:changed', this);\n",
};

type Post = { id: string; title?: string; owner?: string; published?: boolean; salary?: number; notes?: string };
interface Types {
  resources: { posts: CollectionDef<Post>; users: UserCollectionDef<{ id: string; username: string; role?: string }> };
}
type SvcClient = AnyClient<Types>;
const resources: ResourceList = [
  { path: '/posts', kind: 'collection' },
  { path: '/users', kind: 'users' },
];

describe.each(appStores())('live queries and emits under access rules (%s store)', { concurrent: true }, (store) => {
  // The stores side by side (their apps are apart); each store's tests one at a time, in order.
  describe('one test at a time', { concurrent: false }, () => {
    let h: AppHandle;
    const clients: SvcClient[] = [];
    const ids: Record<string, string> = {};

    const root = (method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> => h.request(method, path, body, { 'svc-ssh-key': 'k' });
    const clientFor = async (username?: string): Promise<SvcClient> => {
      const c = createClient<Types>(h.url, { resources });
      clients.push(c);
      if (username) await c.users.login({ username, password: 'pw' });
      await new Promise<void>((resolve) => c.socketReady(resolve));
      return c;
    };
    const watch = (c: SvcClient, query: Record<string, unknown>): LiveEvent<Post>[] => {
      const events: LiveEvent<Post>[] = [];
      c.posts.subscribe(query, (e) => events.push(e));
      return events;
    };
    const shape = (events: LiveEvent<Post>[]): string[] =>
      events.map((e) => (e.type === 'snapshot' ? `snapshot:${e.objects.map((o) => o.title).join(',')}` : 'object' in e ? `${e.type}:${e.object.title}` : 'id' in e ? `${e.type}` : e.type));

    beforeAll(async () => {
      h = await runApp(APP, { store });
      for (const [username, role] of [['ann', 'staff'], ['bo', 'staff'], ['hr', 'hr']]) {
        ids[username as string] = ((await root('POST', '/users', { username, password: 'pw', role })).body as { id: string }).id;
      }
    });
    afterAll(async () => {
      for (const c of clients) c.close();
      await h?.close();
    });

    it('the list rule decides what each subscriber is told: enter when a post is published, leave when it is not', async () => {
      const [ann, bo] = [await clientFor('ann'), await clientFor('bo')];
      const annEvents = watch(ann, {});
      const boEvents = watch(bo, {});
      await until(() => annEvents.length === 1 && boEvents.length === 1);
      const draft = (await root('POST', '/posts', { title: 'draft', owner: ids.ann, published: false })).body as Post;
      await until(() => annEvents.length === 2);
      await root('PUT', `/posts/${draft.id}`, { published: true });
      await until(() => annEvents.length === 3 && boEvents.length === 2);
      await root('PUT', `/posts/${draft.id}`, { published: false });
      await until(() => annEvents.length === 4 && boEvents.length === 3);
      await root('DELETE', `/posts/${draft.id}`);
      await until(() => annEvents.length === 5);
      await settle();
      expect(shape(annEvents)).toEqual(['snapshot:', 'create:draft', 'update:draft', 'update:draft', 'delete']);
      // Bo never saw the draft while it was one: only its time as a published post, and no delete.
      expect(shape(boEvents)).toEqual(['snapshot:', 'enter:draft', 'leave']);
    });

    it('property read rules take properties out per subscriber; filtering on them is refused as GET refuses it', async () => {
      const [ann, bo, hr] = [await clientFor('ann'), await clientFor('bo'), await clientFor('hr')];
      const query = { published: true };
      const [annEvents, boEvents, hrEvents] = [watch(ann, query), watch(bo, query), watch(hr, query)];
      await until(() => [annEvents, boEvents, hrEvents].every((e) => e.length === 1));
      await root('POST', '/posts', { title: 'pay', owner: ids.ann, published: true, salary: 100, notes: 'ann only' });
      await until(() => [annEvents, boEvents, hrEvents].every((e) => e.length === 2));
      const objectOf = (events: LiveEvent<Post>[]): Post => (events[1] as { object: Post }).object;
      expect(objectOf(annEvents)).toMatchObject({ title: 'pay', notes: 'ann only' });
      expect(objectOf(annEvents)).not.toHaveProperty('salary');
      expect(objectOf(boEvents)).not.toHaveProperty('salary');
      expect(objectOf(boEvents)).not.toHaveProperty('notes');
      expect(objectOf(hrEvents)).toMatchObject({ salary: 100 });
      expect(objectOf(hrEvents)).not.toHaveProperty('notes');
      // The same refusal as GET, for the same caller.
      const refused = watch(bo, { salary: { $gt: 50 } });
      await until(() => refused.length === 1);
      const get = await h.client()('GET', `/posts?${encodeURIComponent(JSON.stringify({ salary: { $gt: 50 } }))}`);
      expect(refused[0]).toMatchObject({ type: 'error', error: { status: 400 } });
      expect(get.status).toBe(400);
      const allowed = watch(hr, { salary: { $gt: 50 } });
      await until(() => allowed.length === 1);
      expect(allowed[0]).toMatchObject({ type: 'snapshot' });
    });

    it('refuses what GET takes but a live query cannot follow: $expand, $total, a filter across a relation', async () => {
      const ann = await clientFor('ann');
      for (const query of [{ $expand: 'editor' }, { $total: true }, { 'editor.username': 'bo' }]) {
        const events = watch(ann, query);
        await until(() => events.length === 1);
        expect(events[0], JSON.stringify(query)).toMatchObject({ type: 'error', error: { status: 400 } });
      }
    });

    it("a change of the subscriber's own user applies from the next event on (a role granted, then taken away)", async () => {
      const cyId = ((await root('POST', '/users', { username: 'cy', password: 'pw', role: 'staff' })).body as { id: string }).id;
      const cy = await clientFor('cy');
      const events = watch(cy, { owner: ids.bo });
      await until(() => events.length === 1);
      const hidden = (await root('POST', '/posts', { title: 'bo draft', owner: ids.bo, published: false })).body as Post;
      // Made admin: a fresh snapshot with what an admin sees, then its events.
      await root('PUT', `/users/${cyId}`, { role: 'admin' });
      await until(() => events.length === 2);
      await root('PUT', `/posts/${hidden.id}`, { title: 'bo draft 2' });
      await until(() => events.length === 3);
      // No longer admin: a fresh snapshot without it, and nothing of it after.
      await root('PUT', `/users/${cyId}`, { role: 'staff' });
      await until(() => events.length === 4);
      await root('PUT', `/posts/${hidden.id}`, { title: 'bo draft 3' });
      await settle();
      expect(shape(events)).toEqual(['snapshot:', 'snapshot:bo draft', 'update:bo draft 2', 'snapshot:']);
    });

    it("a script's emit of a post reaches only sockets whose users may read it, without properties they may not read", async () => {
      const [ann, bo, hr] = [await clientFor('ann'), await clientFor('bo'), await clientFor('hr')];
      const anonymous = await clientFor();
      const got = new Map<SvcClient, Post[]>();
      for (const c of [ann, bo, hr, anonymous]) {
        got.set(c, []);
        c.on('posts:changed', (d) => got.get(c)!.push(d as Post));
      }
      const draft = (await root('POST', '/posts', { title: 'e', owner: ids.ann, published: false, salary: 7, notes: 'n' })).body as Post;
      await root('PUT', `/posts/${draft.id}`, { title: 'e2' });
      await until(() => got.get(ann)!.length === 1);
      await settle();
      expect(got.get(ann)![0]).toMatchObject({ title: 'e2', notes: 'n' });
      expect(got.get(ann)![0]).not.toHaveProperty('salary');
      for (const c of [bo, hr, anonymous]) expect(got.get(c)).toEqual([]);
      await root('PUT', `/posts/${draft.id}`, { published: true });
      await until(() => [ann, bo, hr, anonymous].every((c) => got.get(c)!.length >= 1) && got.get(ann)!.length === 2);
      await settle();
      expect(got.get(hr)![0]).toMatchObject({ salary: 7 });
      expect(got.get(hr)![0]).not.toHaveProperty('notes');
      for (const c of [bo, anonymous]) {
        expect(got.get(c)![0]).not.toHaveProperty('salary');
        expect(got.get(c)![0]).not.toHaveProperty('notes');
      }
    });
  });
});
