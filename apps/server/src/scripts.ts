import { randomBytes } from 'node:crypto';
import { isUserResource, SvcError } from '@svc/core';
import type { CollectionEventRunner, Context, EventScripts, InternalRequest, Logger, Realtime, Reply, Resource, ScriptOutcome, ScriptRunInput } from '@svc/core';
import { createScriptRuntime, RunBudget, ScriptError, ScriptSyntaxError } from '@svc/script-runtime';
import type { HostApi, RunInput, RunResult, Script, ScriptModule, ScriptRuntime, ScriptRuntimeStats } from '@svc/script-runtime';
import { collectionEventRunner } from './collectionEvents.js';
import type { ScriptRunning } from './collectionEvents.js';
import { cancelOf, EVENT_LABEL, scriptFailure, usesOf } from './scriptRuns.js';
import type { Compiled, Uses } from './scriptRuns.js';
import type { ScriptFactory } from './buildResources.js';
import type { AppFolder, ResourceFolder } from './loadApp.js';
import { DEFAULT_RECURSION_CAP, scriptClient, scriptClientNames } from './scriptClient.js';
import type { ScriptClientLimits } from './scriptClient.js';
import { createScriptOutbound } from './scriptOutbound.js';

/** Script CPU time one request may use over all its runs and its internal calls' runs, ms (app.json scripts.requestCpuMs). */
export const DEFAULT_REQUEST_CPU_MS = 5000;
/** Time after which a request's scripts are stopped, ms (app.json scripts.requestWallMs). */
export const DEFAULT_REQUEST_WALL_MS = 30_000;

/** What the script factory needs from the app. */
export interface ScriptFactoryOptions {
  app: AppFolder;
  env: 'development' | 'production';
  logger: Logger;
  realtime: Realtime;
  request(input: InternalRequest): Promise<Reply>;
  /** What scripts may require() (app.json scripts.modules, bundled and checked: loadScriptModules). */
  modules?: readonly ScriptModule[];
  /** false: scripts always run in the script processes, never as static plans (app.json `fastPaths`). */
  fastPaths?: boolean;
}

/** The script factory, plus what the server binds once every resource exists. */
export interface AppScripts extends ScriptFactory {
  /** The resources, for the script client's `svc.<r>` functions and emit's user collections. */
  bind(resources: readonly Resource[]): void;
  /** A script's syntax error (file, line, column), or undefined when it compiles. */
  check(source: string, filename: string, event: string): ScriptProblem | undefined;
  /** Runs a script once on a sample object without writing anything (the dashboard's trial run). */
  trial(input: TrialInput): Promise<TrialOutcome>;
  /**
   * Scripts compiled from now on get these modules (a reload that changed app.json
   * scripts.modules): they run in new script processes; those of scripts compiled before keep
   * theirs until the requests under way could have finished. Answers false when nothing changed.
   */
  useModules(modules: readonly ScriptModule[]): boolean;
  /** Runs since the start (replaced script processes included) and those waiting now, for metrics. */
  stats(): ScriptRuntimeStats;
  close(): void;
  /** Readiness: 'scripts' when scripts cannot run now, undefined when they can (or none ran yet). */
  unready(): string | undefined;
}

/** Where and why a script does not compile or failed. */
export interface ScriptProblem {
  message: string;
  line?: number;
  column?: number;
}

/** A trial run: a script source run once, as an event of a resource, on a sample object. */
export interface TrialInput {
  source: string;
  /** 'resources/todos/post.js', for messages. */
  filename: string;
  /** 'post', 'beforerequest', ... */
  event: string;
  object: Record<string, unknown>;
  previous?: Record<string, unknown>;
  me?: Record<string, unknown>;
  query?: Record<string, unknown>;
  /** The dashboard's request: svc.* GETs run with its session (root). */
  parent: Context;
}

/** What a trial run did: nothing of it was written or sent. */
export interface TrialOutcome {
  object: Record<string, unknown>;
  errors?: Record<string, string>;
  cancelled?: { message: string; status: number };
  hidden: readonly string[];
  protected: readonly string[];
  result?: unknown;
  /** console lines of the run. */
  logs: string[];
  /** emit() calls, recorded instead of sent. */
  emits: unknown[][];
  /** svc.* writes the run asked for, refused in a trial. */
  refused: string[];
  /** The script threw, timed out or does not compile. */
  failure?: ScriptProblem;
}

/** The event files of a Collection (login.js and beforereset.js only mean something on a UserCollection). */
export const COLLECTION_EVENT_FILES: ReadonlySet<string> = new Set(['get.js', 'validate.js', 'post.js', 'put.js', 'delete.js', 'beforerequest.js', 'aftercommit.js', 'login.js', 'beforereset.js']);
/** The event files only a UserCollection has. */
export const USER_ONLY_EVENT_FILES: ReadonlySet<string> = new Set(['login.js', 'beforereset.js']);

