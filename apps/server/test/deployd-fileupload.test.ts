import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSvc, startSvc } from './cli.js';
import type { SvcProcess } from './cli.js';

// Issue 22: a Deployd app with a dpd-fileupload resource (files in public/upload/, as Deployd
// kept them) migrated with `svc migrate-deployd`: the package is mapped, the files move out of
// the static site, and the migrated app starts and serves old and new uploads.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

describe('svc migrate-deployd: a Deployd app with a Fileupload resource', { timeout: 60_000 }, () => {
  let root: string;
  let out: string;
  let stdout: string;
  let svc: SvcProcess | undefined;

  beforeAll(async () => {
    if (!existsSync(join(REPO, 'packages/type-fileupload/dist/index.js'))) throw new Error('@svc/type-fileupload is not built: run `pnpm build` first');
    root = await mkdtemp(join(tmpdir(), 'svc-deployd-fileupload-'));
    const app = join(root, 'deployd');
    await mkdir(join(app, 'resources', 'photos'), { recursive: true });
    await mkdir(join(app, 'public', 'upload', 'avatars'), { recursive: true });
    await writeFile(join(app, 'app.dpd'), '');
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'gallery', dependencies: { deployd: '^1.2.0', 'dpd-fileupload': '^0.0.17' }, scripts: { start: 'dpd' } }));
    // The config dpd-fileupload's dashboard writes.
    await writeFile(join(app, 'resources', 'photos', 'config.json'), JSON.stringify({ type: 'Fileupload', directory: 'upload', authorization: false, uniqueFilename: false }));
    await writeFile(join(app, 'resources', 'photos', 'upload.js'), "if (filesize === 0) cancel('empty file', 400);\n");
    await writeFile(join(app, 'public', 'index.html'), '<script src="/dpd.js"></script>\n<img src="/upload/avatars/me.png">\n<a href=\'upload/page.html\'>page</a> the upload/ folder\n');
    await writeFile(join(app, 'public', 'app.js'), "img.src = '/upload/' + f.subdir + '/' + f.filename;\n");
    // An uploaded script is data: it moves, and is not rewritten.
    await writeFile(join(app, 'public', 'upload', 'x.js'), "dpd.todos.get(); fetch('/upload/x');\n");
    await writeFile(join(app, 'public', 'upload', 'avatars', 'me.png'), 'old png');
    await writeFile(join(app, 'public', 'upload', 'page.html'), '<script>alert(document.cookie)</script>');
    out = join(root, 'svc');
    const result = await runSvc(['migrate-deployd', app, '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    stdout = result.stdout;
  });
  afterAll(async () => {
    await svc?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('maps dpd-fileupload to @svc/type-fileupload and moves public/upload/ out of the static site', async () => {
    expect(stdout).toContain('package.json: dpd-fileupload -> @svc/type-fileupload');
    expect(stdout).toContain('move public/upload/ -> upload/ (the files of Fileupload resource photos');
    expect(stdout).not.toMatch(/type Fileupload: no equivalent/);
    expect(JSON.parse(await readFile(join(out, 'package.json'), 'utf8'))).toMatchObject({ dependencies: { '@svc/type-fileupload': expect.any(String) as unknown } });
    expect(await readFile(join(out, 'upload', 'avatars', 'me.png'), 'utf8')).toBe('old png');
    expect(existsSync(join(out, 'public', 'upload'))).toBe(false);
    // Links of the pages to the files now reach the resource; prose is left alone.
    expect(await readFile(join(out, 'public', 'index.html'), 'utf8')).toBe('<script src="/svc.js"></script>\n<img src="/photos/avatars/me.png">\n<a href=\'/photos/page.html\'>page</a> the upload/ folder\n');
    expect(await readFile(join(out, 'public', 'app.js'), 'utf8')).toBe("img.src = '/photos/' + f.subdir + '/' + f.filename;\n");
    expect(stdout).toContain(`public/app.js:1: img.src = '/upload/' + f.subdir + '/' + f.filename;  ->  img.src = '/photos/' + f.subdir + '/' + f.filename;`);
    expect(await readFile(join(out, 'upload', 'x.js'), 'utf8')).toBe("dpd.todos.get(); fetch('/upload/x');\n");
  });

  it('the migrated app starts, takes uploads with FormData, lists them, and serves old and new files safely', async () => {
    // What `npm install` does for the new dependencies: the workspace's packages.
    await mkdir(join(out, 'node_modules', '@svc'), { recursive: true });
    for (const [name, dir] of [['server', 'apps/server'], ['type-fileupload', 'packages/type-fileupload']] as const) {
      await symlink(join(REPO, dir), join(out, 'node_modules', '@svc', name), 'dir');
    }
    svc = await startSvc([out]);
    const data = new FormData();
    data.append('file', new Blob(['new png'], { type: 'image/png' }), 'new.png');
    const res = await fetch(`${svc.url}/photos?subdir=avatars&owner=ada`, { method: 'POST', body: data });
    expect(res.status).toBe(200);
    const [rec] = (await res.json()) as Record<string, unknown>[];
    expect(rec).toMatchObject({ filename: 'new.png', subdir: 'avatars', owner: 'ada', filesize: 7 });
    expect(await readFile(join(out, 'upload', 'avatars', 'new.png'), 'utf8')).toBe('new png');

    const empty = new FormData();
    empty.append('file', new Blob([]), 'empty.png');
    expect((await fetch(`${svc.url}/photos`, { method: 'POST', body: empty })).status).toBe(400);

    const list = (await (await fetch(`${svc.url}/photos`)).json()) as Record<string, unknown>[];
    expect(list.map((r) => r.filename)).toEqual(['new.png']);
    const old = await fetch(`${svc.url}/photos/avatars/me.png`);
    expect(old.status).toBe(200);
    expect(old.headers.get('content-type')).toBe('image/png');
    expect(await old.text()).toBe('old png');
    const page = await fetch(`${svc.url}/photos/page.html`);
    expect(page.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    // The static site no longer holds the uploads: an uploaded page cannot run on the app's origin.
    expect((await fetch(`${svc.url}/upload/page.html`)).status).toBe(404);
    const del = await fetch(`${svc.url}/photos/${String(rec?.id)}`, { method: 'DELETE' });
    expect(await del.json()).toEqual({ statusCode: 200, message: 'File new.png successfuly deleted' });
    expect(svc.stdout() + svc.stderr()).not.toMatch(/ignoring|not installed/);
  });
});
