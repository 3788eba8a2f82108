import { realpath, readFile } from 'node:fs/promises';
import { builtinModules, isBuiltin } from 'node:module';
import { join, sep } from 'node:path';
import type { Plugin } from 'esbuild';
import type { Logger } from '@svc/core';
import { checkScriptModules, NODE_GLOBALS_DEFINE } from '@svc/script-runtime';
import type { ScriptModule } from '@svc/script-runtime';

/**
 * A name app.json scripts.modules may hold: an npm package name, optionally with a path inside it
 * ('lodash/fp'). No relative or absolute paths: a module comes from the app's node_modules.
 */
const MODULE_NAME = /^(?:@[a-z0-9~][a-z0-9._~-]*\/)?[a-z0-9~][a-z0-9._~-]*(?:\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*$/;

/** Why a scripts.modules entry cannot be used, or undefined when it can. */
export function moduleNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || !MODULE_NAME.test(name) || name.split('/').some((part) => part === '..' || part === '.')) {
    return `${JSON.stringify(name)} is not an npm package name (such as "moment", "@scope/pkg" or "lodash/fp")`;
  }
  if (isBuiltin(name)) return `module '${name}' is a Node built-in and cannot be used in event scripts`;
  return undefined;
}

/** How many bundles a server keeps (a few per app: app.json names its modules). */
export const MAX_BUNDLES = 64;

/**
 * A server's bundles by app folder, module name and package version (startApp makes one per
 * server): a reload bundles nothing again. Bounded: MAX_BUNDLES, the oldest dropped; a failed
 * bundle is dropped at once (the next start or reload tries again).
 */
export class ModuleBundles {
  readonly #kept = new Map<string, Promise<ScriptModule>>();

  /** The bundle kept under `key`, or the one `make` gives (kept). */
  get(key: string, make: () => Promise<ScriptModule>): Promise<ScriptModule> {
    const kept = this.#kept.get(key);
    if (kept !== undefined) return kept;
    const made = make();
    this.#kept.set(key, made);
    made.catch(() => {
      if (this.#kept.get(key) === made) this.#kept.delete(key);
    });
    if (this.#kept.size > MAX_BUNDLES) this.#kept.delete(this.#kept.keys().next().value as string);
    return made;
  }

  get size(): number {
    return this.#kept.size;
  }
}

/** The package a module name is in: 'lodash/fp' -> 'lodash', '@a/b/c' -> '@a/b'. */
function packageOf(name: string): string {
  const parts = name.split('/');
  return name.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}

async function versionOf(root: string, name: string): Promise<string> {
  try {
    const pkg = JSON.parse(await readFile(join(root, 'node_modules', packageOf(name), 'package.json'), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '';
  } catch {
    return '';
  }
}

const RESOLVING = Symbol('svc-resolving');

/**
 * Every file of a bundle comes from inside the app folder: esbuild, like Node, would otherwise look
 * in the node_modules of every parent folder, and a symlink or a `../` could reach any file.
 */
function insideApp(root: string): Plugin {
  return {
    name: 'svc-inside-app',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === RESOLVING || args.kind === 'entry-point') return undefined;
        // Left as require() calls, which the isolate refuses by name (a lazy one never runs).
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        const result = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: RESOLVING });
        if (result.errors.length > 0) return { errors: result.errors };
        if (result.external || result.namespace !== 'file' || result.path === '') return result;
        let real: string;
        try {
          real = await realpath(result.path);
        } catch {
          return { errors: [{ text: `"${args.path}" cannot be read` }] };
        }
        if (!real.startsWith(root + sep)) return { errors: [{ text: `"${args.path}" resolves to ${real}, outside the app folder` }] };
        return { path: real, namespace: 'file', sideEffects: result.sideEffects, suffix: result.suffix };
      });
    },
  };
}

/**
 * Bundles a module as `require(name)` answers it; a package that only has an ES module entry (no
 * "require" export) answers its namespace object, as Node's require() of an ES module does.
 */
