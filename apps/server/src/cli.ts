import { existsSync, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import type { LogFormat } from '@svc/core';
import { createApp } from './create.js';
import { envRootKeys, generateKey, keysFile, readKeys, revokeKey } from './keys.js';

// Each command loads what it runs when it runs (the server, @svc/core, the importer, ...): help,
// a usage error, create, keygen and showkey need none of it, and loading it all took ~0.5 s of
// CPU before any of them answered (0.6 s against 0.1 s for `svc help`).

const USAGE = `usage:
  svc [app-dir] [--port 2403] [--host <addr>] [--db <mongodb-url>] [--redis <url>] [--env development|production] [--log-format text|json]
  svc create <dir>       scaffold a new app
  svc keygen [app-dir] [--revoke <key>]  add a root key to .svc/keys.json, or remove one
  svc showkey [app-dir]  print the app's root key
  svc types [app-dir] [--out <file>|-]  write TypeScript types for @svc/client (default <app>/svc-types.ts)
  svc import [app-dir] --resource <name> [--db <mongodb-url>]  run an Importer resource, with a progress bar
  svc export [app-dir] [--out <file>|-] [--db <mongodb-url>]  every collection to a JSON lines file (default: standard output)
  svc import [app-dir] --from <file> [--replace] [--db <mongodb-url>]  load an export into the app's store
  svc backup [app-dir] [--out <file>] [--db <mongodb-url>]  an export of the store, also while the server runs
  svc restore [app-dir] --from <file> [--db <mongodb-url>]  replace the store's objects with a backup's
  svc migrate status|up|down [app-dir] [--db <mongodb-url>] [--dry-run] [--id <migration>]  the app's schema migrations (migrations/)
  svc migrate new [app-dir] --collection <name> [--rename a:b] [--remove p] [--add p:type[=json]] [--convert p:from:to] [--index p] [--unique p] [--drop-index p]
  svc migrate-deployd <dir> [--out <dir>] [--dry-run]  turn a Deployd 1.2 app into an svc app (prints every change)
  svc help [command]     this text, or one command's
environment: PORT, SVC_DB, SVC_REDIS, SVC_ENV, SVC_HOST, SVC_LOG_FORMAT mirror the flags; SVC_ROOT_KEYS adds root keys (comma-separated)`;

/** Each command: its usage line, what it does, its flags and how many positionals it takes. */
const COMMANDS: Record<string, { usage: string; about: string; flags: readonly string[]; max: number }> = {
  serve: {
    usage: 'svc [app-dir] [--port 2403] [--host <addr>] [--db <mongodb-url>] [--redis <url>] [--env development|production] [--log-format text|json]',
    about:
      'Serves the app folder (default: the current folder). Development listens on 127.0.0.1 and takes any root key from this machine; production needs a key of .svc/keys.json or SVC_ROOT_KEYS. The log (stderr) has a line per answered request; --log-format json writes one JSON object per line.',
    flags: ['port', 'host', 'db', 'redis', 'env', 'log-format'],
    max: 1,
  },
  create: {
    usage: 'svc create <dir>',
    about:
      'Scaffolds a new app (a collection and users with access rules, a page, package.json, .gitignore) in an empty or new folder; then `npm install` (or pnpm install) and `npm start` in it. Made by svc from the registry (npx @svc/server create <dir>), the app depends on "@svc/server": "^<this version>" and installs from the registry. Made from a checkout of the svc repository (pnpm svc create <dir>), it links to that checkout instead ("file:" for npm, "link:" for pnpm in package.json), so it installs with no registry; once the packages are published, replace both with "^<version>" to install from the registry.',
    flags: [],
    max: 1,
  },
  keygen: {
    usage: 'svc keygen [app-dir] [--revoke <key>]',
    about: "Adds a root key to the app's .svc/keys.json (production requests send it as svc-ssh-key); --revoke removes one (the whole key or its first 16 characters or more), refused by a running server from its next request.",
    flags: ['revoke'],
    max: 1,
  },
  showkey: { usage: 'svc showkey [app-dir]', about: "Prints the app's first root key.", flags: [], max: 1 },
  types: { usage: 'svc types [app-dir] [--out <file>|-]', about: 'Writes TypeScript types of the app for @svc/client (default <app>/svc-types.ts; - prints them).', flags: ['out'], max: 1 },
  import: {
    usage: 'svc import [app-dir] --resource <name> [--db <mongodb-url>] [--env development|production]\n       svc import [app-dir] --from <file> [--replace] [--db <mongodb-url>]',
    about:
      'With --resource: runs an Importer resource with a progress bar. With --from: loads a file written by svc export or svc backup into the app\'s store (the embedded one in <app>/data, or MongoDB with --db), all or nothing; a store that holds objects is refused unless --replace, which exports them to <app>/backups/ first. The server must be stopped.',
    flags: ['resource', 'db', 'env', 'from', 'replace'],
    max: 1,
  },
  export: {
    usage: 'svc export [app-dir] [--out <file>|-] [--db <mongodb-url>]',
    about: "Writes every collection of the app's store (the embedded one in <app>/data, or MongoDB with --db), users with their password hashes, as JSON lines (docs/deploying.md). Default: standard output. Works while the server runs.",
    flags: ['out', 'db'],
    max: 1,
  },
  backup: {
    usage: 'svc backup [app-dir] [--out <file>] [--db <mongodb-url>]',
    about: 'Takes a backup (the export format) of the running or stopped app: with the embedded store, each collection exactly as it was at one instant, holding every write acknowledged before the backup started. Default file: <app>/backups/backup-<time>.jsonl (mode 0600).',
    flags: ['out', 'db'],
    max: 1,
  },
  restore: {
    usage: 'svc restore [app-dir] --from <file> [--db <mongodb-url>]',
    about: "Replaces the objects of the app's store with those of a backup or export (svc import --from <file> --replace): what the store held is exported to <app>/backups/ first. The server must be stopped.",
    flags: ['from', 'db'],
    max: 1,
  },
  migrate: {
    usage:
      'svc migrate status|up|down [app-dir] [--db <mongodb-url>] [--dry-run] [--id <migration>]\n       svc migrate new [app-dir] --collection <name> [--rename <from>:<to>] [--remove <p>] [--add <p>:<type>[=<json>]] [--convert <p>:<from type>:<to type>] [--index <p>] [--unique <p>] [--drop-index <p>]',
    about:
      "The app's migrations (migrations/*.json, docs/migrations.md), on its store (the embedded one in <app>/data: the server must be stopped; or MongoDB with --db). status: each migration, applied, pending or failed, with the objects each step changed. up: applies the pending ones (a start does too); --dry-run counts the objects each step would change, changing nothing. down: undoes the newest applied migration (or --id), step by step; --dry-run counts. new: writes a migration file for changes made to config.json by hand (each flag any number of times), or an empty one to fill in.",
    flags: ['db', 'dry-run', 'id', 'collection', 'rename', 'remove', 'add', 'convert', 'index', 'unique', 'drop-index'],
    max: 2,
  },
  'migrate-deployd': {
    usage: 'svc migrate-deployd <dir> [--out <dir>] [--dry-run]',
    about: 'Turns a Deployd 1.2 app into an svc app (in place, or a copy with --out), printing every change; --dry-run writes nothing.',
    flags: ['out', 'dry-run'],
    max: 1,
  },
  help: { usage: 'svc help [command]', about: 'Prints the usage of svc or of one command.', flags: [], max: 1 },
};

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
        'log-format': { type: 'string' },
        from: { type: 'string' },
        replace: { type: 'boolean' },
        revoke: { type: 'string' },
        version: { type: 'boolean', short: 'v' },
        id: { type: 'string' },
        collection: { type: 'string' },
        rename: { type: 'string', multiple: true },
        remove: { type: 'string', multiple: true },
        add: { type: 'string', multiple: true },
        convert: { type: 'string', multiple: true },
        index: { type: 'string', multiple: true },
        unique: { type: 'string', multiple: true },
        'drop-index': { type: 'string', multiple: true },
      },
    });
  } catch (err) {
    return usage(argumentError(err));
  }
  const { values, positionals } = parsed;
  if (values.version) {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    process.stdout.write(`${pkg.version}\n`);
    return 0;
  }
  const first = positionals[0];
  const command = first !== undefined && Object.hasOwn(COMMANDS, first) && first !== 'serve' ? first : 'serve';
  const args = command === 'serve' ? positionals : positionals.slice(1);
  const spec = COMMANDS[command] as (typeof COMMANDS)[string];
  if (values.help) return help(command);
  if (args.length > spec.max) return usage(`${command === 'serve' ? 'svc' : `svc ${command}`}: unexpected argument ${args[spec.max]}`, command);
  const given = Object.keys(values).filter((flag) => values[flag as keyof typeof values] !== undefined);
  const foreign = given.find((flag) => !spec.flags.includes(flag));
  if (foreign !== undefined) return usage(`--${foreign} does not apply to ${command === 'serve' ? 'serving an app' : `svc ${command}`}`, command);
  try {
    if (command === 'migrate') return await migrate(args, values);
    // The flags given several times are svc migrate new's only (refused above for other commands).
    return await run(command, args[0], values as Record<string, string | boolean | undefined>);
  } catch (err) {
    // Expected failures (a missing folder, a refused argument) are one line; nothing prints a stack.
    process.stderr.write(`svc: ${(err as Error).message}\n`);
    return 1;
  }
}

