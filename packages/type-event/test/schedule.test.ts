import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Logger, ScheduledJobs } from '@svc/core';
import { startApp } from '@svc/server';
import type { RunningApp } from '@svc/server';
import { afterEach, describe, expect, it } from 'vitest';
import type { TestContext } from 'vitest';
import eventType, { parseSchedule, startSchedule } from '@svc/type-event';
import type { RunOutcome, ScheduleHandle } from '@svc/type-event';

// Issue 23 item 11: an Event resource with "schedule" runs its schedule.js as root on that schedule.

interface LogLine {
  level: string;
  message: string;
  fields: Record<string, unknown> | undefined;
}

function recordingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const add = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, fields });
  return { logger: { info: add('info'), warn: add('warn'), error: add('error') }, lines };
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not in ${ms / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** In-process claims, as the server makes them without Redis. */
function localJobs(): ScheduledJobs & { abort(): void } {
  const held = new Set<string>();
  const controller = new AbortController();
  return {
    scope: 'process',
    runWallMs: 30_000,
    ready: Promise.resolve(),
    signal: controller.signal,
    claim: (key) => Promise.resolve(!held.has(key) && Boolean(held.add(key))),
    release: (key) => Promise.resolve(void held.delete(key)),
    abort: () => controller.abort(),
  };
}

describe('parseSchedule', () => {
  const from = new Date('2026-11-25T10:00:00Z'); // a Wednesday
  it.each([
    { pattern: '*/15 * * * *', timezone: 'UTC', next: '2026-11-25T10:15:00.000Z' },
    { pattern: '*/20 * * * * *', timezone: 'UTC', next: '2026-11-25T10:00:20.000Z' },
    { pattern: '@daily', timezone: 'UTC', next: '2026-11-26T00:00:00.000Z' },
    { pattern: '0 9 * * 1-5', timezone: 'Europe/Paris', next: '2026-11-26T08:00:00.000Z' },
    // Standard cron: both day fields restricted, either matches (Friday the 27th, not Friday the 13th).
    { pattern: '0 0 13 * 5', timezone: 'UTC', next: '2026-11-27T00:00:00.000Z' },
  ])('$pattern in $timezone', ({ pattern, timezone, next }) => {
    expect(parseSchedule('job', pattern, timezone).next(from)?.toISOString()).toBe(next);
  });

  it.each([
    { pattern: '61 * * * *', timezone: 'UTC', error: /resource job: setting schedule "61 \* \* \* \*" is not a valid cron schedule \(.*minute.*\)/ },
    { pattern: 'every day', timezone: 'UTC', error: /resource job: setting schedule "every day" is not a valid cron schedule/ },
    { pattern: '* * * * * * *', timezone: 'UTC', error: /resource job: setting schedule "\* \* \* \* \* \* \*" is not a valid cron schedule/ },
    { pattern: '0 9 * * *', timezone: 'Mars/Olympus', error: /resource job: setting timezone "Mars\/Olympus" is not a time zone/ },
    { pattern: '0 0 30 2 *', timezone: 'UTC', error: /resource job: setting schedule "0 0 30 2 \*" never runs/ },
  ])('refuses $pattern ($timezone)', ({ pattern, timezone, error }) => {
    expect(() => parseSchedule('job', pattern, timezone)).toThrow(error);
  });
});

// The cases wait for real seconds: they run at once (concurrent), each stopping its own schedules.
describe.concurrent('startSchedule', () => {
  const stopAfter = (onTestFinished: TestContext['onTestFinished'], handle: ScheduleHandle): ScheduleHandle => {
    onTestFinished(() => handle.stop());
    return handle;
  };

  it('waits for a time years ahead in steps setTimeout can make (no overflow that fires at once)', async ({ expect, onTestFinished }) => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const runs: Date[] = [];
      const { logger } = recordingLogger();
      // Next 1 January: more than 2^31-1 ms (24.8 days) away but in the last weeks of a year.
      const schedule = parseSchedule('yearly', '0 0 1 1 *');
      stopAfter(onTestFinished, startSchedule({ resource: 'yearly', schedule, jobs: localJobs(), logger, run: (planned) => (runs.push(planned), Promise.resolve('ok')) }));
      await sleep(300);
      expect(runs).toEqual([]);
      expect(warnings.filter((w) => w.name === 'TimeoutOverflowWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('skips a time that comes while the previous run is still going, logs it, and runs again after', async ({ expect, onTestFinished }) => {
    const { logger, lines } = recordingLogger();
    let release!: () => void;
    const blocked = new Promise<void>((r) => (release = r));
    const runs: Date[] = [];
    const run = async (planned: Date): Promise<RunOutcome> => {
      runs.push(planned);
      if (runs.length === 1) await blocked;
      return 'ok';
    };
    stopAfter(onTestFinished, startSchedule({ resource: 'slow', schedule: parseSchedule('slow', '* * * * * *'), jobs: localJobs(), logger, run }));
    await until(() => lines.some((l) => l.fields?.outcome === 'skipped'), 'a skipped time');
    expect(runs).toHaveLength(1);
    expect(lines.find((l) => l.fields?.outcome === 'skipped')).toMatchObject({ level: 'warn', fields: { resource: 'slow', reason: 'overlap', planned: expect.any(String) as unknown } });
    release();
    await until(() => runs.length >= 2, 'a run after the slow one');
    expect(new Set(runs.map((d) => d.toISOString())).size).toBe(runs.length);
  });

  it('runs nothing once stopped or once its signal aborts', async ({ expect, onTestFinished }) => {
    // Both ways at once, each on its own schedule and claims.
    await Promise.all(
      (['stop', 'abort'] as const).map(async (how) => {
        const runs: Date[] = [];
        const jobs = localJobs();
        const handle = stopAfter(onTestFinished, startSchedule({ resource: 'stopped', schedule: parseSchedule('stopped', '* * * * * *'), jobs, logger: recordingLogger().logger, run: (p) => (runs.push(p), Promise.resolve('ok')) }));
        await until(() => runs.length >= 1, `a first run (${how})`);
        if (how === 'stop') await handle.stop();
        else jobs.abort();
        const seen = runs.length;
        await sleep(1500);
        expect(runs, how).toHaveLength(seen);
      }),
    );
  });
});

/** Writes an app folder: path -> JSON or text. */
async function writeApp(files: Record<string, string | object>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-schedule-'));
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

const MARKS = {
  'resources/marks/config.json': {
    type: 'Collection',
    properties: { planned: { type: 'string' }, tag: { type: 'string' }, root: { type: 'boolean' }, internal: { type: 'boolean' }, anon: { type: 'boolean' }, method: { type: 'string' }, pattern: { type: 'string' } },
  },
  // Only root may write marks: a scheduled run must be root to leave one.
  'resources/marks/post.js': "cancelUnless(isRoot, 'root only', 403);\n",
};

/** The app folders and apps of one test, closed and removed when it ends (its own, as the tests that wait for seconds run at once). */
function ownedByTest(onTestFinished: TestContext['onTestFinished']): { dirs: string[]; apps: RunningApp[] } {
  const owned = { dirs: [] as string[], apps: [] as RunningApp[] };
  onTestFinished(async () => {
    for (const app of owned.apps.splice(0)) await app.close();
    for (const dir of owned.dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  return owned;
}

describe('an Event resource with a schedule, in a running app', () => {
  const dirs: string[] = [];
  const apps: RunningApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  // The next three wait for real seconds: concurrent, each with its own apps.
  it.concurrent('runs schedule.js every second as root; a throwing run is logged and the next one runs; a stopped app runs nothing', async ({ expect, onTestFinished }) => {
    const { dirs, apps } = ownedByTest(onTestFinished);
    const dir = await writeApp({
      ...MARKS,
      'resources/tick/config.json': { type: 'Event', schedule: '* * * * * *' },
      'resources/tick/schedule.js':
        "await svc.marks.post({ planned: schedule.time, pattern: schedule.pattern, tag: 'tick', root: isRoot, internal: internal, anon: !me, method: ctx.method });\n",
      'resources/boom/config.json': { type: 'Event', schedule: '* * * * * *', timezone: 'Europe/Paris' },
      'resources/boom/schedule.js': "await svc.marks.post({ planned: schedule.time, tag: 'boom' });\nthrow new Error('boom at ' + schedule.time);\n",
    });
    dirs.push(dir);
    const { logger, lines } = recordingLogger();
    const app = await startApp({ appDir: dir, port: 0, env: 'production', logger, resourceTypes: [eventType], dashboard: false });
    apps.push(app);
    const marks = async (): Promise<Record<string, unknown>[]> => (await (await fetch(`${app.url}/marks`)).json()) as Record<string, unknown>[];
    await until(async () => {
      const all = await marks();
      // A boom run posts its mark before it throws: its failure is logged a moment after the mark.
      // (A tick's run, too, is logged once it ended, after its mark.)
      const logged = (resource: string, outcome: string): number => lines.filter((l) => l.fields?.resource === resource && l.fields.outcome === outcome).length;
      return all.filter((m) => m.tag === 'tick').length >= 2 && all.filter((m) => m.tag === 'boom').length >= 2 && logged('tick', 'ok') >= 2 && logged('boom', 'failed') >= 2;
    }, 'two runs of each schedule');

    // An anonymous request cannot write marks; the schedule could.
    expect((await fetch(`${app.url}/marks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"tag":"x"}' })).status).toBe(403);
    const ticks = (await marks()).filter((m) => m.tag === 'tick');
    for (const mark of ticks) {
      expect(mark).toMatchObject({ root: true, internal: true, anon: true, method: 'SCHEDULE', pattern: '* * * * * *' });
      expect(new Date(mark.planned as string).getMilliseconds()).toBe(0);
    }
    expect(new Set(ticks.map((m) => m.planned)).size).toBe(ticks.length);

    const ran = lines.filter((l) => l.fields?.resource === 'tick' && l.fields.outcome === 'ok');
    expect(ran.length).toBeGreaterThanOrEqual(2);
    expect(ran[0]).toMatchObject({ level: 'info', fields: { schedule: '* * * * * *', timezone: 'UTC', planned: expect.any(String) as unknown, durationMs: expect.any(Number) as unknown } });
    const failed = lines.filter((l) => l.fields?.resource === 'boom' && l.fields.outcome === 'failed');
    expect(failed.length).toBeGreaterThanOrEqual(2);
    expect(failed[0]).toMatchObject({ level: 'error', fields: { timezone: 'Europe/Paris', error: expect.stringContaining('boom at') as unknown } });
    // The production message names the failure (the reply text would be "internal server error").
    expect(failed[0]!.message).toMatch(/^schedule boom .*: failed after \d+ ms: .*boom at/);

    await app.close();
    apps.length = 0;
    const seen = lines.filter((l) => l.fields?.resource !== undefined).length;
    await sleep(2500);
    expect(lines.filter((l) => l.fields?.resource !== undefined)).toHaveLength(seen);
  });

  it.concurrent('a development reload stops the previous version\'s timers: each time runs once, by the new script after the swap', async ({ expect, onTestFinished }) => {
    const { dirs, apps } = ownedByTest(onTestFinished);
    const dir = await writeApp({
      ...MARKS,
      'resources/tick/config.json': { type: 'Event', schedule: '* * * * * *' },
      'resources/tick/schedule.js': "await svc.marks.post({ planned: schedule.time, tag: 'v1' });\n",
    });
    dirs.push(dir);
    const { logger, lines } = recordingLogger();
    const app = await startApp({ appDir: dir, port: 0, env: 'development', logger, resourceTypes: [eventType], dashboard: false, watch: true });
    apps.push(app);
    const marks = async (tag?: string): Promise<Record<string, unknown>[]> =>
      ((await (await fetch(`${app.url}/marks`, { headers: { 'svc-ssh-key': 'dev' } })).json()) as Record<string, unknown>[]).filter((m) => tag === undefined || m.tag === tag);
    await until(async () => (await marks('v1')).length >= 1, 'a run of v1');
    await writeFile(join(dir, 'resources/tick/schedule.js'), "await svc.marks.post({ planned: schedule.time, tag: 'v2' });\n");
    await until(async () => (await marks('v2')).length >= 1 && lines.some((l) => l.message.startsWith('reloaded ')), 'a run of v2 after the reload');
    await sleep(300);
    const v1 = (await marks('v1')).length;
    await sleep(1500);
    expect(await marks('v1')).toHaveLength(v1);
    const all = await marks();
    expect(new Set(all.map((m) => m.planned)).size).toBe(all.length);
  });

  it.concurrent('a run obeys the script budgets: a script that never ends is stopped and logged, and later times run', async ({ expect, onTestFinished }) => {
    const { dirs, apps } = ownedByTest(onTestFinished);
    const dir = await writeApp({
      ...MARKS,
      'app.json': { scripts: { requestCpuMs: 200, requestWallMs: 1000 } },
      'resources/spin/config.json': { type: 'Event', schedule: '* * * * * *' },
      // The first run spins forever.
      'resources/spin/schedule.js': "await svc.marks.post({ planned: schedule.time, tag: 'spin' });\nif ((await svc.marks.get({ tag: 'spin' })).length === 1) { while (true) {} }\n",
    });
    dirs.push(dir);
    const { logger, lines } = recordingLogger();
    const app = await startApp({ appDir: dir, port: 0, env: 'production', logger, resourceTypes: [eventType], dashboard: false });
    apps.push(app);
    await until(() => lines.some((l) => l.fields?.resource === 'spin' && l.fields.outcome === 'failed'), 'a stopped run');
    const failedAt = lines.findIndex((l) => l.fields?.resource === 'spin' && l.fields.outcome === 'failed');
    expect(lines[failedAt]!.fields?.error).toMatch(/time|budget|CPU/i);
    await until(() => lines.slice(failedAt).some((l) => l.fields?.resource === 'spin' && l.fields.outcome === 'ok'), 'a run after the stopped one');
  });

  it('no request runs schedule.js, whatever its method', async () => {
    const dir = await writeApp({
      ...MARKS,
      'resources/job/config.json': { type: 'Event', schedule: '0 0 1 1 *' },
      'resources/job/schedule.js': "await svc.marks.post({ planned: 'by request', tag: 'job' });\n",
    });
    dirs.push(dir);
    const app = await startApp({ appDir: dir, port: 0, env: 'development', logger: recordingLogger().logger, resourceTypes: [eventType], dashboard: false });
    apps.push(app);
    const statuses: number[] = [];
    for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'SCHEDULE']) {
      for (const path of ['/job', '/job/schedule', '/job/schedule.js', '/job?_method=SCHEDULE']) {
        statuses.push((await fetch(`${app.url}${path}`, { method, headers: { 'svc-ssh-key': 'dev' } }).catch(() => ({ status: 0 }))).status);
      }
    }
    expect(statuses.every((s) => s === 404 || s === 400 || s === 0)).toBe(true);
    expect(await (await fetch(`${app.url}/marks`)).json()).toEqual([]);
  });

  it('the dashboard shows schedule and timezone as settings of an Event, and refuses a bad cron on the field', async () => {
    const dir = await writeApp({ 'app.json': {} });
    dirs.push(dir);
    const app = await startApp({ appDir: dir, port: 0, env: 'development', logger: recordingLogger().logger, resourceTypes: [eventType] });
    apps.push(app);
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${app.url}/dashboard/api${path}`, {
        method,
        headers: { 'svc-ssh-key': 'dev', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const described = await api('GET', '/app');
    const event = (described.body.types as { name: string; settings: Record<string, unknown>; events: string[] }[]).find((t) => t.name === 'Event');
    expect(Object.keys(event!.settings)).toEqual(['schedule', 'timezone']);
    expect(event!.events).toContain('schedule.js');
    const bad = await api('POST', '/resources', { name: 'nightly', type: 'Event', settings: { schedule: '61 * * * *' } });
    expect(bad).toMatchObject({ status: 400, body: { errors: { schedule: expect.stringContaining('is not a valid cron schedule') as unknown } } });
    const ok = await api('POST', '/resources', { name: 'nightly', type: 'Event', settings: { schedule: '0 3 * * *' } });
    expect(ok.status).toBe(201);
  });

  it.each([
    { name: 'a bad cron', config: { schedule: '*/5 * * *' }, error: /resource nightly: setting schedule "\*\/5 \* \* \*" is not a valid cron schedule/ },
    { name: 'a bad time zone', config: { schedule: '0 3 * * *', timezone: 'Nowhere/Else' }, error: /resource nightly: setting timezone "Nowhere\/Else" is not a time zone/ },
    { name: 'a schedule that is not a string', config: { schedule: 5 }, error: /resource nightly: setting schedule must be a string/ },
  ])('refuses to start with $name, naming the resource', async ({ config, error }) => {
    const dir = await writeApp({ 'resources/nightly/config.json': { type: 'Event', ...config }, 'resources/nightly/schedule.js': '' });
    dirs.push(dir);
    await expect(startApp({ appDir: dir, port: 0, env: 'production', logger: recordingLogger().logger, resourceTypes: [eventType], dashboard: false })).rejects.toThrow(error);
  });

  it('warns about a schedule with no schedule.js, and a schedule.js with no schedule', async () => {
    const dir = await writeApp({
      'resources/a/config.json': { type: 'Event', schedule: '0 3 * * *' },
      'resources/b/config.json': { type: 'Event' },
      'resources/b/schedule.js': '',
    });
    dirs.push(dir);
    const { logger, lines } = recordingLogger();
    apps.push(await startApp({ appDir: dir, port: 0, env: 'production', logger, resourceTypes: [eventType], dashboard: false }));
    expect(lines.map((l) => l.message)).toEqual(
      expect.arrayContaining(['resource a: "schedule" is set but there is no schedule.js: nothing runs', 'resource b: schedule.js never runs: config.json has no "schedule"']),
    );
  });
});
