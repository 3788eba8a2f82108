import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The folder of the built dashboard (index.html, app.js, app.css) that `@svc/server` serves at
 * /dashboard/. Built by `pnpm build` into dist/app; read from there when running from source too.
 */
export const dashboardAssetsDir: string = ((): string => {
  // From dist/index.js: dist/app. From src/index.ts (tests run on source): src/app holds the
  // sources, the build is in ../dist/app.
  const built = fileURLToPath(new URL('./app/', import.meta.url));
  return existsSync(`${built}app.js`) ? built : fileURLToPath(new URL('../dist/app/', import.meta.url));
})();

export { isDashboardRequest, matchesLogFilter, parseLogFilter } from './logFilter.js';
export type { AccessLogEntry, LogEntry, LogFilter, ServerLogEntry } from './logFilter.js';
