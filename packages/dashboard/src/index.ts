import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The folder of the built dashboard (index.html, app.js, app.css) that `@svc/server` serves at
 * /dashboard/. Built by `pnpm build` into dist/app; read from there when running from source too.
 */
export const dashboardAssetsDir: string = ((): string => {
  const built = fileURLToPath(new URL('./app/', import.meta.url));
  return existsSync(built) ? built : fileURLToPath(new URL('../dist/app/', import.meta.url));
})();