async function run(command: string, arg: string | undefined, values: Record<string, string | boolean | undefined>): Promise<number> {
  switch (command) {
    case 'help':
      return help(arg);
    case 'create': {
      if (!arg) return usage('svc create needs a folder', 'create');
      await createApp(resolve(arg));
      process.stdout.write(`created ${arg}; run it with: ${svcCommand()} ${shellQuote(arg)}\n`);
      return 0;
    }
    case 'keygen': {
      const dir = await appFolder(arg ?? '.');
      const revoke = str(values.revoke);
      if (revoke !== undefined) {
        if (revoke.trim() === '') return usage('--revoke needs the key to remove', 'keygen');
        const file = await revokeKey(dir, revoke.trim());
        process.stdout.write(`revoked the key ${revoke.trim().slice(0, 16)}... in ${file}; a running server refuses it from its next request\n`);
        return 0;
      }
      const key = await generateKey(dir);
      process.stdout.write(`created a root key in ${keysFile(dir)}: ${key.slice(0, 16)}...\n`);
      return 0;
    }
    case 'showkey': {
      const keys = await readKeys(await appFolder(arg ?? '.'));
      if (keys.length === 0) {
        process.stderr.write('svc: no root key; create one with: svc keygen\n');
        return 1;
      }
      process.stdout.write(`${keys[0]}\n`);
      return 0;
    }
    case 'types': {
      const [{ writeTypes }, { createConsoleLogger }] = await Promise.all([import('./typesCommand.js'), import('@svc/core')]);
      const written = await writeTypes(await appFolder(arg ?? '.'), str(values.out), createConsoleLogger());
      if (written.file === undefined) process.stdout.write(written.text);
      else process.stdout.write(`wrote ${written.file}\n`);
      return 0;
    }
    case 'export':
    case 'backup': {
      const appDir = await appFolder(arg ?? '.');
      const out = str(values.out);
      if (out === '') return usage('--out needs a file', command);
      const { exportCommand, fileTime } = await import('./transferCommands.js');
      const file = out ?? (command === 'backup' ? join(appDir, 'backups', `backup-${fileTime()}.jsonl`) : '-');
      const db = str(values.db) ?? process.env.SVC_DB;
      return exportCommand({ appDir, file: file === '-' ? '-' : resolve(file), err: process.stderr, out: process.stdout, ...(db ? { db } : {}) });
    }
    case 'restore':
    case 'import': {
      const from = str(values.from);
      if (from !== undefined || command === 'restore') {
        if (values.resource !== undefined || values.env !== undefined) return usage('--from loads an export; --resource runs an Importer: one or the other', command);
        if (!from) return usage(`svc ${command} needs --from <file>`, command);
        const db = str(values.db) ?? process.env.SVC_DB;
        const appDir = await appFolder(arg ?? '.');
        const { importFileCommand } = await import('./transferCommands.js');
        return importFileCommand({ appDir, file: resolve(from), replace: command === 'restore' || values.replace === true, err: process.stderr, out: process.stdout, ...(db ? { db } : {}) });
      }
      if (values.replace !== undefined) return usage('--replace goes with --from <file>', 'import');
      const resource = str(values.resource);
      if (!resource) return usage('svc import needs --from <file> (an export) or --resource <name> (an Importer resource)', 'import');
      const { env } = envOf(values);
      if (env !== 'development' && env !== 'production') return usage(`--env must be development or production, not ${env}`, 'import');
      const db = str(values.db) ?? process.env.SVC_DB;
      const { importCommand } = await import('./importCommand.js');
      return importCommand({ appDir: await appFolder(arg ?? '.'), resource, env, progress: process.stderr, out: process.stdout, ...(db ? { db } : {}) });
    }
    case 'migrate-deployd':
      return migrateDeploydCommand(arg, values);
    default:
      return serve(arg ?? '.', values);
  }
}

