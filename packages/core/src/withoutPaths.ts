import { readdirSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';

/** The top-level folders of this machine: an absolute path starting with one is the server's. */
const ROOTS = (() => {
  try {
    return new Set(readdirSync('/'));
  } catch {
    return new Set<string>();
  }
})();
/** What may follow in a path: anything up to a space, a quote or punctuation that ends it. */
const TAIL = String.raw`[^\s'"${'`'}<>|(),;:\]]*`;
/** An absolute path not inside a URL (`http://h/a` has its / after a : or a host name). */
const ABSOLUTE = new RegExp(String.raw`(?<![\w:/.~-])/([^\s/'"${'`'}<>|(),;\]]+)${TAIL}`, 'g');
const WINDOWS = new RegExp(String.raw`\b[A-Za-z]:\\${TAIL}`, 'g');
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A message without the server's file paths, for an error answer (fs errors name the files they
 * failed on: `ENAMETOOLONG: name too long, mkdir '/srv/app/resources/...'`). A path is taken for
 * the server's when it is under the current, home or temporary folder, or when its first folder
 * exists at the root of this machine, so that a resource path such as /todos/1 is kept.
 */
export function withoutPaths(message: string): string {
  let out = message;
  for (const dir of [process.cwd(), homedir(), tmpdir()]) {
    if (dir.length > 1) out = out.replace(new RegExp(`${escape(dir)}(?:[/\\\\]${TAIL})?`, 'g'), '…');
  }
  return out.replace(ABSOLUTE, (path: string, first: string) => (ROOTS.has(first) ? '…' : path)).replace(WINDOWS, '…');
}
