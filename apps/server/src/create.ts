import { existsSync } from 'node:fs';
import { cp, readFile, readdir, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const TEMPLATE = fileURLToPath(new URL('../templates/app', import.meta.url));
const SERVER_PACKAGE = fileURLToPath(new URL('../package.json', import.meta.url));

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
    dependencies: { '@svc/server': `^${version}` },
  };
  await writeFile(`${dir}/package.json`, `${JSON.stringify(pkg, null, 2)}\n`);
  await writeFile(`${dir}/.gitignore`, GITIGNORE);
}