/** svc migrate-deployd <dir> [--out <dir>] [--dry-run]. */
async function migrateDeploydCommand(arg: string | undefined, values: Record<string, string | boolean | undefined>): Promise<number> {
  if (!arg) return usage('svc migrate-deployd needs the Deployd app folder', 'migrate-deployd');
  const out = str(values.out);
  // An empty --out (an unset shell variable) must not turn a copy into an in-place migration.
  if (out === '') return usage('--out needs a folder', 'migrate-deployd');
  // SIGINT or SIGTERM stops the migration and undoes it; a terminal's Ctrl-C reaches this process
  // twice when started by bin/svc.js (directly, and forwarded), so a third one leaves at once.
  const interrupt = new AbortController();
  let signals = 0;
  const stop = (): void => {
    if (++signals >= 3) process.exit(130);
    interrupt.abort();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    const [{ coreVersion }, { migrateDeployd }] = await Promise.all([import('./installedTypes.js'), import('./migrateDeployd.js')]);
    const version = await coreVersion();
    await migrateDeployd({ dir: arg, ...(out === undefined ? {} : { out }), dryRun: values['dry-run'] === true, version, signal: interrupt.signal, print: (line) => process.stdout.write(`${line}\n`) });
  } catch (err) {
    if (!interrupt.signal.aborted) throw err;
    // Stopped while reading (an AbortError), or while writing (undone, or why it could not be).
    process.stderr.write(`svc: ${(err as Error).name === 'AbortError' ? 'interrupted; nothing was changed' : (err as Error).message}\n`);
    return 130;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  return 0;
}

async function migrate(args: string[], values: Record<string, string | boolean | string[] | undefined>): Promise<number> {
  const [action, dir] = args;
  if (action === undefined) return usage('svc migrate needs status, up, down or new', 'migrate');
  if (!['status', 'up', 'down', 'new'].includes(action)) return usage(`svc migrate ${action}: use status, up, down or new`, 'migrate');
  const stepFlags = ['rename', 'remove', 'add', 'convert', 'index', 'unique', 'drop-index'];
  if (action !== 'new' && [...stepFlags, 'collection'].some((flag) => values[flag] !== undefined)) return usage(`--collection and the step flags go with svc migrate new`, 'migrate');
  if (action === 'new' && (values['dry-run'] !== undefined || values.id !== undefined || values.db !== undefined)) return usage('svc migrate new writes a file: --db, --id and --dry-run do not apply', 'migrate');
  if (action !== 'down' && values.id !== undefined) return usage('--id goes with svc migrate down', 'migrate');
  const list = (flag: string): string[] | undefined => (Array.isArray(values[flag]) ? (values[flag] as string[]) : undefined);
  const db = (typeof values.db === 'string' ? values.db : undefined) ?? process.env.SVC_DB;
  const { migrateCommand } = await import('./migrateCommand.js');
  return migrateCommand({
    appDir: await appFolder(dir ?? '.'),
    action,
    dryRun: values['dry-run'] === true,
    ...(db ? { db } : {}),
    ...(typeof values.id === 'string' ? { id: values.id } : {}),
    ...(typeof values.collection === 'string' ? { collection: values.collection } : {}),
    steps: { rename: list('rename'), remove: list('remove'), add: list('add'), convert: list('convert'), index: list('index'), unique: list('unique'), dropIndex: list('drop-index') },
    out: process.stdout,
    err: process.stderr,
  });
}

/**
 * The app folder an argument names: it must exist and look like an app (resources/, app.json or a
 * Deployd app.dpd), so that a typo or /tmp is not served as an empty app with a new data/ folder.
 */
async function appFolder(arg: string): Promise<string> {
  const dir = resolve(arg);
  let isDir: boolean;
  try {
    isDir = (await stat(dir)).isDirectory();
  } catch {
    throw new Error(`${arg}: no such folder; create an app with: svc create ${arg}`);
  }
  if (!isDir) throw new Error(`${arg} is not a folder`);
  const marks = ['resources', 'app.json', 'app.dpd'];
  if (!marks.some((mark) => existsSync(join(dir, mark)))) {
    throw new Error(`${arg} is not an svc app folder (it has no resources/ or app.json); create one with: svc create <dir>`);
  }
  return dir;
}

/** parseArgs' messages, in svc's words. */
function argumentError(err: unknown): string {
  const message = (err as Error).message;
  const unknown = /Unknown option '([^']+)'/.exec(message);
  if (unknown) return `unknown option ${unknown[1]}`;
  const missing = /Option '([^']+)'.* argument missing/.exec(message);
  if (missing) return `${missing[1]} needs a value`;
  return message.split('\n')[0] ?? message;
}

