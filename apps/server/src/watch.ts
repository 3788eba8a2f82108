import { existsSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '@svc/core';

/** How long the folder must stay quiet before a reload (an editor's save is several writes). */
const SETTLE_MS = 150;

/**
 * Development: watches an app's resources/, migrations/ and app.json and calls `reload` once the changes
 * settle. Reloads never overlap: changes made during one are picked up by the next. Answers a
 * function that stops watching.
 */
export function watchApp(appDir: string, reload: () => Promise<void>, logger: Logger): () => void {
  const watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;

  const run = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = reload()
      .catch((err: unknown) => logger.error(`reload failed, still serving the previous version: ${(err as Error).message}`))
      .finally(() => {
        running = undefined;
        if (again && !stopped) {
          again = false;
          run();
        }
      });
  };
  const changed = (file: string | null): void => {
    // Editors' swap and backup files are not the app's.
    if (file !== null && !/\.(js|json)$/.test(file)) return;
    clearTimeout(timer);
    timer = setTimeout(run, SETTLE_MS);
  };
  const add = (path: string, recursive: boolean): void => {
    try {
      const w = watch(path, { recursive, persistent: false }, (_event, file) => changed(file));
      w.on('error', (err) => logger.warn(`watching ${path} stopped: ${err.message}`));
      watchers.push(w);
    } catch (err) {
      logger.warn(`cannot watch ${path} for changes: ${(err as Error).message}`);
    }
  };
  add(join(appDir, 'resources'), true);
  // A migration file arriving (a git pull, svc migrate new) is applied by the reload.
  let migrations = existsSync(join(appDir, 'migrations'));
  if (migrations) add(join(appDir, 'migrations'), false);
  // app.json may not exist yet: watching the folder (not recursively) sees it appear.
  const top = watch(appDir, { persistent: false }, (_event, file) => {
    if (file === 'app.json' || file === 'resources') changed('app.json');
    if (file === 'migrations' && !stopped && !migrations && existsSync(join(appDir, 'migrations'))) {
      migrations = true;
      add(join(appDir, 'migrations'), false);
      changed('migrations.json');
    }
  });
  watchers.push(top);
  return () => {
    stopped = true;
    clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}
