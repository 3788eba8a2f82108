import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { chromiumAvailable, launchChromium } from './browser-helpers.js';
import { runSvc, startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';

// Issue 12 (Show): a Deployd-style app folder written from Deployd's documentation (collections,
// users, every event including beforerequest/aftercommit/login, an Event resource, a page using
// dpd.js), migrated with `svc migrate-deployd` and exercised in chromium.

const FIXTURE = fileURLToPath(new URL('./fixtures/deployd-app', import.meta.url));
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const DEPLOYD_KEY = 'd0'.repeat(128);

const run = chromiumAvailable('the Deployd migration test in chromium');

describe('svc migrate-deployd', () => {
  let out: string;
  let stdout: string;

  beforeAll(async () => {
    out = join(await mkdtemp(join(tmpdir(), 'svc-migrated-')), 'app');
    const result = await runSvc(['migrate-deployd', FIXTURE, '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    stdout = result.stdout;
  });
  afterAll(async () => {
    if (out) await rm(join(out, '..'), { recursive: true, force: true });
  });

  it('prints every change and each Deployd module with its svc package or "no equivalent"', () => {
    expect(stdout).toContain('rename .dpd/ -> .svc/ (keys.json kept');
    expect(stdout).toContain('remove app.dpd');
    expect(stdout).toContain('public/index.html:6: <script src="/dpd.js"></script>  ->  <script src="/svc.js"></script>');
    expect(stdout).toContain("_svc.ajax.headers = { 'svc-ssh-key': 'not the key' };");
    expect(stdout).toMatch(/resources\/todos\/get\.js:2: dpd\.comments\.get\(.*-> {2}svc\.comments\.get\(/);
    expect(stdout).toContain('package.json: dpd-event -> @svc/type-event');
    expect(stdout).toContain('package.json: deployd -> @svc/server');
    expect(stdout).toContain('package.json: dpd-fileupload -> no equivalent');
    expect(stdout).toContain('package.json: scripts.start: dpd  ->  svc');
  });

  it('writes the migrated copy and leaves the Deployd folder as it was', async () => {
    expect(existsSync(join(FIXTURE, 'app.dpd'))).toBe(true);
    expect(existsSync(join(FIXTURE, '.dpd', 'keys.json'))).toBe(true);
    expect(await readFile(join(FIXTURE, 'public', 'index.html'), 'utf8')).toContain('/dpd.js');
    expect(existsSync(join(out, 'app.dpd'))).toBe(false);
    expect(JSON.parse(await readFile(join(out, '.svc', 'keys.json'), 'utf8'))).toEqual({ [DEPLOYD_KEY]: true });
    expect(await readFile(join(out, 'resources', 'todos', 'get.js'), 'utf8')).toContain('svc.comments.get(');
    expect(JSON.parse(await readFile(join(out, 'package.json'), 'utf8'))).toMatchObject({ dependencies: { '@svc/type-event': expect.any(String) as unknown }, scripts: { start: 'svc' } });
    expect((await runSvc(['showkey', out])).stdout.trim()).toBe(DEPLOYD_KEY);
  });

  it('--dry-run writes nothing; a folder that is no Deployd app is refused', async () => {
    const dry = join(out, '..', 'dry');
    const result = await runSvc(['migrate-deployd', FIXTURE, '--out', dry, '--dry-run']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('dry run: nothing was written');
    expect(existsSync(dry)).toBe(false);
    const empty = await mkdtemp(join(tmpdir(), 'svc-not-deployd-'));
    const refused = await runSvc(['migrate-deployd', empty]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/does not look like a Deployd app/);
    await rm(empty, { recursive: true, force: true });
  });

  describe.skipIf(!run)('the migrated app in chromium', () => {
    let svc: SvcProcess;
    let browser: Browser;

    beforeAll(async () => {
      // What `npm install` does for the new dependencies: the workspace's packages.
      await mkdir(join(out, 'node_modules', '@svc'), { recursive: true });
      for (const [name, dir] of [['server', 'apps/server'], ['type-event', 'packages/type-event'], ['type-email', 'packages/type-email']]) {
        await symlink(join(REPO, dir as string), join(out, 'node_modules', '@svc', name as string), 'dir');
      }
      svc = await startSvc([out]);
      browser = await launchChromium();
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await svc?.stop();
    });

    it("the page written for dpd.js passes every one of its checks; the app's events behave as in Deployd", async () => {
      const page = await (await browser.newContext()).newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      await page.goto(`${svc.url}/`);
      const results = await page.evaluate(() => (globalThis as unknown as { runChecks(): Promise<{ name: string; ok: boolean; detail: unknown }[]> }).runChecks());
      expect(results.filter((r) => !r.ok)).toEqual([]);
      expect(results.map((r) => r.name)).toEqual([
        'anonymous post refused',
        'me after login',
        'post with a callback',
        'On Get promise handlers bind this',
        'thrown string is a 400',
        'validation error',
        'beforerequest changed the query',
        'protect keeps the owner',
        'Event resource with dpd in a callback',
        'aftercommit emits reach the page',
      ]);
      expect(errors).toEqual([]);
      await page.context().close();
    }, 30_000);

    it('login.js bans a user; the Deployd root key still works as svc-ssh-key', async () => {
      const root = { 'content-type': 'application/json', 'svc-ssh-key': DEPLOYD_KEY };
      const made = await fetch(`${svc.url}/users`, { method: 'POST', headers: root, body: JSON.stringify({ username: 'banned-user', password: 'pw', banned: true }) });
      expect(made.status).toBe(200);
      const login = await fetch(`${svc.url}/users/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'banned-user', password: 'pw' }) });
      expect(login.status).toBe(403);
      expect(await login.json()).toMatchObject({ message: 'this account is banned' });
      expect(svc.stdout() + svc.stderr()).not.toMatch(/ignoring/);
    });
  });
});
