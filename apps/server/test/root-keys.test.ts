import { chmod, mkdir, readFile, rename, rm, stat, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { envRootKeys } from '../src/keys.js';
import { memoryLogger, writeApp } from './helpers/app.js';
import { runSvc, startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';

// Issue 23, item 8: keys.json is read again when it changes, so that a removed key stops at once.
const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);
const ENV_KEY = 'e'.repeat(48);

const running: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

async function production(keys: Record<string, boolean> | undefined, rootKeys: string[] = []): Promise<{ app: RunningApp; dir: string; file: string; logger: ReturnType<typeof memoryLogger>; root(key: string): Promise<number> }> {
  const dir = await writeApp({ 'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } } });
  running.push({ close: () => rm(dir, { recursive: true, force: true }) });
  const file = join(dir, '.svc', 'keys.json');
  await mkdir(join(dir, '.svc'));
  if (keys) await writeFile(file, JSON.stringify(keys), { mode: 0o600 });
  const logger = memoryLogger();
  const app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', env: 'production', logger, rootKeys, dashboard: false });
  running.push(app);
  // GET /todos/count is root only in production (403 otherwise).
  const root = async (key: string) => (await fetch(`${app.url}/todos/count`, { headers: { 'svc-ssh-key': key } })).status;
  return { app, dir, file, logger, root };
}

/** How editors save: a new file renamed over the old one. */
async function rewriteByRename(file: string, text: string): Promise<void> {
  await writeFile(`${file}.swp`, text, { mode: 0o600 });
  await rename(`${file}.swp`, file);
}

describe('root keys of a running server', () => {
  it('a key removed from keys.json by a rename-writing editor is refused at the very next request', async () => {
    const { file, root } = await production({ [A]: true, [B]: true });
    expect(await root(A)).toBe(200);
    await rewriteByRename(file, JSON.stringify({ [B]: true }));
    expect(await root(A)).toBe(403);
    expect(await root(B)).toBe(200);
    // A key added the same way works at once too.
    await rewriteByRename(file, JSON.stringify({ [B]: true, [C]: true }));
    expect(await root(C)).toBe(200);
  });

  it('an in-place rewrite of the same size swapping one key for another, right after the previous change, is seen too', async () => {
    const { file, root } = await production({ [A]: true });
    expect(await root(A)).toBe(200);
    // Same length, same inode, within one clock tick of file times: only the content differs.
    await writeFile(file, JSON.stringify({ [C]: true }));
    expect(await root(A)).toBe(403);
    expect(await root(C)).toBe(200);
  });

  it('a deleted keys.json leaves no key', async () => {
    const { file, root } = await production({ [A]: true });
    expect(await root(A)).toBe(200);
    await unlink(file);
    expect(await root(A)).toBe(403);
  });

  it('a keys.json that does not parse (a half-written file) refuses every key of it until it parses, and says so once', async () => {
    const { file, root, logger } = await production({ [A]: true, [B]: true });
    expect(await root(A)).toBe(200);
    await writeFile(file, `{"${B}": tr`);
    expect(await root(A)).toBe(403);
    expect(await root(B)).toBe(403);
    expect(await root(B)).toBe(403);
    expect(logger.lines.filter((l) => l.includes('is not valid JSON'))).toHaveLength(1);
    expect(logger.lines.join('\n')).not.toContain(B);
    await writeFile(file, JSON.stringify({ [B]: true }));
    expect(await root(B)).toBe(200);
    expect(await root(A)).toBe(403);
  });

  it('keys.json replaced by a symbolic link to another file is refused (its keys do not work), and logged', async () => {
    const { dir, file, root, logger } = await production({ [A]: true });
    expect(await root(A)).toBe(200);
    const elsewhere = join(dir, 'public-keys.json');
    await writeFile(elsewhere, JSON.stringify({ [C]: true }), { mode: 0o600 });
    await unlink(file);
    await symlink(elsewhere, file);
    expect(await root(C)).toBe(403);
    expect(await root(A)).toBe(403);
    expect(logger.lines.join('\n')).toContain('is a symbolic link');
  });

  it('a keys.json writable by every user is refused', async () => {
    const { file, root } = await production({ [A]: true });
    expect(await root(A)).toBe(200);
    await chmod(file, 0o666);
    expect(await root(A)).toBe(403);
    await chmod(file, 0o600);
    expect(await root(A)).toBe(200);
  });

  it('keys given beside keys.json (SVC_ROOT_KEYS) work with no file, and while keys.json does not parse', async () => {
    const { file, root } = await production(undefined, [ENV_KEY]);
    expect(await root(ENV_KEY)).toBe(200);
    expect(await root(A)).toBe(403);
    await writeFile(file, '{', { mode: 0o600 });
    expect(await root(ENV_KEY)).toBe(200);
  });

  it('SVC_ROOT_KEYS: comma-separated; a short key or one with spaces inside is refused without showing it', () => {
    expect(envRootKeys(undefined)).toEqual([]);
    expect(envRootKeys(` ${A} ,${B},, `)).toEqual([A, B]);
    expect(() => envRootKeys(`${A},short-key`)).toThrow(/key 2 is 9 characters; a root key needs at least 32/);
    expect(() => envRootKeys(`${A},short-key`)).not.toThrow(/short-key/);
    expect(() => envRootKeys(`${'x'.repeat(20)} ${'y'.repeat(20)}`)).toThrow(/printable ASCII/);
  });
});

describe('svc keygen --revoke and SVC_ROOT_KEYS (command line)', () => {
  const procs: SvcProcess[] = [];
  afterEach(async () => {
    for (const p of procs.splice(0)) await p.stop('SIGKILL');
  });

  it('revokes a key in keys.json atomically (0600 kept); a running server refuses it at its next request', async () => {
    const dir = await writeApp({ 'resources/todos/config.json': { type: 'Collection', properties: {} } });
    running.push({ close: () => rm(dir, { recursive: true, force: true }) });
    expect((await runSvc(['keygen', dir])).code).toBe(0);
    expect((await runSvc(['keygen', dir])).code).toBe(0);
    const file = join(dir, '.svc', 'keys.json');
    const [first, second] = Object.keys(JSON.parse(await readFile(file, 'utf8')) as Record<string, boolean>) as [string, string];
    const p = await startSvc([dir, '--env', 'production', '--host', '127.0.0.1']);
    procs.push(p);
    const root = async (key: string) => (await fetch(`${p.url}/todos/count`, { headers: { 'svc-ssh-key': key } })).status;
    expect(await root(first)).toBe(200);
    const revoked = await runSvc(['keygen', dir, '--revoke', first]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain('revoked the key');
    expect(revoked.stdout).not.toContain(first);
    expect(await root(first)).toBe(403);
    expect(await root(second)).toBe(200);
    expect(Object.keys(JSON.parse(await readFile(file, 'utf8')) as object)).toEqual([second]);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    // By the 16 characters keygen prints.
    expect((await runSvc(['keygen', dir, '--revoke', second.slice(0, 16)])).code).toBe(0);
    expect(await root(second)).toBe(403);
    const unknown = await runSvc(['keygen', dir, '--revoke', first]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no such key');
    // Too short a beginning matches nothing (a guess of a few characters revokes no key).
    expect((await runSvc(['keygen', dir, '--revoke', 'a'])).code).toBe(1);
    // Nine svc processes one after another: tens of seconds on 2 loaded cores.
  }, 120_000);

  it('keygen and --revoke at the same time never write back a revoked key: they take turns (a stale lock is taken over)', async () => {
    const dir = await writeApp({ 'resources/todos/config.json': { type: 'Collection', properties: {} } });
    running.push({ close: () => rm(dir, { recursive: true, force: true }) });
    const file = join(dir, '.svc', 'keys.json');
    for (let i = 0; i < 3; i++) expect((await runSvc(['keygen', dir])).code).toBe(0);
    const [gone] = Object.keys(JSON.parse(await readFile(file, 'utf8')) as object) as [string];
    const runs = await Promise.all([runSvc(['keygen', '--revoke', gone, dir]), runSvc(['keygen', dir]), runSvc(['keygen', dir])]);
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0]);
    const keys = Object.keys(JSON.parse(await readFile(file, 'utf8')) as object);
    expect(keys).toHaveLength(4);
    expect(keys).not.toContain(gone);
    // A lock held by another keygen: this one waits, then gives up naming it.
    await writeFile(`${file}.lock`, '');
    const held = await runSvc(['keygen', dir]);
    expect(held.code).toBe(1);
    expect(held.stderr).toContain('another svc keygen is changing');
    // One left by a process that died long ago is taken over.
    const old = new Date(Date.now() - 60_000);
    await utimes(`${file}.lock`, old, old);
    expect((await runSvc(['keygen', dir])).code).toBe(0);
    expect(Object.keys(JSON.parse(await readFile(file, 'utf8')) as object)).toHaveLength(5);
    // Eight svc processes, three at once: tens of seconds on 2 loaded cores.
  }, 120_000);

  it('SVC_ROOT_KEYS gives root in production with no keys.json; a weak one stops the start without printing it', async () => {
    const dir = await writeApp({ 'resources/todos/config.json': { type: 'Collection', properties: {} } });
    running.push({ close: () => rm(dir, { recursive: true, force: true }) });
    const weak = await runSvc([dir, '--env', 'production', '--port', '0'], { SVC_ROOT_KEYS: 'hunter2' });
    expect(weak.code).toBe(1);
    expect(weak.stderr).toContain('SVC_ROOT_KEYS: key 1 is 7 characters');
    expect(weak.stderr).not.toContain('hunter2');
    const p = await startSvc([dir, '--env', 'production', '--host', '127.0.0.1'], { SVC_ROOT_KEYS: `${ENV_KEY},${C}` });
    procs.push(p);
    expect((await fetch(`${p.url}/todos/count`, { headers: { 'svc-ssh-key': C } })).status).toBe(200);
    expect((await fetch(`${p.url}/todos/count`, { headers: { 'svc-ssh-key': A } })).status).toBe(403);
  });
});
