import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Where an app keeps its root keys: `.svc/keys.json`, or Deployd's `.dpd/keys.json`. */
export function keysFile(appDir: string): string {
  const own = join(appDir, '.svc', 'keys.json');
  const deployd = join(appDir, '.dpd', 'keys.json');
  return !existsSync(own) && existsSync(deployd) ? deployd : own;
}

/** The app's root keys (Deployd's format: `{"<hex key>": true}`). */
export async function readKeys(appDir: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(keysFile(appDir), 'utf8');
  } catch {
    return [];
  }
  const parsed = JSON.parse(text) as Record<string, unknown>;
  return Object.keys(parsed).filter((k) => parsed[k] === true);
}

/** Adds a new random root key and answers it. */
export async function generateKey(appDir: string): Promise<string> {
  const file = join(appDir, '.svc', 'keys.json');
  await mkdir(join(appDir, '.svc'), { recursive: true });
  const existing: Record<string, boolean> = existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as Record<string, boolean>) : {};
  const key = randomBytes(128).toString('hex');
  existing[key] = true;
  await writeFile(file, `${JSON.stringify(existing, null, 2)}\n`, { mode: 0o600 });
  return key;
}
