import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Logger } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import eventType from '@svc/type-event';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, hasRedisServer, redisAnswers } from './localServices.js';

// Issue 23 item 11: a scheduled Event runs once per planned time across the app's processes when
// they share a Redis (--redis), and in each process when they share only the database.

const mongoUrl = process.env.SVC_TEST_MONGODB_URL;
const redisUrl = process.env.SVC_TEST_REDIS_URL;
const missing = [!mongoUrl && 'SVC_TEST_MONGODB_URL', !redisUrl && 'SVC_TEST_REDIS_URL'].filter(Boolean).join(' and ');
if (missing) {
  if (process.env.CI === 'true') throw new Error(`CI=true but ${missing} is not set: the scheduled jobs test cannot run`);
  process.stderr.write(`SKIPPED the scheduled jobs test (two app processes over MongoDB and Redis): set ${missing}\n`);
}

interface Line {
  level: string;
  message: string;
  fields: Record<string, unknown> | undefined;
}

function recorder(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const add = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, fields });
  return { logger: { info: add('info'), warn: add('warn'), error: add('error') }, lines };
}

async function until(check: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not in ${ms / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(missing !== '')('a schedule shared by two processes of one app', () => {
  const dirs: string[] = [];
  const apps: RunningApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  /** Two processes' worth of the same app (own folders, one database); answers them and their logs. */
  async function startTwo(redis: string | undefined): Promise<{ apps: RunningApp[]; lines: Line[][]; resource: string }> {
    // Unique per run: claims live in the shared Redis for minutes.
    const resource = `tick-${process.pid}-${Date.now()}`;
    const db = `${mongoUrl!.replace(/\/$/, '')}/svc_schedule_${process.pid}_${Date.now()}`;
    const files: Record<string, string | object> = {
      'resources/marks/config.json': { type: 'Collection', properties: { planned: { type: 'string' }, by: { type: 'string' } } },
      'resources/marks/post.js': "cancelUnless(isRoot, 'root only', 403);\n",
      [`resources/${resource}/config.json`]: { type: 'Event', schedule: '* * * * * *' },
      [`resources/${resource}/schedule.js`]: 'await svc.marks.post({ planned: schedule.time });\n',
    };
    const started: RunningApp[] = [];
    const lines: Line[][] = [];
    for (let i = 0; i < 2; i++) {
      const dir = await mkdtemp(join(tmpdir(), 'svc-schedule-two-'));
      dirs.push(dir);
      for (const [path, content] of Object.entries(files)) {
        await mkdir(dirname(join(dir, path)), { recursive: true });
        await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
      }
      const { logger, lines: own } = recorder();
      lines.push(own);
      const app = await startApp({ appDir: dir, port: 0, env: 'production', db, ...(redis ? { redis } : {}), logger, resourceTypes: [eventType], dashboard: false });
      apps.push(app);
      started.push(app);
    }
    return { apps: started, lines, resource };
  }

  const plannedTimes = async (app: RunningApp): Promise<string[]> =>
    ((await (await fetch(`${app.url}/marks`)).json()) as { planned: string }[]).map((m) => m.planned);

  it('with --redis, each planned time runs once, in one of the processes', async () => {
    const { apps: [a, b], lines } = await startTwo(redisUrl);
    await until(async () => new Set(await plannedTimes(a!)).size >= 4, 'four planned times');
    // Both processes had every time of this span: a second run would have come by now.
    await new Promise((r) => setTimeout(r, 1500));
    const times = await plannedTimes(b!);
    const counts = new Map<string, number>();
    for (const t of times) counts.set(t, (counts.get(t) ?? 0) + 1);
    expect([...counts.values()].filter((n) => n > 1)).toEqual([]);
    const ran = lines.flat().filter((l) => l.fields?.outcome === 'ok');
    expect(new Set(ran.map((l) => l.fields?.planned)).size).toBe(ran.length);
    expect(lines.flat().some((l) => l.message.includes('runs in each process'))).toBe(false);
  });

  it('with --db and no --redis, says at start that each process runs the schedule (and each does)', async () => {
    const { apps: [a], lines, resource } = await startTwo(undefined);
    for (const own of lines) {
      expect(own.map((l) => l.message)).toContain(`resource ${resource}: schedule "* * * * * *" runs in each process of the app (--db without --redis); pass --redis to run it once across them`);
    }
    await until(async () => {
      const times = await plannedTimes(a!);
      return times.length > new Set(times).size;
    }, 'a planned time run by both processes');
  });
});

if (!hasRedisServer) {
  if (process.env.CI === 'true') throw new Error('CI=true but redis-server is missing: the scheduled jobs outage test cannot run');
  process.stderr.write('SKIPPED the scheduled jobs Redis outage test: it needs redis-server\n');
}

// A Redis of its own on a free port (the shared one must not be stopped).
describe.runIf(hasRedisServer)('a schedule while its Redis is down', () => {
  let redis: ChildProcess | undefined;
  let app: RunningApp | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await app?.close();
    redis?.kill('SIGKILL');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('skips the times it cannot claim (none runs twice), says so once, and runs again once Redis is back', async () => {
    const port = await freePort();
    const startRedis = async () => {
      redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      await until(() => redisAnswers(port), 'redis-server answering');
    };
    await startRedis();
    dir = await mkdtemp(join(tmpdir(), 'svc-schedule-outage-'));
    const files: Record<string, object | string> = {
      'resources/marks/config.json': { type: 'Collection', properties: { planned: { type: 'string' } } },
      'resources/tick/config.json': { type: 'Event', schedule: '* * * * * *' },
      'resources/tick/schedule.js': 'await svc.marks.post({ planned: schedule.time });\n',
    };
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
    }
    const { logger, lines } = recorder();
    app = await startApp({ appDir: dir, port: 0, env: 'production', redis: `redis://127.0.0.1:${port}`, logger, resourceTypes: [eventType], dashboard: false });
    const count = async () => ((await (await fetch(`${app!.url}/marks`)).json()) as unknown[]).length;
    await until(async () => (await count()) >= 1, 'a run with Redis up');

    redis?.kill('SIGKILL');
    await until(async () => !(await redisAnswers(port)), 'redis-server stopped');
    await until(async () => lines.some((l) => l.message.startsWith('scheduled jobs: redis at')), 'the outage logged');
    // Runs under way when Redis went have ended; none starts while it is down.
    await new Promise((r) => setTimeout(r, 1200));
    const during = await count();
    await new Promise((r) => setTimeout(r, 2000));
    expect(await count()).toBe(during);
    expect(lines.filter((l) => l.message.startsWith('scheduled jobs: redis at'))).toHaveLength(1);

    await startRedis();
    await until(async () => (await count()) > during, 'a run once Redis is back');
  });
});
