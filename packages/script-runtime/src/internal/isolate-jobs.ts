import type { DefinedScript, JobIntake, JobTablesReader, LiveTables, MakeJobs, MakeJobTables, MakeScripts, ScriptFactory, Scripts } from './isolate-types.js';
import type { IsolateJob } from './isolate-types.js';
import type { JobTables, JobWire, PackedJob } from './wire.js';

/*
 * Scripts and jobs as Node sends them, INSIDE the isolate: the scripts defined, each job's tables
 * parsed once per distinct text, and each PackedJob made into an IsolateJob whose runs are
 * queued. Each factory is serialised with Function.prototype.toString like isolateMain, so it
 * must not reference anything outside its own body.
 */

/** JobTables as parsed, with the host trees and internalised keys derived from them. */
export function makeJobTables(host: Parameters<MakeJobTables>[0]): JobTablesReader {
  /** The internalised copy of a string (what a property key is): its first use as a key makes it. */
  function internalize(key: string): string {
    const holder: Record<string, number> = {};
    holder[key] = 0;
    for (const own in holder) return own;
    return key;
  }

  const treeCache = new Map<string, ReturnType<typeof host.tree>>();
  /** Host trees are immutable, so one per distinct list of names serves every run that sends it. */
  function treeOf(key: string): ReturnType<typeof host.tree> {
    let tree = treeCache.get(key);
    if (tree === undefined) {
      if (treeCache.size >= 64) treeCache.clear();
      tree = host.tree(key === '' ? [] : key.split('\n'));
      treeCache.set(key, tree);
    }
    return tree;
  }

  /** JobTables JSON -> those tables with what is derived from them, for the jobs that send the same text. */
  const tablesCache = new Map<string, LiveTables>();
  // Tables of lists of objects of many shapes can be long: those are parsed for their job only.
  const MAX_CACHED_TABLES = 2048;

  /** Loops, not map() or fill(): in the sealed realm those builtins take a slow path. */
  function tablesOf(text: string): LiveTables {
    let live = tablesCache.get(text);
    if (live !== undefined) return live;
    const tables = JSON.parse(text) as JobTables;
    const trees: ReturnType<typeof host.tree>[] = [];
    let hostless = true;
    for (let i = 0; i < tables.H.length; i++) {
      const tree = treeOf(tables.H[i] as string);
      trees.push(tree);
      if (tree.size > 0) hostless = false;
    }
    // Strings in JSON arrays are not internalised: as property keys each use would look them up.
    const shapes: string[][] = [];
    for (let i = 0; i < tables.K.length; i++) {
      const keys = tables.K[i] as string[];
      const shape: string[] = [];
      for (let k = 0; k < keys.length; k++) shape.push(internalize(keys[k] as string));
      shapes.push(shape);
    }
    live = { H: tables.H, B: tables.B, K: tables.K, C: tables.C, trees, shapes, hostless };
    if (text.length <= MAX_CACHED_TABLES) {
      if (tablesCache.size >= 64) tablesCache.clear();
      tablesCache.set(text, live);
    }
    return live;
  }

  return { tablesOf };
}

