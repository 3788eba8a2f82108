import { resolve } from 'node:path';
import { createConsoleLogger } from '@svc/core';
import type { Logger } from '@svc/core';
import { envRootKeys, readKeys } from './keys.js';
import { loadApp } from './loadApp.js';
import { startApp } from './startApp.js';

/** Options of `svc import`. */
export interface ImportCommandOptions {
  appDir: string;
  /** The Importer resource to run. */
  resource: string;
  db?: string;
  env: 'development' | 'production';
  /** Where progress goes (a TTY gets one redrawn line). */
  progress: NodeJS.WriteStream;
  /** Where the summary goes. */
  out: NodeJS.WritableStream;
  /** Milliseconds between progress polls; default 250. */
  pollMs?: number;
}

/** The part of GET /<importer>/status (@svc/type-importer's ImportStatus) this command reads. */
interface StatusView {
  state: 'idle' | 'running' | 'done' | 'failed';
  total: number;
  read: number;
  docsPerSecond: number;
  error?: string;
  restartNeeded?: boolean;
  collections: {
    source: string;
    resource: string;
    state: string;
    total: number;
    read: number;
    inserted: number;
    updated: number;
    unchanged: number;
    failed: number;
    errors?: string[];
    mixed?: Record<string, { chosen: string; counts: Record<string, number> }>;
    config?: string;
  }[];
}

/**
 * `svc import [app-dir] --resource <name>`: starts the app on a loopback port, runs its Importer
 * resource through `POST /<name>/run` as root, draws progress from `GET /<name>/status`, prints a
 * summary and stops. Answers the exit code: 0 when the import is done.
 */
export async function importCommand(options: ImportCommandOptions): Promise<number> {
  const appDir = resolve(options.appDir);
  // Warnings wait until the progress bar is finished, so they do not break its line.
  const base = createConsoleLogger({ quiet: true });
  const held: [string, Record<string, unknown> | undefined][] = [];
  const logger: Logger = { info() {}, warn: (m, f) => void held.push([m, f]), error: (m, f) => base.error(m, f) };
  const name = options.resource.replace(/^\/+|\/+$/g, '');
  let folder;
  try {
    folder = (await loadApp(appDir, logger)).resources.find((r) => r.path === `/${name}`);
  } catch (err) {
    return fail(options, (err as Error).message);
  }
  if (folder === undefined) return fail(options, `no resource ${name} in ${appDir}/resources`);
  if (folder.config.type !== 'Importer') return fail(options, `resource ${name} is a ${folder.config.type}, not an Importer`);
  let key: string | undefined;
  let extra: string[];
  try {
    extra = envRootKeys(process.env.SVC_ROOT_KEYS);
    [key] = [...(await readKeys(appDir)), ...extra];
  } catch (err) {
    return fail(options, (err as Error).message);
  }
  if (key === undefined && options.env === 'production') return fail(options, 'no root key; create one with: svc keygen');
  let app;
  try {
    app = await startApp({ appDir, port: 0, host: '127.0.0.1', env: options.env, logger, rootKeys: extra, ...(options.db ? { db: options.db } : {}) });
  } catch (err) {
    return fail(options, (err as Error).message);
  }
  const headers = { 'svc-ssh-key': key ?? 'svc-import' };
  const started = Date.now();
  try {
    const run = await fetch(`${app.url}/${name}/run`, { method: 'POST', headers });
    if (run.status !== 202) return fail(options, `POST /${name}/run answered ${run.status}: ${await run.text()}`);
    const draw = progressDrawer(options.progress);
    let status: StatusView;
    for (;;) {
      await new Promise((r) => setTimeout(r, options.pollMs ?? 250));
      status = (await (await fetch(`${app.url}/${name}/status`, { headers })).json()) as StatusView;
      draw(status);
      if (status.state !== 'running') break;
    }
    if (options.progress.isTTY) options.progress.write('\n');
    for (const [message, fields] of held) base.warn(message, fields);
    options.out.write(summary(status, (Date.now() - started) / 1000));
    return status.state === 'done' ? 0 : 1;
  } finally {
    await app.close();
  }
}

function fail(options: ImportCommandOptions, message: string): number {
  options.progress.write(`svc import: ${message}\n`);
  return 1;
}

/** A TTY gets one line redrawn in place; a log file gets a line per 5% step of the bar. */
function progressDrawer(stream: NodeJS.WriteStream): (status: StatusView) => void {
  let lastBar = '';
  return (status) => {
    const current = status.collections.find((c) => c.state === 'running') ?? status.collections.at(-1);
    const line = formatProgress(status, current?.resource ?? '');
    if (stream.isTTY) {
      stream.write(`\r${line}\u001b[K`);
      return;
    }
    const bar = line.replace(/\].*$/, '');
    if (bar !== lastBar || status.state !== 'running') stream.write(`${line}\n`);
    lastBar = bar;
  };
}

/** `people  [######--------------]  30%  30,000/100,000  2,500 docs/s` (20 steps). */
export function formatProgress(status: Pick<StatusView, 'total' | 'read' | 'docsPerSecond'>, label: string): string {
  const fraction = status.total > 0 ? Math.min(status.read / status.total, 1) : 0;
  const filled = Math.floor(fraction * 20);
  const n = (x: number): string => x.toLocaleString('en-US');
  return `${label}  [${'#'.repeat(filled)}${'-'.repeat(20 - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}%  ${n(status.read)}/${n(status.total)}  ${n(status.docsPerSecond)} docs/s`;
}

function summary(status: StatusView, seconds: number): string {
  const lines: string[] = [];
  for (const c of status.collections) {
    lines.push(`${c.source} -> ${c.resource}: ${c.state}, ${c.read} read, ${c.inserted} new, ${c.updated} updated, ${c.unchanged} unchanged, ${c.failed} failed${c.config ? `; config.json ${c.config}` : ''}`);
    for (const [prop, m] of Object.entries(c.mixed ?? {})) {
      const counts = Object.entries(m.counts).map(([t, k]) => `${t} ${k}`).join(', ');
      lines.push(`  mixed types in ${prop} (${counts}): typed as ${m.chosen}`);
    }
    for (const e of c.errors ?? []) lines.push(`  refused: ${e}`);
  }
  const peakMiB = Math.round(process.resourceUsage().maxRSS / 1024);
  if (status.state === 'done') lines.push(`done: ${status.read} documents in ${seconds.toFixed(1)} s (${status.docsPerSecond} docs/s), peak RSS ${peakMiB} MiB`);
  else lines.push(`import failed: ${status.error ?? status.state}`);
  if (status.restartNeeded) lines.push('restart the server to serve the imported collections');
  return `${lines.join('\n')}\n`;
}
