import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';
import { writeApp } from './helpers/app.js';

// Issue 15 (9): in development, editing a script or adding a resource applies without a restart,
// and requests keep being served during the reload.

async function until(check: () => Promise<boolean>, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A UserCollection that mails password resets, one mail per address per window (no mail leaves: nobody has the addresses asked). */
function members(extra: Record<string, unknown>) {
  return {
    type: 'UserCollection',
    properties: { email: { type: 'string', unique: true }, ...extra },
    auth: { reset: { url: 'https://app.example.com/reset?token={token}' }, mail: { smtp: { host: '127.0.0.1', port: 1 }, from: 'a@example.com', limits: { perRecipient: 1, perClient: 1000 } } },
  };
}

describe('development reload (svc watching the app folder)', () => {
  let dir: string;
  let svc: SvcProcess;

  beforeAll(async () => {
    dir = await writeApp({
      'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' }, mark: { type: 'string' } } },
      'resources/todos/post.js': "this.mark = 'v1';\n",
      'resources/members/config.json': members({}),
    });
    svc = await startSvc([dir]);
  }, 30_000);
  afterAll(async () => {
    await svc?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const post = async (path: string, body: object) => {
    const res = await fetch(`${svc.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('an edited event script applies without a restart', async () => {
    expect((await post('/todos', { title: 'a' })).body.mark).toBe('v1');
    await writeFile(join(dir, 'resources/todos/post.js'), "this.mark = 'v2';\n");
    await until(async () => (await post('/todos', { title: 'b' })).body.mark === 'v2');
    expect(svc.stderr() + svc.stdout()).toMatch(/reloaded 2 resources in \d+ ms/);
  });

  it("an edited On Get that reads nothing applies to GET by id at once, whatever answers were kept for the previous one", async () => {
    const id = (await post('/todos', { title: 'kept' })).body.id as string;
    const sid = /sid=([0-9a-f]+)/.exec((await fetch(`${svc.url}/todos`)).headers.getSetCookie().join(','))?.[1] as string;
    // A returning anonymous visitor's GET by id: the path that keeps a constant On Get's answers.
    const seen = async () => ((await (await fetch(`${svc.url}/todos/${id}`, { headers: { cookie: `sid=${sid}` } })).json()) as Record<string, unknown>).seen;
    for (const version of ['g1', 'g2', 'g3']) {
      await writeFile(join(dir, 'resources/todos/get.js'), `this.seen = '${version}';\n`);
      await until(async () => (await seen()) === version);
      for (let i = 0; i < 5; i++) expect(await seen()).toBe(version);
    }
    await rm(join(dir, 'resources/todos/get.js'));
    await until(async () => (await seen()) === undefined);
    expect(await seen()).toBeUndefined();
  });

  it('an edited relation applies to `$expand` lists at once, whatever answer was kept with the list', async () => {
    const notes = (many: boolean) => JSON.stringify({ type: 'Collection', properties: { text: { type: 'string' }, writer: { type: 'relation', collection: 'writers', many } } });
    await mkdir(join(dir, 'resources/writers'), { recursive: true });
    await writeFile(join(dir, 'resources/writers/config.json'), JSON.stringify({ type: 'Collection', properties: { name: { type: 'string' } } }));
    await mkdir(join(dir, 'resources/notes'), { recursive: true });
    await writeFile(join(dir, 'resources/notes/config.json'), notes(false));
    await until(async () => (await fetch(`${svc.url}/notes`)).status === 200 && (await fetch(`${svc.url}/writers`)).status === 200);
    const writer = (await post('/writers', { name: 'W' })).body.id as string;
    expect((await post('/notes', { text: 'n', writer })).status).toBe(200);
    const expanded = async (): Promise<unknown> => ((await (await fetch(`${svc.url}/notes?${encodeURIComponent(JSON.stringify({ $expand: ['writer'] }))}`)).json()) as Record<string, unknown>[])[0]?.writer;
    // Asked again and again: the list and its expanded answer are kept.
    for (let i = 0; i < 3; i++) expect(await expanded()).toEqual({ id: writer, name: 'W' });
    await writeFile(join(dir, 'resources/notes/config.json'), notes(true));
    await until(async () => Array.isArray(await expanded()));
    for (let i = 0; i < 3; i++) expect(await expanded()).toEqual([{ id: writer, name: 'W' }]);
  });

  it('a new resource folder is served once its config.json is written; /svc.js knows it', async () => {
    await mkdir(join(dir, 'resources/notes'), { recursive: true });
    await writeFile(join(dir, 'resources/notes/config.json'), JSON.stringify({ type: 'Collection', properties: { text: { type: 'string' } } }));
    await until(async () => (await fetch(`${svc.url}/notes`)).status === 200);
    expect(await (await fetch(`${svc.url}/svc.js`)).text()).toContain('notes');
  });

  it('a broken config.json is logged and the previous version keeps serving; fixing it reloads', async () => {
    await writeFile(join(dir, 'resources/notes/config.json'), '{"type": ');
    await until(async () => /reload failed, still serving the previous version: .*notes\/config\.json: invalid JSON/.test(svc.stderr() + svc.stdout()));
    expect((await fetch(`${svc.url}/notes`)).status).toBe(200);
    await writeFile(join(dir, 'resources/notes/config.json'), JSON.stringify({ type: 'Collection', properties: { text: { type: 'string' }, n: { type: 'number' } } }));
    await until(async () => (await post('/notes', { text: 'x', n: 3 })).body.n === 3);
  });

  it('the account mail limits hold across a reload of their collection (counted per server, not per version)', async () => {
    const ask = async () => (await post('/members/requestPasswordReset', { email: 'ghost-reload@example.com' })).status;
    expect(await ask()).toBe(202);
    expect(await ask()).toBe(429);
    const reloads = () => (svc.stderr() + svc.stdout()).match(/reloaded \d+ resources/g)?.length ?? 0;
    const before = reloads();
    await writeFile(join(dir, 'resources/members/config.json'), JSON.stringify(members({ nick: { type: 'string' } })));
    await until(async () => reloads() > before);
    expect(await ask()).toBe(429);
  });

  it('requests under way and during reloads are all answered', async () => {
    let stop = false;
    const failures: string[] = [];
    let answered = 0;
    const worker = async () => {
      while (!stop) {
        try {
          const res = await fetch(`${svc.url}/todos`);
          if (res.status !== 200) failures.push(`status ${res.status}`);
          await res.arrayBuffer();
          answered++;
        } catch (err) {
          failures.push(String(err));
        }
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    for (let i = 3; i <= 7; i++) {
      await writeFile(join(dir, 'resources/todos/post.js'), `this.mark = 'v${i}';\n`);
      await until(async () => (await post('/todos', { title: `r${i}` })).body.mark === `v${i}`);
    }
    stop = true;
    await Promise.all(workers);
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(50);
  }, 60_000);
});
