import { SvcError } from '@svc/core';
import type { Context, Reply, ResourceHost, ResourceImplementation, ResourceTypeContext } from '@svc/core';
import type { ImporterSettings } from '../importerType.js';
import { idleStatus } from '../importStatus.js';
import type { ImportStatus } from '../importStatus.js';
import { runImport } from './runImport.js';
import type { ChangeTarget } from './runImport.js';

/** Builds the request handler of one Importer resource. */
export function createImporterResource(context: ResourceTypeContext<ImporterSettings>): ResourceImplementation {
  const { settings, logger } = context;
  let status: ImportStatus = idleStatus();
  let running: Promise<void> | undefined;
  let abort: AbortController | undefined;
  let host: ResourceHost | undefined;

  function start(): void {
    abort = new AbortController();
    status = { ...idleStatus(), state: 'running', startedAt: new Date().toISOString() };
    const current = status;
    logger.info(`${context.name}: importing from ${settings.database}`);
    running = runImport(
      {
        url: settings.url,
        database: settings.database,
        ...(settings.collections ? { collections: settings.collections } : {}),
        ...(settings.rename ? { rename: settings.rename } : {}),
        batchSize: settings.batchSize,
        store: context.store,
        appDir: context.appDir,
        logger,
        signal: abort.signal,
        changesOf: (resource) => changeTargetOf(host?.resourceAt?.(`/${resource}`)),
      },
      current,
    ).then(
      () => {
        current.state = 'done';
        current.finishedAt = new Date().toISOString();
        logger.info(`${context.name}: imported ${current.read} documents (${current.docsPerSecond}/s)${current.restartNeeded ? '; restart the server to serve the imported collections' : ''}`);
      },
      (err: unknown) => {
        current.state = 'failed';
        current.error = (err as Error).message;
        current.finishedAt = new Date().toISOString();
        logger.error(`${context.name}: import failed: ${current.error}`, { error: err });
      },
    );
    void running.finally(() => {
      running = undefined;
    });
  }

  function requireRoot(ctx: Context): void {
    if (!ctx.isRoot) throw new SvcError('FORBIDDEN', 'the importer answers root requests only (svc-ssh-key)');
  }

  return {
    init(given) {
      host = given;
      return Promise.resolve();
    },
    async handle(ctx): Promise<Reply> {
      const action = ctx.parts.join('/');
      if (action === 'run') {
        if (ctx.method !== 'POST') throw new SvcError('METHOD_NOT_ALLOWED', 'start an import with POST', { headers: { allow: 'POST' } });
        requireRoot(ctx);
        if (running !== undefined) throw new SvcError('CONFLICT', 'an import is already running; see /status');
        start();
        return { status: 202, body: structuredClone(status) };
      }
      if (action === 'status' || action === '') {
        if (ctx.method !== 'GET') throw new SvcError('METHOD_NOT_ALLOWED', 'read the status with GET', { headers: { allow: 'GET' } });
        requireRoot(ctx);
        return { status: 200, body: structuredClone(status) };
      }
      throw new SvcError('NOT_FOUND', `no ${action} on an importer: POST ${context.path}/run, GET ${context.path}/status`);
    },
    async close() {
      abort?.abort();
      await running;
    },
  };
}

/** A resource that hears of writes made to its store (a Collection), else undefined. */
function changeTargetOf(resource: unknown): ChangeTarget | undefined {
  const r = resource as Partial<ChangeTarget> | undefined;
  return typeof r?.wantsChanges === 'function' && typeof r.tellChanges === 'function' ? (r as ChangeTarget) : undefined;
}