/**
 * On BeforeRequest may change the request's query, which a script sees as the variable `query`:
 * its value when the script ends comes back as the run's result. On the first line, so that line
 * numbers stay the script's own.
 */
function withQueryResult(source: string): string {
  return `try { ${source}\n} finally { setResult(query); }`;
}

/**
 * Event scripts for the app's resources, run by @svc/script-runtime in one shared runtime.
 * Scripts compile once at start. A syntax error stops a production start; in development the
 * server starts and that event answers 500 with the error.
 */
export function createScriptFactory(options: ScriptFactoryOptions): AppScripts {
  const { env, logger } = options;
  const settings = options.app.settings.scripts ?? {};
  const requestCpuMs = settings.requestCpuMs ?? DEFAULT_REQUEST_CPU_MS;
  const requestWallMs = settings.requestWallMs ?? DEFAULT_REQUEST_WALL_MS;
  // Throws naming a bad app.json outbound.allow entry: the start stops.
  const outbound = createScriptOutbound(options.app.settings.outbound);
  const clientLimits: ScriptClientLimits = {
    recursionCap: settings.recursionCap ?? DEFAULT_RECURSION_CAP,
    check(ctx) {
      const failure = budgetOf(ctx).failure;
      if (failure) throw new Error(`${failure.message}: no more internal calls`);
    },
  };
  /**
   * The budget of the request `ctx` belongs to (its internal calls share the top request's scope):
   * made at its first script run; its runs stop when its client goes away.
   */
  function budgetOf(ctx: Context): RunBudget {
    const scope = ctx.scope;
    if (scope.scripts instanceof RunBudget) return scope.scripts;
    const budget = new RunBudget({ cpuMs: requestCpuMs, wallMs: requestWallMs, client: scope.client, request: scope });
    scope.scripts = budget;
    return budget;
  }
  let runtime: ScriptRuntime | undefined;
  let modules: readonly ScriptModule[] = options.modules ?? [];
  /** The runtime each script was compiled by: after a change of modules, old scripts run in the old one. */
  const owners = new WeakMap<Script, ScriptRuntime>();
  /** Runtimes replaced by a change of modules, until their scripts' requests could have finished. */
  const retired = new Set<ScriptRuntime>();
  /** What runtimes disposed of since the start had counted: counters must not go down. */
  const past: ScriptRuntimeStats = { runs: 0, timeouts: 0, busy: 0, planned: 0, queued: 0 };
  const addStats = (into: ScriptRuntimeStats, r: ScriptRuntime): ScriptRuntimeStats => {
    const s = r.stats();
    into.runs += s.runs;
    into.timeouts += s.timeouts;
    into.busy += s.busy;
    into.planned += s.planned;
    into.queued += s.queued;
    return into;
  };
  let resources: readonly Resource[] = [];
  let clientNames: ReturnType<typeof scriptClientNames> = [];
  /** Console lines of trial runs, by their label: they go to the trial's answer, not the log. */
  const trialLogs = new Map<string, string[]>();
  const trialScripts = new Map<string, Script>();
  const log = (line: string): void => {
    const end = line.indexOf('] ');
    const own = line.startsWith('[') && end > 0 ? trialLogs.get(line.slice(1, end)) : undefined;
    if (own) own.push(line.slice(end + 2));
    else logger.info(line);
  };
  const getRuntime = (): ScriptRuntime =>
    (runtime ??= createScriptRuntime({
      ...(settings.memoryLimitMb !== undefined ? { memoryLimitMb: settings.memoryLimitMb } : {}),
      ...(settings.timeoutMs !== undefined ? { timeoutMs: settings.timeoutMs } : {}),
      ...(settings.isolates !== undefined ? { isolates: settings.isolates } : {}),
      ...(settings.queueLimit !== undefined ? { queueLimit: settings.queueLimit } : {}),
      ...(options.fastPaths === false ? { staticPlans: false } : {}),
      modules,
      log,
    }));
  const compileScript = (text: string, filename: string): Script => {
    const owner = getRuntime();
    const script = owner.compile(text, filename);
    owners.set(script, owner);
    return script;
  };
  const runtimeOf = (script: Script): ScriptRuntime => owners.get(script) ?? getRuntime();

  /** Compiles the folder's scripts for the given events; broken ones become errors to answer. */
  function compile(folder: ResourceFolder, events: ReadonlySet<string>): Map<string, Compiled> {
    const out = new Map<string, Compiled>();
    for (const [file, source] of folder.scripts) {
      if (!events.has(file)) continue;
      const filename = `resources${folder.path}/${file}`;
      try {
        const script = compileScript(file === 'beforerequest.js' && events === COLLECTION_EVENT_FILES ? withQueryResult(source) : source, filename);
        out.set(file.slice(0, -3), { script, uses: usesOf(script) });
      } catch (err) {
        if (!(err instanceof ScriptSyntaxError) || env === 'production') throw err;
        logger.error(`${filename}:${err.line ?? '?'}: ${err.message} (this event answers 500 until fixed)`);
        // It never runs, so it uses nothing.
        out.set(file.slice(0, -3), { script: err, uses: { ctx: false, svc: false, emit: false, net: false } });
      }
    }
    return out;
  }

  /** `collection`: the path of the Collection whose script this is (its objects' emits are shown per recipient). */
  function host(ctx: Context, uses: Uses, collection?: string): HostApi {
    const api = uses.svc ? scriptClient(clientNames, ctx, options.request, clientLimits) : {};
    if (uses.emit) api.emit = ctx.showing === true ? () => undefined : (...args: unknown[]) => emit(args, collection);
    // The scripts' http, https and fetch (a name scripts cannot write: only the built-ins call it).
    if (uses.net) api['#net'] = outbound.hostFunction(ctx, () => budgetOf(ctx));
    return api;
  }

  /** emit(message, [data]) or emit(userCollection, query, message, [data]). */
  function emit(args: unknown[], collection: string | undefined): Promise<void> | void {
    const [a, b, c, d] = args;
    const objects = collection !== undefined && options.realtime.emitObjects !== undefined ? options.realtime.emitObjects.bind(options.realtime) : undefined;
    if (typeof a === 'string' && (args.length < 3 || typeof c !== 'string')) {
      if (objects) return objects(collection as string, a, b);
      options.realtime.emit(a, b);
      return;
    }
    if (typeof c !== 'string' || b === null || typeof b !== 'object') throw new Error('emit([userCollection, query], message, [data]): message must be a string');
    const users = resources.filter(isUserResource);
    // svc.users cannot cross into Node (it is a function), so it arrives as null: the app's one user collection.
    const target = typeof a === 'string' ? users.find((u) => u.path === (a.startsWith('/') ? a : `/${a}`)) : users.length === 1 ? users[0] : undefined;
    if (!target) throw new Error(`emit: no user collection ${typeof a === 'string' ? a : '(name it as a string when the app has several)'}`);
    if (objects) return objects(collection as string, c, d, { path: target.path, query: b as Record<string, unknown> });
    return options.realtime.emitToUsers(target.path, b as Record<string, unknown>, c, d);
  }

  function locals(ctx: Context, uses: Uses, extra: Record<string, unknown>): Record<string, unknown> {
    const base = { me: ctx.me, query: ctx.query, internal: ctx.internal, isRoot: ctx.isRoot, ...extra };
    if (!uses.ctx) return base;
    return {
      ...base,
      ctx: {
        method: ctx.method,
        originalMethod: ctx.originalMethod,
        url: ctx.url,
        parts: ctx.parts,
        // No `query`: the script's ctx.query is its variable `query` (the runtime makes it so).
        body: ctx.body,
        headers: ctx.headers,
        session: { id: ctx.session.id, uid: ctx.session.uid },
        req: { method: ctx.method, originalMethod: ctx.originalMethod, url: ctx.req?.url ?? ctx.url, headers: ctx.headers },
      },
    };
  }

  async function runOne({ script }: Compiled, input: RunInput): Promise<RunResult> {
    if (script instanceof ScriptSyntaxError) throw scriptFailure(script, env, logger);
    try {
      return await runtimeOf(script).run(script, input);
    } catch (err) {
      throw scriptFailure(err, env, logger);
    }
  }

  const source = (text: string, event: string): string => (event === 'beforerequest' ? withQueryResult(text) : text);
  /** What a Collection's event runner (collectionEvents.ts) needs of the app's scripts. */
  const running: ScriptRunning = { runOne, runtimeOf, locals, host, budgetOf, failure: (err) => scriptFailure(err, env, logger) };

  return {
    bind(all) {
      resources = all;
      clientNames = scriptClientNames(all);
    },
    check(text, filename, event) {
      try {
        getRuntime().compile(source(text, event), filename);
        return undefined;
      } catch (err) {
        if (err instanceof ScriptSyntaxError) return problemOf(err);
        throw err;
      }
    },
    async trial(input) {
      const label = `dashboard trial ${randomBytes(6).toString('hex')}`;
      const logs: string[] = [];
      const emits: unknown[][] = [];
      const refused: string[] = [];
      const base = { object: input.object, hidden: [], protected: [], logs, emits, refused };
      let script: Script;
      try {
        // Isolates keep what they compiled: trying the same text again reuses it.
        const key = `${input.filename}\n${input.event}\n${input.source}`;
        script = trialScripts.get(key) ?? compileScript(source(input.source, input.event), input.filename);
        trialScripts.delete(key);
        trialScripts.set(key, script);
        if (trialScripts.size > 64) trialScripts.delete(trialScripts.keys().next().value as string);
      } catch (err) {
        if (err instanceof ScriptSyntaxError) return { ...base, failure: problemOf(err) };
        throw err;
      }
      // Reads go through the app as the dashboard's request would; writes are refused, not done.
      const readOnly = (request: InternalRequest): Promise<Reply> => {
        if (request.method === 'GET') return options.request(request);
        refused.push(`${request.method} ${request.path}`);
        return Promise.resolve({ status: 403, body: new SvcError('FORBIDDEN', `a trial run does not write (${request.method} ${request.path})`).toJSON() });
      };
      const api: HostApi = scriptClient(clientNames, input.parent, readOnly, clientLimits);
      api.emit = (...args: unknown[]) => {
        emits.push(args);
      };
      api['#net'] = () => ({ error: { message: 'a trial run makes no outbound requests', code: 'ERR_SVC_TRIAL' } });
      const ctx = { ...input.parent, query: input.query ?? {}, me: input.me as Context['me'] };
      trialLogs.set(label, logs);
      try {
        const result = await runtimeOf(script).run(script, {
          thisObj: input.object,
          locals: { ...locals(ctx, { ctx: true, svc: true, emit: true, net: true }, { previous: input.previous ?? {} }), isRoot: false, internal: false },
          host: api,
          label,
        });
        const out: TrialOutcome = { ...base, object: result.thisObj, hidden: result.hidden, protected: result.protected };
        if (result.errors && Object.keys(result.errors).length > 0) out.errors = result.errors;
        if (result.cancelled) out.cancelled = result.cancelled;
        if (result.setResultCalled) out.result = result.result;
        return out;
      } catch (err) {
        if (err instanceof ScriptError) return { ...base, failure: problemOf(err) };
        throw err;
      } finally {
        // Lines cross after the outcome at the latest in the same message: keep the entry a moment.
        setTimeout(() => trialLogs.delete(label), 1000).unref();
      }
    },
    useModules(next) {
      if (next.length === modules.length && next.every((m, i) => m.name === modules[i]?.name && m.source === modules[i]?.source)) return false;
      modules = next;
      const old = runtime;
      runtime = undefined;
      trialScripts.clear();
      if (old) {
        retired.add(old);
        setTimeout(() => {
          retired.delete(old);
          addStats(past, old).queued = 0;
          old.dispose();
        }, requestWallMs + 5000).unref();
      }
      return true;
    },
    unready() {
      return runtime === undefined || runtime.ready() ? undefined : 'scripts';
    },
    stats() {
      const total = { ...past };
      for (const r of [...(runtime ? [runtime] : []), ...retired]) addStats(total, r);
      return total;
    },
    close() {
      runtime?.dispose();
      runtime = undefined;
      for (const old of retired) old.dispose();
      retired.clear();
    },
    forResource(folder, events): EventScripts {
      const scripts = compile(folder, events);
      const name = folder.path.slice(1);
      return {
        has: (event) => scripts.has(event.replace(/\.js$/, '')),
        async run(event: string, ctx: Context, input: ScriptRunInput = {}): Promise<ScriptOutcome> {
          const compiled = scripts.get(event.replace(/\.js$/, ''));
          if (!compiled) return { object: input.object ?? {}, hidden: [], protectedProps: [], resultSet: false };
          const result = await runOne(compiled, {
            thisObj: input.object ?? {},
            locals: locals(ctx, compiled.uses, input.locals ?? {}),
            host: host(ctx, compiled.uses),
            label: `${name} ${EVENT_LABEL[event] ?? event}`,
            budget: budgetOf(ctx),
          });
          throwIfCancelled(result);
          return { object: result.thisObj, hidden: result.hidden, protectedProps: result.protected, result: result.result, resultSet: result.setResultCalled === true };
        },
      };
    },
    forCollection(folder): CollectionEventRunner | undefined {
      const scripts = compile(folder, COLLECTION_EVENT_FILES);
      if (scripts.size === 0) return undefined;
      return collectionEventRunner(folder.path, scripts, running);
    },
  };
}

function problemOf(err: ScriptError): ScriptProblem {
  return { message: err.message, ...(err.line !== undefined ? { line: err.line } : {}), ...(err.column !== undefined ? { column: err.column } : {}) };
}

function throwIfCancelled(result: RunResult): void {
  const cancelled = cancelOf(result);
  if (cancelled !== undefined) throw cancelled;
}
