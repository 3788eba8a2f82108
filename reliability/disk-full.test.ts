import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, open, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openRules, runSvc, startSvc } from '../apps/server/test/cli.js';
import type { SvcProcess } from '../apps/server/test/cli.js';

// Issue 21 item 5: the app's data folder on a 2 MB tmpfs that fills up. Every acknowledged (200)
// create must be listed and found by id, every refused one (507 STORAGE_FULL, "the data folder's
// disk is full") must not; a logged-in user's session still reads; a restart while the disk is
// full starts and loses nothing (never "corrupt"); once space is freed, writes work again without
// a restart, and after a kill -9 and a start no acknowledged write is lost. Needs root to mount
// (CI runs as root): skipped with the reason otherwise.

const dir = await mkdtemp(join(tmpdir(), 'svc-diskfull-'));
const app = join(dir, 'app');
const data = join(app, 'data');
let mountError: string | undefined;
const running: SvcProcess[] = [];

// Mounted here, not in beforeAll: whether to skip is known when the tests are collected.
const created = await runSvc(['create', app]);
if (created.code !== 0) throw new Error(`svc create failed: ${created.stderr}`);
await openRules(app);
await mkdir(data, { recursive: true });
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', data], { stdio: 'pipe' });
} catch (err) {
  mountError = String((err as { stderr?: Buffer }).stderr ?? err).trim() || String(err);
  process.stderr.write(`disk-full.test.ts skipped: cannot mount a tmpfs (${mountError}); it needs root\n`);
}


afterAll(async () => {
  for (const p of running) await p.stop('SIGKILL');
  // Lazily, so that a file a failed test left open does not keep the mount.
  if (mountError === undefined) execFileSync('umount', ['-l', data]);
  await rm(dir, { recursive: true, force: true });
});

async function start(): Promise<SvcProcess> {
  const p = await startSvc([app]);
  running.push(p);
  return p;
}

const json = { 'content-type': 'application/json' };
const FILLER = 'filler';

type Todo = { id: string; title: string };

async function list(p: SvcProcess): Promise<Todo[]> {
  const res = await fetch(`${p.url}/todos?{"$limit":1000000}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Todo[];
}

/**
 * Four writers create todos (about 3 KB each, titles marked with writer and number) until each saw
 * 10 refusals in a row, or 2000 attempts in all. Answers what was acknowledged and the marks of
 * what was refused.
 */
async function fill(p: SvcProcess, round: string): Promise<{ acked: Map<string, string>; refused: Set<string>; statuses: Map<number, number>; bodies: Set<string> }> {
  const acked = new Map<string, string>();
  const refused = new Set<string>();
  const statuses = new Map<number, number>();
  const bodies = new Set<string>();
  let attempts = 0;
  await Promise.all(
    [0, 1, 2, 3].map(async (w) => {
      let inARow = 0;
      for (let i = 0; inARow < 10 && attempts < 2000; i++) {
        attempts++;
        const title = `${round} w${w} #${i} ${'x'.repeat(3000)}`;
        const res = await fetch(`${p.url}/todos`, { method: 'POST', headers: json, body: JSON.stringify({ title }) });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 200) {
          acked.set(((await res.json()) as Todo).id, title);
          inARow = 0;
        } else {
          bodies.add(await res.text());
          refused.add(title);
          inARow++;
        }
      }
    }),
  );
  return { acked, refused, statuses, bodies };
}

/** Every acknowledged todo listed and found by id, nothing refused listed, nothing else either. */
async function expectExactly(p: SvcProcess, acked: Map<string, string>, refused: Set<string>): Promise<void> {
  const listed = await list(p);
  const listedIds = new Set(listed.map((t) => t.id));
  expect([...acked.keys()].filter((id) => !listedIds.has(id))).toEqual([]);
  expect(listed.filter((t) => refused.has(t.title)).map((t) => t.id)).toEqual([]);
  expect(listed.length).toBe(acked.size);
  for (const [id, title] of acked) {
    const res = await fetch(`${p.url}/todos/${id}`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as Todo).title).toBe(title);
  }
}

