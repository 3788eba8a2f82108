import { readdirSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('.', import.meta.url));

// Tests run on source: every workspace package name resolves to its src/index.ts
// (apps/server is @svc/server, so end-to-end tests of type packages can start an app).
// Exact names only (a string alias would also rewrite '@svc/client/server'); subpath entries of a
// package are src/<subpath>.ts.
const alias: { find: RegExp; replacement: string }[] = [{ find: /^@svc\/client\/server$/, replacement: `${root}packages/client/src/server.ts` }];
for (const dir of ['packages', 'apps']) {
  for (const name of readdirSync(`${root}${dir}`)) {
    const entry = `${root}${dir}/${name}/src/index.ts`;
    if (existsSync(entry)) alias.push({ find: new RegExp(`^@svc/${name}$`), replacement: entry });
  }
}

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'bench/test/**/*.test.ts'],
    // isolated-vm refuses to load with the V8 startup snapshot on.
    execArgv: ['--no-node-snapshot'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', './tools/summary-reporter.ts'],
  },
});