function help(command: string | undefined): number {
  if (command === undefined || !Object.hasOwn(COMMANDS, command)) {
    if (command !== undefined && command !== 'serve') return usage(`no command ${command}`);
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const spec = COMMANDS[command] as (typeof COMMANDS)[string];
  process.stdout.write(`usage: ${spec.usage}\n${spec.about}\n`);
  return 0;
}

async function serve(appDir: string, values: Record<string, string | boolean | undefined>): Promise<number> {
  const { env, given } = envOf(values);
  const nodeEnv = process.env.NODE_ENV;
  if (env !== 'development' && env !== 'production') return usage(`--env must be development or production, not ${env}`, 'serve');
  const portText = str(values.port) ?? process.env.PORT ?? '2403';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || !Number.isInteger(port) || port < 0 || port > 65535) return usage(`--port must be a port number, not ${portText}`, 'serve');
  const format = str(values['log-format']) ?? (process.env.SVC_LOG_FORMAT || 'text');
  const [{ createConsoleLogger, LOG_FORMATS }, { startApp }] = await Promise.all([import('@svc/core'), import('./startApp.js')]);
  if (!(LOG_FORMATS as readonly string[]).includes(format)) return usage(`--log-format must be ${LOG_FORMATS.join(' or ')}, not ${format}`, 'serve');
  appDir = await appFolder(appDir);
  const logger = createConsoleLogger({ format: format as LogFormat });
  const host = str(values.host) ?? process.env.SVC_HOST;
  const db = str(values.db) ?? process.env.SVC_DB;
  const redis = str(values.redis) ?? process.env.SVC_REDIS;
  let app;
  try {
    const rootKeys = envRootKeys(process.env.SVC_ROOT_KEYS);
    app = await startApp({ appDir, port, env, logger, rootKeys, watch: env === 'development' && process.env.SVC_WATCH !== '0', ...(host ? { host } : {}), ...(db ? { db } : {}), ...(redis ? { redis } : {}) });
  } catch (err) {
    // A script that does not parse (production refuses to start): file and line first.
    const where = err as { filename?: unknown; line?: unknown };
    const at = typeof where.filename === 'string' ? `${where.filename}:${typeof where.line === 'number' ? where.line : '?'}: ` : '';
    process.stderr.write(`svc: ${at}${(err as Error).message}\n`);
    return 1;
  }
  const decidedBy = str(values.env) !== undefined ? '--env' : 'SVC_ENV';
  if (given === undefined && nodeEnv === 'production') logger.info('production (NODE_ENV=production; --env or SVC_ENV decide when given)');
  else if (env === 'production') logger.info(`production (${decidedBy})`);
  else if (nodeEnv === 'production') logger.warn(`development although NODE_ENV=production (${decidedBy} decides)`);
  if (env === 'development') {
    logger.warn(
      `development mode: any svc-ssh-key from this machine is root; a development server must never be reachable by others (no reverse proxy, port forward or tunnel in front of it); ${
        app.host === '127.0.0.1' ? 'it listens on 127.0.0.1 only' : `it listens on ${app.host}: requests from other machines are not root, but use --env production anywhere others can reach`
      }`,
    );
  }
  let stoppingSince: number | undefined;
  const stop = (signal: string): void => {
    if (stoppingSince !== undefined) {
      // The same signal twice at once is one request (a terminal's Ctrl-C reaches this process
      // directly and through bin/svc.js; systemd signals every process of the unit): only a
      // signal sent again later cuts the drain short.
      if (Date.now() - stoppingSince < REPEATED_SIGNAL_MS) return;
      logger.warn(`${signal} again: exiting without waiting for the requests in flight`);
      process.exit(1);
    }
    stoppingSince = Date.now();
    // Production waits for idle keep-alive connections to end by themselves (a proxy may be about
    // to reuse one); development closes them at once, so that Ctrl-C is quick.
    const graceful = env === 'production';
    logger.info(`${signal}: shutting down (readiness fails; requests in flight finish${graceful ? ', for up to http.drainMs' : ''}; ${signal} again to exit at once)`);
    app.close({ graceful }).then(
      (outcome) => {
        const took = `${Date.now() - (stoppingSince ?? Date.now())} ms`;
        if (outcome.cut > 0 || outcome.closed > 0) logger.warn(`shutdown: drain time over (app.json http.drainMs): ${outcome.cut} requests in flight and ${outcome.closed} connections closed; exiting after ${took}`);
        else logger.info(`shutdown: drained in ${took}, no request cut; exiting`);
        process.exit(0);
      },
      (err: unknown) => {
        logger.error('shutdown failed', { error: err });
        process.exit(1);
      },
    );
  };
  // Before "listening": a supervisor may signal as soon as it reads that line, and a signal with
  // no handler yet ends the process at once, without the drain.
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.stdout.write(`listening on port ${app.port}\n`);
  logger.info(`dashboard: ${app.url}/dashboard/${env === 'production' ? ' (asks for a root key: svc showkey)' : ''}`);
  return new Promise<number>(() => {});
}