describe.skipIf(mountError !== undefined)('the data folder on a full disk', () => {
  it('refused writes leave nothing, a restart while full loses nothing, freed space works again: 0 acknowledged writes lost', async () => {
    // A filler of 256 KB, freed later; the rest of the 2 MB is filled by the app's own writes.
    const filler = await open(join(data, FILLER), 'w');
    await filler.write(Buffer.alloc(256 * 1024, 1));
    await filler.close();

    let p = await start();
    // A user logged in before the disk fills: the session must keep working while it is full.
    expect((await fetch(`${p.url}/users`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'ada', password: 'secret' }) })).status).toBe(200);
    const login = await fetch(`${p.url}/users/login`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'ada', password: 'secret' }) });
    expect(login.status).toBe(200);
    const sid = ((await login.json()) as { id: string }).id;
    const me = async (q: SvcProcess) => fetch(`${q.url}/users/me`, { headers: { authorization: `Bearer ${sid}` } });

    const first = await fill(p, 'full');
    process.stderr.write(`disk full: ${first.acked.size} creates acknowledged, ${first.refused.size} refused; statuses ${JSON.stringify([...first.statuses])}\n`);
    expect(first.acked.size).toBeGreaterThan(50);
    expect(first.refused.size).toBeGreaterThan(0);
    await expectExactly(p, first.acked, first.refused);
    expect([...first.statuses.keys()].sort()).toEqual([200, 507]);
    expect([...first.bodies]).toEqual(['{"status":507,"statusCode":507,"message":"the data folder\'s disk is full"}']);
    expect((await me(p)).status).toBe(200);
    const loginFull = await fetch(`${p.url}/users/login`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'ada', password: 'secret' }) });
    // Its line is small: it may still fit in the last page of the sessions' file; if not, a 507.
    expect([200, 507]).toContain(loginFull.status);
    if (loginFull.status === 507) expect(await loginFull.text()).toBe('{"status":507,"statusCode":507,"message":"the data folder\'s disk is full"}');
    // Logged once, with the folder, as a full disk.
    expect(p.stdout() + p.stderr()).toContain(data);
    expect((p.stdout() + p.stderr()).match(/is full/g)?.length).toBe(1);

    // A restart while the disk is full: starts, everything acknowledged is there, nothing corrupt.
    await p.stop('SIGTERM');
    p = await start();
    await expectExactly(p, first.acked, first.refused);
    expect((await me(p)).status).toBe(200);
    expect((await fetch(`${p.url}/todos`, { method: 'POST', headers: json, body: JSON.stringify({ title: 'x'.repeat(20_000) }) })).status).toBe(507);
    expect(p.stdout() + p.stderr()).not.toMatch(/corrupt/i);
    // And a kill -9 while full (its lock left behind, no compaction): the same.
    await p.stop('SIGKILL');
    p = await start();
    await expectExactly(p, first.acked, first.refused);
    expect((await me(p)).status).toBe(200);
    expect(p.stdout() + p.stderr()).not.toMatch(/corrupt/i);

    // Space freed (the filler deleted): writes succeed without a restart, until it is full again.
    await unlink(join(data, FILLER));
    const after = await fill(p, 'freed');
    expect(after.acked.size).toBeGreaterThan(10);
    const acked = new Map([...first.acked, ...after.acked]);
    const refused = new Set([...first.refused, ...after.refused]);
    await expectExactly(p, acked, refused);
    // A bigger disk (remounted under the running server): writes, removes and logins work again.
    execFileSync('mount', ['-o', 'remount,size=8m', data]);
    const res = await fetch(`${p.url}/todos`, { method: 'POST', headers: json, body: JSON.stringify({ title: 'last' }) });
    expect(res.status).toBe(200);
    acked.set(((await res.json()) as Todo).id, 'last');
    for (const id of [...after.acked.keys()].slice(0, 5)) {
      expect((await fetch(`${p.url}/todos/${id}`, { method: 'DELETE' })).status).toBe(204);
      acked.delete(id);
    }
    expect((await fetch(`${p.url}/users/login`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'ada', password: 'secret' }) })).status).toBe(200);

    // kill -9 and a start: 0 acknowledged writes lost, none refused there.
    await p.stop('SIGKILL');
    p = await start();
    await expectExactly(p, acked, refused);
    expect(p.stdout() + p.stderr()).not.toMatch(/corrupt/i);
    await p.stop('SIGTERM');
  }, 170_000);
});