/** The scripts defined in this isolate (and the check of a source), and the bodies of fast jobs bound to their shared scopes. */
export function makeScripts(variables: Parameters<MakeScripts>[0]): Scripts {
  const scripts = new Map<number, DefinedScript>();
  /**
   * Per script and per list of the locals its jobs declare: its body bound to a shared scope, for
   * runs that end synchronously (a server sends few different lists per event).
   */
  const bound = new Map<number, Map<string, (this: Record<string, unknown>) => unknown>>();

  /**
   * A fast job's body bound to a shared scope: the names the locals declare decide which names
   * the shared scope claims (a source calling eval is deferred, never fast).
   */
  function boundBody(scriptId: number, script: DefinedScript, locals: JobWire['L']): (this: Record<string, unknown>) => unknown {
    let key = '';
    for (let i = 0; i < locals.length; i++) {
      const k = (locals[i] as JobWire['L'][number]).k;
      for (let n = 0; n < k.length; n++) key += `${k[n] as string}\n`;
      key += '\n';
    }
    let forScript = bound.get(scriptId);
    if (forScript === undefined) bound.set(scriptId, (forScript = new Map()));
    let fn = forScript.get(key);
    if (fn === undefined) {
      const declared = new Set<string>();
      for (let i = 0; i < locals.length; i++) for (const name of (locals[i] as JobWire['L'][number]).k) declared.add(name);
      if (forScript.size >= 16) forScript.clear();
      forScript.set(key, (fn = script.factory(variables.scopeFor(script.names as string[], script.assigned as ReadonlySet<string>, declared))));
    }
    return fn;
  }

  const define = (id: number, factory: ScriptFactory, names: string, assigned: string): void => {
    const list = JSON.parse(assigned) as string[] | null;
    scripts.set(id, { factory, names: JSON.parse(names) as string[] | null, assigned: list === null ? null : new Set(list) });
    bound.delete(id);
  };
  const get = (id: number): DefinedScript | undefined => scripts.get(id);
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as FunctionConstructor;
  /** IsolateBridge.check: whether the source parses on its own as a function body. */
  function check(source: string): string {
    try {
      new AsyncFunction(source);
      return '';
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  }
  return { define, get, boundBody, check };
}

/** A PackedJob made into an IsolateJob, its runs queued (or, with none, completed at once). */
export function makeJobs(deps: Parameters<MakeJobs>[0]): JobIntake {
  const { jobs, enter, scripts, complete, queue, starts } = deps;
  const tablesOf = deps.tables.tablesOf;
  const ITEM_VALUES = deps.itemValues;
  /** PackedJob's 0: one locals table without names. Read only (see materialize, peekVar). */
  const NO_LOCALS: JobWire['L'] = deps.variables.deepFreeze([{ k: [], v: {} }]);

  function queueJob(packed: PackedJob): void {
    const scriptId = packed[0];
    const jobId = packed[1];
    enter(jobId);
    const script = scripts.get(scriptId);
    if (!script) throw new Error(`script ${scriptId} is not defined in this isolate`);
    const { factory, names, assigned } = script;
    const tables = tablesOf(packed[3]);
    const locals = packed[4] === 0 ? NO_LOCALS : packed[4];
    const items = packed[5];
    const uses: number[] = [];
    for (let i = 0; i < locals.length; i++) uses.push(0);
    let count = 0;
    let combo: JobWire['C'][number] | undefined;
    for (let at = 0; at < items.length; ) {
      const head = items[at] as number;
      // -n: n more items like the previous one (see JobWire.I).
      const n = head < 0 ? -head : 1;
      if (head >= 0) combo = tables.C[head];
      if (combo === undefined) throw new Error('malformed job: a repeat before any item');
      uses[combo[0]] = (uses[combo[0]] ?? 0) + n;
      count += n;
      at += head < 0 ? 1 : ITEM_VALUES + (tables.K[combo[3]]?.length ?? 0);
    }
    const localsShared: boolean[] = [];
    for (let i = 0; i < uses.length; i++) localsShared.push((uses[i] as number) > 1);
    const defer = packed[2] === 1;
    // Runs that cannot go on after their body returned share one scope (see Scopes.setCurrent).
    const fast = !defer && names != null && assigned !== null && tables.hostless;
    const fn = fast ? scripts.boundBody(scriptId, script, locals) : undefined;
    const job: IsolateJob = {
      id: jobId,
      scriptId,
      factory,
      bound: fn,
      assigned,
      start: packed[6],
      defer,
      fast,
      items,
      combos: tables.C,
      shapes: tables.shapes,
      locals,
      localsShared,
      trees: tables.trees,
      labels: tables.B,
      count,
      next: 0,
      repeats: 0,
      lastCombo: undefined,
      started: 0,
      emitted: 0,
      early: undefined,
      out: [],
      outShapes: [],
      outShapeIndex: undefined,
      lastShape: -1,
      lastPiece: -1,
      live: undefined,
      record: undefined,
      dropped: false,
    };
    jobs.set(job.id, job);
    if (count === 0) complete(job);
    else queue.push(() => starts.runItems(job));
  }

  return { queueJob };
}
