import { existsSync } from 'node:fs';
import { cp, readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const TEMPLATE = fileURLToPath(new URL('../templates/app', import.meta.url));

/** Scaffolds a new app folder from the template; refuses a folder that has files. */
export async function createApp(dir: string): Promise<void> {
  if (existsSync(dir) && (await readdir(dir)).length > 0) throw new Error(`${dir} already exists and is not empty`);
  await cp(TEMPLATE, dir, { recursive: true });
}