async function bundle(root: string, name: string): Promise<ScriptModule> {
  try {
    try {
      return await bundleAs(root, name, `module.exports = require(${JSON.stringify(name)});`);
    } catch (err) {
      if (!notFound(err, name)) throw err;
      return await bundleAs(root, name, `import * as namespace from ${JSON.stringify(name)};\nmodule.exports = namespace;`);
    }
  } catch (err) {
    if (notFound(err, name)) {
      throw new Error(`app.json scripts.modules: module '${name}' is not installed in the app folder's node_modules (run npm install ${packageOf(name)} in the app folder)`, { cause: err });
    }
    const errors = (err as { errors?: { text: string }[] }).errors ?? [];
    const text = errors.map((e) => e.text).join('; ') || (err as Error).message;
    throw new Error(`app.json scripts.modules: module '${name}' cannot be bundled for event scripts: ${text}`, { cause: err });
  }
}

/** esbuild could not find the module itself (not one of its files). */
function notFound(err: unknown, name: string): boolean {
  const errors = (err as { errors?: { text: string }[] }).errors ?? [];
  return errors.length === 1 && /Could not resolve/.test(errors[0]?.text ?? '') && (errors[0]?.text ?? '').includes(`"${name}"`);
}

/** esbuild's bundle of an entry (throws esbuild's failure as it is). */
async function bundleAs(root: string, name: string, entry: string): Promise<ScriptModule> {
  // Loaded only by apps that name modules: esbuild starts a service process of its own.
  const { build } = await import('esbuild');
  const result = await build({
    stdin: { contents: entry, resolveDir: root, sourcefile: `scripts.modules:${name}`, loader: 'js' },
    absWorkingDir: root,
    bundle: true,
    write: false,
    format: 'cjs',
    // Packages' Node builds, as Deployd ran them: scripts have Node's pure built-ins, crypto and
    // http(s) (a browser build may need `window`, as form-data's does in sparkpost's request).
    platform: 'node',
    target: 'es2023',
    external: [...builtinModules, 'node:*'],
    // A module's free `process`, `Buffer`, `setTimeout`, `URL`, ... are the sandbox's (its wrapper's `__svcGlobals`).
    define: { ...NODE_GLOBALS_DEFINE, 'process.env.NODE_ENV': '"production"' },
    legalComments: 'none',
    logLevel: 'silent',
    plugins: [insideApp(root)],
  });
  return { name, source: result.outputFiles[0]?.text ?? '' };
}

/** Bundles each named module from the app folder's node_modules, dependencies included (kept in `bundles`). */
export async function bundleModules(appDir: string, names: readonly string[], bundles: ModuleBundles): Promise<ScriptModule[]> {
  const root = await realpath(appDir);
  const out: ScriptModule[] = [];
  // One at a time: esbuild is quick, and a start should not take every core.
  for (const name of names) {
    const problem = moduleNameProblem(name);
    if (problem !== undefined) throw new Error(`app.json scripts.modules: ${problem}`);
    const key = `${root}\n${name}\n${await versionOf(root, name)}`;
    out.push(await bundles.get(key, () => bundle(root, name)));
  }
  return out;
}

/**
 * The modules of app.json scripts.modules, bundled and loaded once in a script process as every
 * isolate will load them: a module that is missing, outside the app folder, too large, or whose
 * top-level code throws, loops or exhausts memory stops the start with why.
 */
export async function loadScriptModules(appDir: string, settings: { modules?: string[]; memoryLimitMb?: number; timeoutMs?: number } | undefined, logger: Logger, bundles: ModuleBundles): Promise<ScriptModule[]> {
  const names = settings?.modules ?? [];
  if (names.length === 0) return [];
  const started = performance.now();
  const modules = await bundleModules(appDir, names, bundles);
  await checkScriptModules(modules, {
    ...(settings?.memoryLimitMb !== undefined ? { memoryLimitMb: settings.memoryLimitMb } : {}),
    ...(settings?.timeoutMs !== undefined ? { timeoutMs: settings.timeoutMs } : {}),
  });
  const kb = Math.round(modules.reduce((sum, m) => sum + Buffer.byteLength(m.source), 0) / 1024);
  logger.info(`event scripts may require ${names.join(', ')} (${kb} KB bundled, loaded in ${Math.round(performance.now() - started)} ms)`);
  return modules;
}
