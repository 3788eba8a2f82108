import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { StoreCollection } from '../store/Store.js';
import { filesOf } from './CollectionFiles.js';
import type { FileStorage } from './FileStorage.js';
import type { FileSettings } from './fileSettings.js';
import { isFileId } from './fileKeys.js';
import type { ReceivedFiles } from './receiveFile.js';

/** One pass of the orphan sweep over a collection's files. */
export interface SweepPass {
  storage: FileStorage;
  /** The collection's key prefix ('posts'). */
  prefix: string;
  settings: ReadonlyMap<string, FileSettings>;
  store: StoreCollection;
  /** Files younger than this are left alone: an upload whose object is being written, or not yet. */
  graceMs: number;
  /** Object folders looked at in one pass (the pass goes on from `after` next time). */
  batch: number;
  after: string | undefined;
  now?: number;
}

/** What a pass did, and where the next one goes on (undefined: from the start). */
export interface SweepOutcome {
  checked: number;
  removed: string[];
  next: string | undefined;
}

/**
 * Finds files no object holds and removes them: those of objects that no longer exist (a
 * delete killed before its files went), and those their object does not name (an upload
 * killed before its object was written, a replacement killed before the old file went, a
 * property no longer a file property). Bounded: `batch` object folders per pass, one store
 * read for them, one listing per folder.
 */
export async function sweepOrphans(pass: SweepPass): Promise<SweepOutcome> {
  const { storage, prefix, settings } = pass;
  const now = pass.now ?? Date.now();
  const folders = await storage.folders(`${prefix}/`, pass.after, pass.batch);
  if (folders.length === 0) return { checked: 0, removed: [], next: undefined };
  const fields: Record<string, 1> = { id: 1 };
  for (const name of settings.keys()) fields[name] = 1;
  const docs = await pass.store.find({ id: { $in: folders } }, { fields });
  const byId = new Map(docs.map((d) => [d.id, d]));
  const removed: string[] = [];
  for (const folder of folders) {
    const doc = byId.get(folder);
    const held = new Set<string>();
    if (doc !== undefined) for (const name of settings.keys()) for (const f of filesOf(doc[name])) held.add(`${name}/${f.id}`);
    const orphans = (await storage.files(`${prefix}/${folder}/`))
      .filter((entry) => (pass.graceMs <= 0 || now - entry.modified >= pass.graceMs) && !held.has(heldName(entry.name)))
      .map((entry) => `${prefix}/${folder}/${entry.name}`);
    if (orphans.length > 0) {
      await storage.remove(orphans);
      removed.push(...orphans);
    }
  }
  return { checked: folders.length, removed, next: folders.length < pass.batch ? undefined : folders[folders.length - 1] };
}

/** 'photo/<file id>.100x100' -> 'photo/<file id>': a thumbnail is held while its image is. */
function heldName(name: string): string {
  const slash = name.indexOf('/');
  if (slash === -1 || name.indexOf('/', slash + 1) !== -1) return '';
  const base = name.slice(slash + 1);
  const id = base.split('.')[0] as string;
  return isFileId(id) ? `${name.slice(0, slash)}/${id}` : '';
}

/**
 * Removes files left in a storage's temporary folder (a receive killed midway) older than
 * `graceMs`, but never one `received` holds (being received or not yet published).
 */
export async function sweepTemp(tempDir: string, received: ReceivedFiles, graceMs: number, now = Date.now()): Promise<number> {
  let names: string[];
  try {
    names = await readdir(tempDir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const path = join(tempDir, name);
    if (received.isHeld(path)) continue;
    try {
      // No grace: whatever its time (a file's mtime has a fraction of a millisecond that Date.now()
      // truncates, so a part written in the same millisecond looked newer than now).
      if (graceMs > 0 && now - (await stat(path)).mtimeMs < graceMs) continue;
      await unlink(path);
      removed++;
    } catch {
      // Published or removed meanwhile.
    }
  }
  return removed;
}

/** When and how much the orphan sweep of a collection runs. */
export interface SweepSchedule {
  /** Files younger than this are never orphans (default 1 hour). */
  graceMs: number;
  /** A pass every so often (default 10 minutes); the first right after start. 0: only when asked. */
  intervalMs: number;
  /** Object folders per pass (default 1,000). */
  batch: number;
}

/** The default {@link SweepSchedule}. */
export const DEFAULT_SWEEP: SweepSchedule = { graceMs: 60 * 60_000, intervalMs: 10 * 60_000, batch: 1000 };

/**
 * Runs {@link sweepOrphans} over one collection at start and then periodically, one pass at a
 * time, each going on where the last stopped; a failing pass is logged and tried again later.
 */
export class OrphanSweeper {
  private after: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepOutcome> | undefined;
  private stopped = false;

  constructor(
    private readonly pass: () => Omit<SweepPass, 'after' | 'graceMs' | 'batch'>,
    private readonly schedule: SweepSchedule,
    private readonly onError: (err: unknown) => void,
    private readonly onRemoved: (keys: readonly string[]) => void,
    private readonly received: ReceivedFiles,
  ) {}

  /** Starts the passes: one now (in the background), then every intervalMs. */
  start(): void {
    if (this.schedule.intervalMs <= 0) return;
    const tick = (): void => {
      if (this.stopped) return;
      this.runOnce().then(
        () => this.next(tick),
        (err: unknown) => {
          this.onError(err);
          this.next(tick);
        },
      );
    };
    this.timer = setTimeout(tick, 0);
    this.timer.unref();
  }

  private next(tick: () => void): void {
    if (this.stopped) return;
    this.timer = setTimeout(tick, this.schedule.intervalMs);
    this.timer.unref();
  }

  /** One pass now (after the one under way, if any); the temporary folder is swept too. */
  async runOnce(): Promise<SweepOutcome> {
    while (this.running !== undefined) await this.running.catch(() => undefined);
    const pass = this.pass();
    this.running = (async () => {
      await sweepTemp(pass.storage.tempDir, this.received, this.schedule.graceMs);
      const outcome = await sweepOrphans({ ...pass, graceMs: this.schedule.graceMs, batch: this.schedule.batch, after: this.after });
      this.after = outcome.next;
      if (outcome.removed.length > 0) this.onRemoved(outcome.removed);
      return outcome;
    })();
    try {
      return await this.running;
    } finally {
      this.running = undefined;
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
