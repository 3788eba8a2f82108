import { existsSync } from 'node:fs';
import { cp, readFile, readdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TEMPLATE = fileURLToPath(new URL('../templates/app', import.meta.url));
const SERVER_PACKAGE = fileURLToPath(new URL('../package.json', import.meta.url));
const SERVER_DIR = dirname(SERVER_PACKAGE);

/**
 * The svc repository this server runs from, or undefined when it was installed from a registry:
 * apps/server of a pnpm workspace, not inside any node_modules.
 */
export function checkoutRoot(serverDir: string = SERVER_DIR): string | undefined {
  if (serverDir.split(sep).includes('node_modules')) return undefined;
  const root = dirname(dirname(serverDir));
  return existsSync(join(root, 'pnpm-workspace.yaml')) && existsSync(join(root, 'apps', 'server', 'package.json')) ? root : undefined;
}

/**
 * How the app gets @svc/server. Made by a server installed from the registry: a `^<version>`
 * range. Made from a checkout (before the packages are published, a range would not install): a
 * link to the checkout's apps/server, `file:` for npm and, through `pnpm.overrides`, `link:` for
 * pnpm (pnpm's `file:` would copy the package and install its workspace ranges). Neither reads a
 * registry: the checkout's own node_modules hold the server's dependencies.
 */
function serverDependency(version: string): { dependencies: Record<string, string>; pnpm?: { overrides: Record<string, string> } } {
  if (checkoutRoot() === undefined) return { dependencies: { '@svc/server': `^${version}` } };
  return { dependencies: { '@svc/server': `file:${SERVER_DIR}` }, pnpm: { overrides: { '@svc/server': `link:${SERVER_DIR}` } } };
}

/**
 * What an app's repository should not hold: the embedded store's data, the root keys (secrets) and
 * installed packages. (Written here rather than kept in the template: npm drops .gitignore files
 * from published packages.)
 */
const GITIGNORE = `# svc: the embedded store's data, its backups (they hold password hashes) and the app's root keys (secrets) stay out of the repository
data/
backups/
.svc/
node_modules/
`;

/** Scaffolds a new app folder from the template; refuses a folder that has files. */
export async function createApp(dir: string): Promise<void> {
  if (existsSync(dir) && (await readdir(dir)).length > 0) throw new Error(`${dir} already exists and is not empty`);
  await cp(TEMPLATE, dir, { recursive: true });
  const { version } = JSON.parse(await readFile(SERVER_PACKAGE, 'utf8')) as { version: string };
  const name = basename(dir).toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[._-]+/, '') || 'svc-app';
  const pkg = {
    name,
    private: true,
    type: 'module',
    scripts: { start: 'svc .', production: 'svc . --env production', types: 'svc types .' },
    ...serverDependency(version),
  };
  await writeFile(`${dir}/package.json`, `${JSON.stringify(pkg, null, 2)}\n`);
  await writeFile(`${dir}/.gitignore`, GITIGNORE);
}
