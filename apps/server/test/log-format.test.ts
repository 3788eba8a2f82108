import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSvc, startSvc } from './cli.js';

// Issue 23 (4): `svc --log-format json` (or SVC_LOG_FORMAT=json): every stderr line is one JSON
// object, an access line per answered request among them; text stays the default.

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-log-format-'));
  await mkdir(join(dir, 'resources', 'todos'), { recursive: true });
  await writeFile(join(dir, 'resources', 'todos', 'config.json'), JSON.stringify({ type: 'Collection', properties: { title: { type: 'string' } } }));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Waits (bounded) until the process has written a line holding `text`. */
async function until(read: () => string, text: string): Promise<void> {
  for (let i = 0; i < 250 && !read().includes(text); i++) await new Promise((r) => setTimeout(r, 20));
}

describe('svc --log-format', () => {
  it.each([
    ['--log-format json', ['--log-format', 'json'], {}],
    ['SVC_LOG_FORMAT=json', [], { SVC_LOG_FORMAT: 'json' }],
  ] as const)('%s: each stderr line parses as JSON; requests have access lines without their query string', async (_name, flags, env) => {
    const svc = await startSvc([dir, ...flags], { ...env, SVC_WATCH: '0' });
    try {
      const res = await fetch(`${svc.url}/todos?access_token=TOKEN1`, { headers: { 'x-request-id': 'cli-json-1', cookie: 'sid=COOKIE1' } });
      expect(res.status).toBe(200);
      await until(svc.stderr, 'cli-json-1');
    } finally {
      await svc.stop();
    }
    const lines = svc.stderr().split('\n').filter((l) => l !== '');
    expect(lines.length).toBeGreaterThan(2);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const line of parsed) {
      expect(typeof line.time).toBe('string');
      expect(['info', 'warn', 'error']).toContain(line.level);
      expect(typeof line.msg).toBe('string');
    }
    expect(parsed.find((l) => l.id === 'cli-json-1')).toMatchObject({ type: 'access', level: 'info', method: 'GET', path: '/todos', status: 200, client: '127.0.0.1', aborted: false });
    expect(svc.stderr()).not.toContain('TOKEN1');
    expect(svc.stderr()).not.toContain('COOKIE1');
  });

  it('text is the default: one readable line per request', async () => {
    const svc = await startSvc([dir], { SVC_WATCH: '0' });
    try {
      await (await fetch(`${svc.url}/todos/none`, { headers: { 'x-request-id': 'cli-text-1' } })).arrayBuffer();
      await until(svc.stderr, 'cli-text-1');
    } finally {
      await svc.stop();
    }
    expect(svc.stderr()).toMatch(/^\S+Z info GET \/todos\/none 404 [\d.]+ms \d+B id=cli-text-1 client=127\.0\.0\.1$/m);
  });

  it('an unknown format is refused before the start', async () => {
    const out = await runSvc([dir, '--log-format', 'xml']);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('--log-format must be text or json, not xml');
  });
});
