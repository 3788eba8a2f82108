import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { PACKAGES, REPO, run } from '../apps/server/test/packedPackages.js';

// The release as a maintainer makes it (docs/releasing.md), in a throwaway copy of the checkout so
// that nothing is committed or changed here: `pnpm changeset version` (the pending changesets
// become versions and CHANGELOGs), then `pnpm run publish-packages` (changeset publish, which
// publishes with pnpm). The packages' dist/ come from the checkout's build (`pnpm test` builds
// them first in CI, and `pnpm release` does the same).

export interface Release {
  /** Package name -> the version published. */
  versions: Record<string, string>;
  /** What `changeset version` wrote into @svc/server's CHANGELOG.md. */
  serverChangelog: string;
  out: string;
}

const GIT_ENV = { GIT_AUTHOR_NAME: 'svc release test', GIT_AUTHOR_EMAIL: 'release@example.invalid', GIT_COMMITTER_NAME: 'svc release test', GIT_COMMITTER_EMAIL: 'release@example.invalid' };

/** The checkout's files as git sees them (tracked and untracked, less what .gitignore ignores), then each package's dist/. */
async function copyCheckout(dest: string): Promise<void> {
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  const files = listed.stdout.split('\0').filter((f) => f && existsSync(join(REPO, f)));
  for (const file of files) {
    await mkdir(dirname(join(dest, file)), { recursive: true });
    await cp(join(REPO, file), join(dest, file), { verbatimSymlinks: true });
  }
  for (const pkg of PACKAGES) {
    if (!existsSync(join(REPO, pkg, 'dist'))) throw new Error(`${pkg}/dist is missing: run pnpm build first`);
    await cp(join(REPO, pkg, 'dist'), join(dest, pkg, 'dist'), { recursive: true });
  }
}

async function step(what: string, command: string, args: string[], cwd: string, env: Record<string, string>, log: string[]): Promise<string> {
  const done = await run(command, args, cwd, env);
  log.push(`$ ${command} ${args.join(' ')}\n${done.out}`);
  if (done.code !== 0) throw new Error(`${what} failed (${command} ${args.join(' ')}):\n${done.out}`);
  return done.out;
}

/** Copies the checkout to `dest`, versions it and publishes every public package to `registry` with `token`. */
export async function releaseFromCopy(dest: string, registry: string, token: string): Promise<Release> {
  const log: string[] = [];
  await copyCheckout(dest);
  const npmrc = join(dest, '..', 'publisher.npmrc');
  const host = registry.replace(/^https?:/, '');
  await writeFile(npmrc, `registry=${registry}\n${host}:_authToken=${token}\n`);
  // The publisher's settings in a file of their own: registry, token, nothing of this machine's.
  const env = { ...GIT_ENV, npm_config_userconfig: npmrc, npm_config_registry: registry };
  // Right after a release (or after the maintainer's own `changeset version`) nothing is pending,
  // and `changeset version` refuses to run: a patch of every package stands in, so the versions and
  // CHANGELOGs are always made here.
  const pending = (await readdir(join(dest, '.changeset'))).filter((f) => f.endsWith('.md') && f !== 'README.md');
  if (pending.length === 0) {
    const names = await Promise.all(PACKAGES.map(async (pkg) => (JSON.parse(await readFile(join(dest, pkg, 'package.json'), 'utf8')) as { name: string }).name));
    await writeFile(join(dest, '.changeset', 'release-test.md'), `---\n${names.map((n) => `'${n}': patch`).join('\n')}\n---\n\nThe release test's own patch (nothing was pending).\n`);
  }
  await step('git init', 'git', ['init', '-q', '-b', 'main'], dest, env, log);
  await step('git add', 'git', ['add', '-A'], dest, env, log);
  await step('git commit', 'git', ['commit', '-q', '-m', 'the checkout as it is'], dest, env, log);
  await step('pnpm install', 'pnpm', ['install', '--frozen-lockfile', '--offline'], dest, env, log);
  await step('changeset version', 'pnpm', ['changeset', 'version'], dest, env, log);
  await step('publish-packages', 'pnpm', ['run', 'publish-packages'], dest, env, log);
  const versions: Record<string, string> = {};
  for (const pkg of PACKAGES) {
    const { name, version } = JSON.parse(await readFile(join(dest, pkg, 'package.json'), 'utf8')) as { name: string; version: string };
    versions[name] = version;
  }
  const changelog = join(dest, 'apps', 'server', 'CHANGELOG.md');
  return { versions, serverChangelog: existsSync(changelog) ? await readFile(changelog, 'utf8') : '', out: log.join('\n') };
}
