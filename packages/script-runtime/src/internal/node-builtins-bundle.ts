import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as Esbuild from 'esbuild';

/**
 * The Node built-ins that event scripts get as pure JavaScript, from the npm packages that
 * reimplement them for browsers (versions pinned by the lockfile): each is bundled with its own
 * dependencies into one CommonJS source; a built-in it requires stays a `require()` that the
 * isolate answers (so `stream` and `assert` share the one `buffer`). `url` and `util` are
 * wrapped by the isolate (isolate-node.ts), which adds what the packages lack (URL, TextEncoder).
 *
 * The built files carry the bundles (dist/node-builtins.json, written by `pnpm build`); from the
 * sources (tests) each is bundled when first asked for, with esbuild (a development dependency).
 */
export const BUNDLED_BUILTINS: Readonly<Record<string, string>> = {
  buffer: 'buffer/',
  events: 'events/',
  'npm:url': 'url/',
  'npm:util': 'util/',
  string_decoder: 'string_decoder/',
  path: 'path-browserify',
  assert: 'assert/',
  punycode: 'punycode/',
  querystring: 'querystring-es3',
  stream: 'stream-browserify',
};

/** Node built-ins a bundle leaves as require() calls: the isolate answers each (isolate-node.ts). */
export const OFFERED_BUILTINS = ['buffer', 'events', 'url', 'util', 'string_decoder', 'path', 'assert', 'punycode', 'querystring', 'stream', 'process', 'crypto', 'http', 'https', 'timers'];

/**
 * Node's globals, for esbuild's `define`: a module's free `process`, `Buffer`, `setTimeout`, ...
 * become properties of `__svcGlobals`, the fourth argument of every module's wrapper, whose
 * getters load the built-in only when read. Scripts' app modules are bundled with it too.
 */
export const NODE_GLOBALS_DEFINE: Readonly<Record<string, string>> = Object.fromEntries([
  ...['process', 'Buffer', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'queueMicrotask'].map((name) => [name, `__svcGlobals.${name}`]),
  ...['URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'atob', 'btoa', 'fetch', 'Headers', 'Response', 'AbortController', 'AbortSignal'].map((name) => [name, `__svcGlobals.${name}`]),
  ['__filename', '"/index.js"'],
  ['__dirname', '"/"'],
  ['global', 'globalThis'],
]);

/** Bundles every entry of BUNDLED_BUILTINS with esbuild, in one synchronous build (~0.3-1 s). */
export function bundleBuiltins(): Record<string, string> {
  const require = createRequire(import.meta.url);
  const esbuild = require('esbuild') as typeof Esbuild;
  const names = Object.keys(BUNDLED_BUILTINS);
  const result = esbuild.buildSync({
    entryPoints: names.map((name, i) => ({ in: require.resolve(BUNDLED_BUILTINS[name] as string), out: `b${i}` })),
    outdir: fileURLToPath(new URL('./.node-builtins', import.meta.url)),
    bundle: true,
    write: false,
    format: 'cjs',
    platform: 'browser',
    target: 'es2023',
    // `util/` (the npm package, as assert names it) is external too: the isolate answers it as `util`.
    external: OFFERED_BUILTINS,
    define: { ...NODE_GLOBALS_DEFINE, 'process.env.NODE_DEBUG': 'undefined' },
    legalComments: 'none',
    logLevel: 'silent',
  });
  const out: Record<string, string> = {};
  for (const file of result.outputFiles) {
    const index = Number(/b(\d+)\.js$/.exec(file.path)?.[1]);
    out[names[index] as string] = withoutStackLimitWrites(file.text);
  }
  return out;
}

/**
 * Error.stackTraceLimit is read-only in the isolate (isolate-seal.ts); `assert` sets it to 0 and
 * back around `new Error` in strict code, which would throw there. Its writes become no-ops.
 */
export function withoutStackLimitWrites(text: string): string {
  return text.replace(/\bError\.stackTraceLimit = ([\w$]+);/g, 'void $1;');
}

let sources: Readonly<Record<string, string>> | undefined;

/**
 * The bundled built-ins: given by the server process (sources run under tests bundle them once
 * there, see ScriptPool), else those of dist/node-builtins.json, else bundled now.
 */
export function builtinSources(): Readonly<Record<string, string>> {
  if (sources !== undefined) return sources;
  sources = import.meta.url.endsWith('.js') ? (JSON.parse(readFileSync(new URL('../node-builtins.json', import.meta.url), 'utf8')) as Record<string, string>) : bundleBuiltins();
  return sources;
}

/** For a script process: the sources its server process sent (see builtinSources). */
export function useBuiltinSources(given: Readonly<Record<string, string>>): void {
  sources = given;
}

/** Whether built-ins come from the built files (else the server bundles them and sends them along). */
export const BUILT = import.meta.url.endsWith('.js');

/** One bundled built-in's source. */
export function builtinSource(name: string): string {
  const all = builtinSources();
  const source = Object.hasOwn(all, name) ? all[name] : undefined;
  if (source === undefined) throw new Error(`no bundled built-in ${name}`);
  return source;
}
