import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, memoryStorage } from '@svc/client';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 42: a conditional write (If-Match) whose compare-and-set loses a race runs its event
// scripts once, never again for the same request: scripts have effects (svc.* calls, emit,
// outbound fetch) that a rerun would repeat. Here On Put and On Delete post to /log, and
// that post moves the object's revision (a property the caller cannot read) before the write
// lands: the race is lost every time, deterministically.

const ROOT = { 'svc-ssh-key': 'dev' };

const files = {
  // A loaded machine can starve a script process for seconds: the default limit would kill it.
  'app.json': { scripts: { timeoutMs: 20_000 } },
  'resources/notes/config.json': { type: 'Collection', properties: { title: { type: 'string' }, secret: { type: 'string', read: false } } },
  // A side effect (a post to /log), then the note moves under the write: its hidden property
  // changes (another writer, in effect).
  'resources/notes/put.js': `
    if (!internal) {
      await svc.log.post({ note: this.id, event: 'put' });
      await svc.notes.put(this.id, { secret: 'moved ' + Math.random() });
    }
  `,
  'resources/notes/delete.js': `
    await svc.log.post({ note: this.id, event: 'delete' });
    await svc.notes.put(this.id, { secret: 'moved ' + Math.random() });
  `,
  // Moves the object only on the first run for it: the client's second send goes through.
  'resources/once/config.json': { type: 'Collection', properties: { title: { type: 'string' }, secret: { type: 'string', read: false } } },
  'resources/once/put.js': `
    if (!internal) {
      var seen = await svc.log.get({ note: this.id });
      await svc.log.post({ note: this.id, event: 'put' });
      if (seen.length === 0) await svc.once.put(this.id, { secret: 'moved' });
    }
  `,
  'resources/log/config.json': { type: 'Collection', properties: { note: { type: 'string' }, event: { type: 'string' } } },
  'resources/plain/config.json': { type: 'Collection', properties: { title: { type: 'string' }, secret: { type: 'string', read: false } } },
};

describe('If-Match writes run their scripts once', () => {
  let h: AppHandle;

  beforeAll(async () => {
    h = await runApp(files);
  });
  afterAll(async () => {
    await h.close();
  });

  const logOf = async (id: string, event: string): Promise<number> => ((await h.request('GET', `/log?note=${id}&event=${event}`, undefined, ROOT)).body as unknown[]).length;

  it('a PUT whose object moved while its On Put ran answers 409 after one run, writing nothing', async () => {
    const made = (await h.request('POST', '/notes', { title: 'a' })).body as { id: string };
    const read = await h.request('GET', `/notes/${made.id}`);
    const etag = read.headers.get('etag') as string;
    const res = await h.request('PUT', `/notes/${made.id}`, { title: 'b' }, { 'if-match': etag });
    expect(res.status).toBe(409);
    expect(res.headers.get('retry-after')).toBe('0');
    expect(res.body).toMatchObject({ status: 409 });
    expect(await logOf(made.id, 'put')).toBe(1);
    expect(((await h.request('GET', `/notes/${made.id}`)).body as { title: string }).title).toBe('a');
  });

  it('a DELETE whose object moved while its On Delete ran answers 409 after one run, deleting nothing', async () => {
    const made = (await h.request('POST', '/notes', { title: 'c' })).body as { id: string };
    const etag = (await h.request('GET', `/notes/${made.id}`)).headers.get('etag') as string;
    const res = await h.request('DELETE', `/notes/${made.id}`, undefined, { 'if-match': etag });
    expect(res.status).toBe(409);
    expect(await logOf(made.id, 'delete')).toBe(1);
    expect((await h.request('GET', `/notes/${made.id}`)).status).toBe(200);
  });

  it('the offline client sends such a write again: it applies, each request having run On Put once', async () => {
    const made = (await h.request('POST', '/once', { title: 'o' })).body as { id: string };
    const svc = createClient(h.url, { resources: [{ path: '/once', kind: 'collection' }] });
    try {
      await svc.offline.start({ app: 'cas', storage: memoryStorage() });
      await svc('once').get(made.id);
      await svc.offline.flush();
      await svc('once').put(made.id, { title: 'p' });
      await svc.offline.flush();
      expect(svc.offline.queued).toBe(0);
      expect((await h.request('GET', `/once/${made.id}`)).body).toEqual({ id: made.id, title: 'p' });
      expect(await logOf(made.id, 'put')).toBe(2);
    } finally {
      svc.close();
    }
  });
});
