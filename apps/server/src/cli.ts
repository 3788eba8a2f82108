import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createConsoleLogger } from '@svc/core';
import { createApp } from './create.js';
import { generateKey, keysFile, readKeys } from './keys.js';
import { startApp } from './startApp.js';
import { writeTypes } from './typesCommand.js';
import { importCommand } from './importCommand.js';
import { coreVersion } from './installedTypes.js';
import { migrateDeployd } from './migrateDeployd.js';

const USAGE = `usage:
  svc [app-dir] [--port 2403] [--host <addr>] [--db <mongodb-url>] [--redis <url>] [--env development|production]
  svc create <dir>       scaffold a new app
  svc keygen [app-dir]   add a root key to .svc/keys.json
  svc showkey [app-dir]  print the app's root key
  svc types [app-dir] [--out <file>|-]  write TypeScript types for @svc/client (default <app>/svc-types.ts)
  svc import [app-dir] --resource <name> [--db <mongodb-url>]  run an Importer resource, with a progress bar
  svc migrate-deployd <dir> [--out <dir>] [--dry-run]  turn a Deployd 1.2 app into an svc app (prints every change)
environment: PORT, SVC_DB, SVC_REDIS, SVC_ENV, SVC_HOST mirror the flags`;

/** Runs the svc command line; answers the exit code (or never, while serving). */
export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        port: { type: 'string', short: 'p' },
        host: { type: 'string' },
        db: { type: 'string' },
        redis: { type: 'string' },
        out: { type: 'string', short: 'o' },
        resource: { type: 'string', short: 'r' },
        env: { type: 'string', short: 'e' },
        help: { type: 'boolean', short: 'h' },
        'dry-run': { type: 'boolean' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.version) {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    process.stdout.write(`${pkg.version}\n`);
    return 0;
  }
  const [command, arg] = positionals;
  switch (command) {
    case 'create': {
      if (!arg) return usage('svc create needs a folder');
      await createApp(resolve(arg));
      process.stdout.write(`created ${arg}; run it with: svc ${arg}\n`);
      return 0;
    }
    case 'keygen': {
      const key = await generateKey(resolve(arg ?? '.'));
      process.stdout.write(`created a root key in ${keysFile(resolve(arg ?? '.'))}: ${key.slice(0, 16)}...\n`);
      return 0;
    }
    case 'showkey': {
      const keys = await readKeys(resolve(arg ?? '.'));
      if (keys.length === 0) {
        process.stderr.write('no root key; create one with: svc keygen\n');
        return 1;
      }
      process.stdout.write(`${keys[0]}\n`);
      return 0;
    }
    case 'types': {
      const written = await writeTypes(arg ?? '.', str(values.out), createConsoleLogger());
      if (written.file === undefined) process.stdout.write(written.text);
      else process.stdout.write(`wrote ${written.file}\n`);
      return 0;
    }
    case 'import': {
      const resource = str(values.resource);
      if (!resource) return usage('svc import needs --resource <name> (an Importer resource)');
      const env = str(values.env) ?? process.env.SVC_ENV ?? 'development';
      if (env !== 'development' && env !== 'production') return usage(`--env must be development or production, not ${env}`);
      const db = str(values.db) ?? process.env.SVC_DB;
      return importCommand({ appDir: arg ?? '.', resource, env, progress: process.stderr, out: process.stdout, ...(db ? { db } : {}) });
    }
    case 'migrate-deployd': {
      if (!arg) return usage('svc migrate-deployd needs the Deployd app folder');
      try {
        const out = str(values.out);
        await migrateDeployd({ dir: arg, ...(out ? { out } : {}), dryRun: values['dry-run'] === true, version: await coreVersion(), print: (line) => process.stdout.write(`${line}\n`) });
      } catch (err) {
        process.stderr.write(`svc migrate-deployd: ${(err as Error).message}\n`);
        return 1;
      }
      return 0;
    }
    default:
      return serve(command ?? '.', values);
  }
}

async function serve(appDir: string, values: Record<string, string | boolean | undefined>): Promise<number> {
  const env = str(values.env) ?? process.env.SVC_ENV ?? 'development';
  if (env !== 'development' && env !== 'production') return usage(`--env must be development or production, not ${env}`);
  const portText = str(values.port) ?? process.env.PORT ?? '2403';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return usage(`--port must be a port number, not ${portText}`);
  const logger = createConsoleLogger();
  const host = str(values.host) ?? process.env.SVC_HOST;
  const db = str(values.db) ?? process.env.SVC_DB;
  const redis = str(values.redis) ?? process.env.SVC_REDIS;
  let app;
  try {
    app = await startApp({ appDir, port, env, logger, ...(host ? { host } : {}), ...(db ? { db } : {}), ...(redis ? { redis } : {}) });
  } catch (err) {
    process.stderr.write(`svc: ${(err as Error).message}\n`);
    return 1;
  }
  if (env === 'development' && app.host === '127.0.0.1') {
    logger.info('development mode: any svc-ssh-key is root, so the server listens on 127.0.0.1 only (use --host to change)');
  }
  process.stdout.write(`listening on port ${app.port}\n`);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      process.exit(1);
    }
    stopping = true;
    logger.info(`${signal}: shutting down`);
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('shutdown failed', { error: err });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  return new Promise<number>(() => {});
}

function str(value: string | boolean | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function usage(message: string): number {
  process.stderr.write(`svc: ${message}\n${USAGE}\n`);
  return 2;
}
