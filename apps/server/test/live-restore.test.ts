import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { createClient } from '@svc/client';
import type { LiveEvent, SvcClient } from '@svc/client';
import { startApp } from '../src/startApp.js';
import type { RunningApp } from '../src/startApp.js';

// A backup restored from the dashboard while serving (the embedded store; on MongoDB the
// dashboard refuses and svc restore runs with the servers stopped) replaces objects wholesale: the
// live queries that remain (anonymous ones: every logged-in session ends) take a fresh snapshot.

const KEY = 'live-restore-key';
const ROOT = { 'svc-ssh-key': KEY };
type Todo = { id: string; title?: string; secret?: string };

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a dashboard restore and live queries (embedded store)', () => {
  let dir: string;
  let app: RunningApp;
  const clients: SvcClient[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-live-restore-'));
    const files: Record<string, object> = {
      'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' }, secret: { type: 'string', private: true } } },
      '.svc/keys.json': { [KEY]: true },
    };
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), JSON.stringify(content));
    }
    app = await startApp({ appDir: dir, port: 0, env: 'production', host: '127.0.0.1', logger: silentLogger });
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const post = async (title: string): Promise<void> => {
    const res = await fetch(`${app.url}/todos`, { method: 'POST', headers: { 'content-type': 'application/json', ...ROOT }, body: JSON.stringify({ title, secret: `secret of ${title}` }) });
    expect(res.status).toBe(200);
  };

  it('subscribers get a fresh snapshot of what the backup holds, as their GET shows it', async () => {
    await post('kept');
    const backup = (await (await fetch(`${app.url}/dashboard/api/backups`, { method: 'POST', headers: ROOT })).json()) as { name: string };
    await post('after the backup');
    const client = createClient(app.url);
    clients.push(client);
    await new Promise<void>((resolve) => client.socketReady(resolve));
    const events: LiveEvent<Todo>[] = [];
    client.todos!.subscribe<Todo>({ $sort: { title: 1 } }, (e) => events.push(e), { snapshot: true });
    await until(() => events.length === 1);
    const titles = (e: LiveEvent<Todo> | undefined): unknown => (e?.type === 'snapshot' ? e.objects.map((o) => o.title) : e?.type);
    expect(titles(events[0])).toEqual(['after the backup', 'kept']);

    const restored = await fetch(`${app.url}/dashboard/api/backups/${backup.name}/restore`, { method: 'POST', headers: { ...ROOT, 'content-type': 'application/json' }, body: JSON.stringify({ confirm: backup.name }) });
    expect(restored.status).toBe(200);
    await until(() => events.length === 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(events.map(titles)).toEqual([['after the backup', 'kept'], ['kept']]);
    expect(JSON.stringify(events)).not.toContain('secret of');

    // Live again afterwards.
    await post('new');
    await until(() => events.length === 3);
    expect(events[2]).toMatchObject({ type: 'create', object: { title: 'new' } });
  });
});