/**
 * --env, else SVC_ENV, else production when NODE_ENV=production (how most hosts say it: starting
 * in development there, where any key is root, would be a trap), else development. `given` is
 * what --env or SVC_ENV said.
 */
function envOf(values: Record<string, string | boolean | undefined>): { env: string; given: string | undefined } {
  const given = str(values.env) ?? (process.env.SVC_ENV || undefined);
  return { env: given ?? (process.env.NODE_ENV === 'production' ? 'production' : 'development'), given };
}

/** Signals this close together are the same one delivered twice. */
const REPEATED_SIGNAL_MS = 1000;

/**
 * svc as the user can run it again from where they are: `pnpm svc` in the svc repository (its
 * package.json script), `node <path>/bin/svc.js` when started by path from a checkout (no svc on
 * the PATH there), `npx svc` under npx, else `svc`.
 */
function svcCommand(): string {
  if (process.env.npm_lifecycle_event === 'svc' && (process.env.npm_lifecycle_script ?? '').includes('apps/server/bin/svc.js')) return 'pnpm svc';
  const bin = process.argv[1] ?? '';
  if (bin !== '' && !bin.split(sep).includes('node_modules')) return `node ${shellQuote(relative(process.cwd(), bin) || bin)}`;
  if (process.env.npm_command === 'exec') return 'npx svc';
  return 'svc';
}

/** A word for a POSIX shell: as it is when plain, else in single quotes. */
function shellQuote(word: string): string {
  return /^[\w./@:+,=-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

function str(value: string | boolean | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function usage(message: string, command?: string): number {
  const spec = command === undefined ? undefined : COMMANDS[command];
  process.stderr.write(`svc: ${message}\n${spec ? `usage: ${spec.usage}\n(svc help ${command} for more)` : USAGE}\n`);
  return 2;
}
