import { join, resolve } from 'node:path';
import { createEmbeddedStore, createMongoStore, createServer, createConsoleLogger } from '@svc/core';
import type { Logger, Store, SvcServer } from '@svc/core';
import { buildResources } from './buildResources.js';
import { readKeys } from './keys.js';
import { loadApp } from './loadApp.js';

/** Options of {@link startApp}. */
export interface StartOptions {
  appDir: string;
  /** 0 picks a free port. Default 2403. */
  port?: number;
  /** Default: loopback in development, all interfaces in production. */
  host?: string;
  /** A mongodb:// URL; absent means the embedded store under <app>/data. */
  db?: string;
  env?: 'development' | 'production';
  logger?: Logger;
}

/** A running app. */
export interface RunningApp {
  server: SvcServer;
  port: number;
  host: string;
  url: string;
  close(): Promise<void>;
}

/** Loads an app folder and serves it. */
export async function startApp(options: StartOptions): Promise<RunningApp> {
  const appDir = resolve(options.appDir);
  const env = options.env ?? 'development';
  const logger = options.logger ?? createConsoleLogger();
  const app = await loadApp(appDir, logger);
  const store: Store = options.db ? await createMongoStore({ url: options.db }) : await createEmbeddedStore({ dir: join(appDir, 'data') });
  try {
    const resources = buildResources({ app, store, logger });
    const server = await createServer({
      store,
      resources,
      env,
      logger,
      publicDir: join(appDir, 'public'),
      rootKeys: await readKeys(appDir),
      ...(app.settings.bodyLimit !== undefined ? { bodyLimit: app.settings.bodyLimit } : {}),
      ...(app.settings.sessionIdleSeconds !== undefined ? { sessions: { idleSeconds: app.settings.sessionIdleSeconds } } : {}),
      ...(app.settings.methodOverrideKey !== undefined ? { methodOverrideKey: app.settings.methodOverrideKey } : {}),
      ...(app.settings.cors?.origins !== undefined ? { cors: { origins: app.settings.cors.origins } } : {}),
      crossSiteCookies: app.settings.cors?.crossSiteCookies === true,
    });
    // Any root key works in development, so the development server stays on this machine.
    const host = options.host ?? (env === 'production' ? '0.0.0.0' : '127.0.0.1');
    const port = await server.listen(options.port ?? 2403, host);
    return {
      server,
      port,
      host,
      url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
      close: () => server.close(),
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}
