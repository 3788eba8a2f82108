import { realpath, stat } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { basename, extname, join, resolve } from 'node:path';
import { OFFERED_BUILTINS } from '@svc/script-runtime';
import { readAppTree, readEntry } from './appTree.js';
import type { AppTree } from './appTree.js';
import { DEPLOYD_TYPE_NAMES } from './loadApp.js';
import { outFolder, placeMigratedApp } from './placeMigratedApp.js';
import { moduleNameProblem } from './scriptModules.js';

/** Options of {@link migrateDeployd}. */
export interface MigrateOptions {
  /** The Deployd app folder. */
  dir: string;
  /** Write the migrated app here (a copy) instead of changing `dir` in place. */
  out?: string;
  /** Print what would change; write nothing. */
  dryRun?: boolean;
  /** Where the report goes, a line at a time. */
  print(line: string): void;
  /** The svc version the new dependencies ask for (`^<version>`); default any (`*`). */
  version?: string;
  /** Aborting it (SIGINT) stops the migration and undoes what it wrote, if the switch to the new folder has not begun. */
  signal?: AbortSignal;
}

/** What a migration did (or would do). */
export interface MigrateReport {
  /** One line per change: renames, removals and every rewritten line of code. */
  changes: string[];
  /** One line per Deployd module of package.json: its svc package or "no equivalent". */
  modules: string[];
}

/** Deployd modules, the svc package that replaces each, and a note. */
const MODULES: Record<string, [pkg: string, note: string]> = {
  deployd: ['@svc/server', 'the svc command'],
  'dpd-event': ['@svc/type-event', 'type "Event"'],
  'dpd-email': ['@svc/type-email', 'type "Email"; only event scripts and root send unless its config sets "allowClients": true (Deployd let any client send); settings: see its README'],
  'dpd-s3': ['@svc/type-bucket', 'type "Bucket", any S3-compatible storage; settings differ'],
  'dpd-importer': ['@svc/type-importer', 'type "Importer"'],
  'dpd-fileupload': ['@svc/type-fileupload', 'type "Fileupload"; files are served at /<resource>/[<subdir>/]<file>'],
};

/**
 * `dpd` names in scripts and pages, and what they become. Only code-like uses: `dpd` followed by
 * `.`, `(` or `[`, `/dpd.js`, `dpd-ssh-key`, `_dpd`; prose that says "dpd" is left alone.
 */
const REWRITES: [RegExp, string][] = [
  [/\/dpd\.js\b/g, '/svc.js'],
  [/\bdpd-ssh-key\b/gi, 'svc-ssh-key'],
  [/(^|[^\w$.])_dpd\b/g, '$1_svc'],
  [/(^|[^\w$.-])dpd(?=\s*[.([])/g, '$1svc'],
];

/**
 * A bare `dpd` (the client object handed on as a value: `.constant("dpd", dpd)`, `f(dpd)`,
 * `x = dpd;`) becomes `svc`. Only where the value is used: `dpd` inside another word, a string
 * ("dpd", "dpd-event"), an object key (`{dpd: 1}`) or a declaration (`var dpd`, a parameter
 * `function ($scope, dpd)` that Angular injects by its name) is left alone.
 */
const BARE_DPD = /(?<![\w$.'"`/\\-])dpd(?![\w$'"`/\\-])/g;
/** What may stand before a bare `dpd` used as a value, and what after. */
const VALUE_BEFORE = /(?:[(,=[!&|?:>]|\breturn|\btypeof)\s*$/;
const VALUE_AFTER = /^\s*(?:[),;\]}&|?]|[=!]==?|$)/;
/** Inside the parameter list of a function or an arrow function: a declaration. */
const PARAMETERS_BEFORE = /\bfunction\b[^(]*\([^)]*$/;
const PARAMETERS_AFTER = /^[^()]*\)\s*=>/;

/** How far before and after a bare `dpd` its context is read: a minified line stays linear. */
const CONTEXT = 400;

/** The line with each bare `dpd` used as a value renamed `svc` (see {@link BARE_DPD}). */
export function rewriteBareDpd(line: string): string {
  // Quotes seen so far on the line, counted once as the matches move along it.
  const quotes: Record<string, number> = { '"': 0, "'": 0, '`': 0 };
  let counted = 0;
  return line.replace(BARE_DPD, (match: string, offset: number) => {
    for (; counted < offset; counted++) {
      const char = line[counted] as string;
      if (char in quotes) quotes[char] = (quotes[char] as number) + 1;
    }
    // An odd number of quotes before it on the line: inside a string.
    if (Object.values(quotes).some((n) => n % 2 === 1)) return match;
    const before = line.slice(Math.max(0, offset - CONTEXT), offset);
    const after = line.slice(offset + match.length, offset + match.length + CONTEXT);
    if (!VALUE_BEFORE.test(before) || !VALUE_AFTER.test(after)) return match;
    if (PARAMETERS_BEFORE.test(before) || PARAMETERS_AFTER.test(after)) return match;
    return 'svc';
  });
}

const CODE_EXTENSIONS = new Set(['.js', '.mjs', '.html', '.htm', '.ts', '.jsx', '.tsx', '.vue', '.svelte']);
/** Folders whose files are rewritten: event scripts and the public site. */
const CODE_ROOTS = ['resources', 'public'];
/**
 * Turns a Deployd 1.2 app folder into an svc app: `.dpd/` becomes `.svc/` (keys.json kept),
 * `app.dpd` goes, `dpd` names in event scripts and public files become `svc`, and each Deployd
 * module of package.json is named with its svc package (or "no equivalent"). Prints every change.
 *
 * Everything is read and checked first, without following a link out of the app; the new app is
 * then written into a fresh folder beside its destination and renamed into place, so a failure (or
 * SIGINT) leaves no half-migrated folder. In place, the Deployd folder is kept as
 * `<app>.deployd-backup`.
 */
export async function migrateDeployd(options: MigrateOptions): Promise<MigrateReport> {
  const given = resolve(options.dir);
  if (!(await isDir(given))) throw new Error(`${options.dir} is not a folder`);
  const source = await realpath(given);
  if (!(await exists(join(source, 'resources'))) && !(await exists(join(source, 'app.dpd'))) && !(await exists(join(source, '.dpd')))) {
    throw new Error(`${options.dir} does not look like a Deployd app (no app.dpd, .dpd/ or resources/)`);
  }
  const out = options.out === undefined ? undefined : await outFolder(options.out, source);
  const report: MigrateReport = { changes: [], modules: [] };
  const change = (line: string): void => {
    report.changes.push(line);
    options.print(line);
  };
  const module = (line: string): void => {
    report.modules.push(line);
    options.print(line);
  };
  const tree = await readAppTree(source, options.dir, options.signal);
  if (out !== undefined) change(`copy ${source} -> ${out}`);
  /** Changes to files: in place, none means nothing to write. */
  let edits = 0;
  for (const { rel, target } of tree.dangling) change(`leave out ${rel}: a link to ${target}, which does not exist`);
  const entries = new Map(tree.entries.map((entry) => [entry.rel, entry]));
  const rewriteRoot = (from: string, to: string): void => {
    for (const entry of [...tree.entries, ...tree.skipped]) {
      if (entry.rel === from || entry.rel.startsWith(`${from}/`)) entry.rel = to + entry.rel.slice(from.length);
    }
  };
  const drop = (rel: string): void => {
    const kept = (entry: { rel: string }): boolean => entry.rel !== rel && !entry.rel.startsWith(`${rel}/`);
    tree.entries = tree.entries.filter(kept);
    tree.skipped = tree.skipped.filter(kept);
  };

  if (entries.has('.dpd')) {
    if (entries.has('.svc')) change('kept .dpd/: .svc/ exists already (merge keys.json by hand)');
    else {
      change('rename .dpd/ -> .svc/ (keys.json kept: the root key stays the same)');
      rewriteRoot('.dpd', '.svc');
      edits++;
    }
  }
  if (entries.has('app.dpd')) {
    change('remove app.dpd (svc needs no marker file)');
    drop('app.dpd');
    edits++;
  }

  edits += await renameTypes(tree, options.dir, change);

  // Before the rewrites: uploaded files are data, never rewritten.
  const uploads = await moveUploadFolders(tree, options.dir, change, rewriteRoot);
  edits += uploads.length;
  const uploadLinks = uploads.map(({ directory, resource }): [RegExp, string] => [new RegExp(`(["'\`(]|=\\s*)/?${escapeRegExp(directory)}/`, 'g'), `$1/${resource}/`]);

  for (const root of CODE_ROOTS) {
    const files = tree.entries.filter((entry) => entry.kind === 'file' && entry.rel.startsWith(`${root}/`) && CODE_EXTENSIONS.has(extname(entry.rel).toLowerCase()));
    for (const file of files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))) {
      options.signal?.throwIfAborted();
      const lines = (await readEntry(file, options.dir)).split('\n');
      let changed = false;
      for (let i = 0; i < lines.length; i++) {
        const before = lines[i] as string;
        let after = before;
        for (const [pattern, replacement] of REWRITES) after = after.replace(pattern, replacement);
        after = rewriteBareDpd(after);
        if (root === 'public') for (const [pattern, replacement] of uploadLinks) after = after.replace(pattern, replacement);
        if (after === before) continue;
        changed = true;
        lines[i] = after;
        change(`${file.rel}:${i + 1}: ${before.trim()}  ->  ${after.trim()}`);
      }
      if (changed) {
        file.content = lines.join('\n');
        edits++;
      }
    }
  }

  for (const line of await typeHints(tree, options.dir)) module(line);

  const pkgFile = entries.get('package.json');
  edits += await scriptModules(tree, options.dir, pkgFile?.kind === 'file' ? await readEntry(pkgFile, options.dir) : undefined, module, change);
  const range = options.version === undefined ? '*' : `^${options.version}`;
  const typePackages = await typePackagesUsed(tree, options.dir);
  if (pkgFile === undefined && typePackages.size > 0) {
    // No package.json (Deployd installed globally): one that names the type packages, or svc loads none.
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    const deps = Object.fromEntries([...typePackages.keys()].sort().map((name) => [name, range]));
    tree.entries.push({ rel: 'package.json', kind: 'file', from: '', dev: 0, ino: 0, mode: 0o644, uid, gid, content: `${JSON.stringify({ name: basename(source), private: true, dependencies: deps }, null, 2)}\n` });
    for (const [name, used] of [...typePackages].sort()) change(`package.json (new): dependencies.${name} (${used}; run npm install)`);
    edits++;
  }
  if (pkgFile?.kind === 'file') {
    const pkg = parsePackage(await readEntry(pkgFile, options.dir), join(options.dir, 'package.json'));
    let changed = false;
    for (const field of ['dependencies', 'devDependencies'] as const) {
      const deps = pkg[field];
      if (!isRecord(deps)) continue;
      for (const name of Object.keys(deps).sort()) {
        if (name !== 'deployd' && !name.startsWith('dpd-')) continue;
        changed = true;
        const replacement = MODULES[name];
        delete deps[name];
        if (replacement) deps[replacement[0]] = range;
        module(`package.json: ${name} -> ${replacement ? `${replacement[0]} (${replacement[1]})` : 'no equivalent (removed from package.json; the resources of its type will not start)'}`);
      }
    }
    // A type used by a resource whose package the app did not declare (svc loads only dependencies).
    for (const [name, used] of [...typePackages].sort()) {
      const dependencies = isRecord(pkg.dependencies) ? pkg.dependencies : (pkg.dependencies = {});
      if (Object.hasOwn(dependencies, name)) continue;
      const dev = isRecord(pkg.devDependencies) && Object.hasOwn(pkg.devDependencies, name) ? pkg.devDependencies : undefined;
      dependencies[name] = dev === undefined ? range : dev[name];
      if (dev !== undefined) delete dev[name];
      changed = true;
      change(`package.json: ${dev === undefined ? 'add' : 'move from devDependencies:'} dependencies.${name} (${used}; svc loads the types of dependencies only${dev === undefined ? '; run npm install' : ''})`);
    }
    const scripts = pkg.scripts;
    for (const [script, command] of Object.entries(isRecord(scripts) ? scripts : {})) {
      if (typeof command !== 'string') continue;
      const next = command.replace(/(^|[\s;&|])dpd(?=$|\s)/g, '$1svc');
      if (next === command) continue;
      changed = true;
      (scripts as Record<string, unknown>)[script] = next;
      change(`package.json: scripts.${script}: ${command}  ->  ${next}`);
    }
    if (changed) {
      pkgFile.content = `${JSON.stringify(pkg, null, 2)}\n`;
      edits++;
    }
  }

  const nothing = report.changes.length === 0 && report.modules.length === 0;
  if (nothing) options.print('nothing to change');
  else if (options.dryRun) options.print('dry run: nothing was written');
  if (options.dryRun) return report;
  if (out !== undefined || edits > 0) await placeMigratedApp(tree, { label: options.dir, print: options.print, ...(out === undefined ? {} : { out }), ...(options.signal ? { signal: options.signal } : {}) });
  return report;
}

function parsePackage(text: string, label: string): Record<string, unknown> {
  let pkg: unknown;
  try {
    pkg = JSON.parse(text);
  } catch (err) {
    throw new Error(`${label} is not valid JSON (${(err as Error).message}); fix it, then run the command again`, { cause: err });
  }
  if (!isRecord(pkg)) throw new Error(`${label} is not a JSON object; fix it, then run the command again`);
  return pkg;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Resource types svc has (built in or as first-party packages). */
const SVC_TYPES = new Set(['Collection', 'UserCollection', 'Event', 'Email', 'Bucket', 'Importer', 'Fileupload']);
/** svc's type packages, by the type each provides. */
const TYPE_PACKAGES: Readonly<Record<string, string>> = {
  Event: '@svc/type-event',
  Email: '@svc/type-email',
  Bucket: '@svc/type-bucket',
  Importer: '@svc/type-importer',
  Fileupload: '@svc/type-fileupload',
};

/**
 * The type packages the resources need, by package, with the resources that use each (their
 * type as the migration leaves it: "EventResource" is "Event" by then), whatever package.json
 * declared: Deployd loaded a type from node_modules, declared or not.
 */
async function typePackagesUsed(tree: AppTree, label: string): Promise<Map<string, string>> {
  const used = new Map<string, string[]>();
  for (const config of tree.entries) {
    if (config.kind !== 'file' || !config.rel.startsWith('resources/') || !config.rel.endsWith('/config.json')) continue;
    const type = configType(config.content ?? (await readEntry(config, label)));
    if (typeof type !== 'string' || !Object.hasOwn(TYPE_PACKAGES, type)) continue;
    const name = TYPE_PACKAGES[type] as string;
    used.set(name, [...(used.get(name) ?? []), `/${config.rel.slice('resources/'.length, -'/config.json'.length)}`]);
  }
  const out = new Map<string, string>();
  for (const [name, paths] of used) out.set(name, `type ${Object.keys(TYPE_PACKAGES).find((t) => TYPE_PACKAGES[t] === name) ?? ''} of ${paths.sort().join(', ')}`);
  return out;
}
const TYPE_HINTS: Record<string, string> = { S3Bucket: 'use type "Bucket" of @svc/type-bucket (settings differ)' };

/** A line for each resource whose type svc does not have under that name. */
async function typeHints(tree: AppTree, label: string): Promise<string[]> {
  const out: string[] = [];
  const files = new Map(tree.entries.map((entry) => [entry.rel, entry]));
  for (const folder of tree.entries) {
    if (folder.kind !== 'dir' || !folder.rel.startsWith('resources/')) continue;
    const config = files.get(`${folder.rel}/config.json`);
    // No config.json here: a folder of nested resources.
    if (config?.kind !== 'file') continue;
    const type = configType(await readEntry(config, label));
    if (type === undefined) out.push(`${config.rel}: not valid JSON; svc will not load this resource until it is fixed`);
    else if (typeof type === 'string' && !SVC_TYPES.has(type) && !Object.hasOwn(DEPLOYD_TYPE_NAMES, type)) {
      out.push(
        `${folder.rel}: type ${type}: ${
          TYPE_HINTS[type] ??
          `no equivalent among svc packages: svc does not start while /${folder.rel.slice('resources/'.length)} has this type (the app loses that resource and its events: install a type package that provides "${type}", or remove ${folder.rel}/ to serve the rest)`
        }`,
      );
    }
  }
  return out;
}

/**
 * Gives each resource whose config.json names a type by its Deployd name (dpd-event's
 * "EventResource") the svc name ("Event"). Only the `type` changes: the rest of the file is kept
 * as it was written. Answers the number of files changed.
 */
async function renameTypes(tree: AppTree, label: string, change: (line: string) => void): Promise<number> {
  let renamed = 0;
  for (const config of tree.entries) {
    if (config.kind !== 'file' || !config.rel.startsWith('resources/') || !config.rel.endsWith('/config.json')) continue;
    const text = await readEntry(config, label);
    const type = configType(text);
    if (typeof type !== 'string' || !Object.hasOwn(DEPLOYD_TYPE_NAMES, type)) continue;
    const svcType = DEPLOYD_TYPE_NAMES[type] as string;
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const pattern = new RegExp(`("type"\\s*:\\s*)"${escapeRegExp(type)}"`, 'g');
    const matches = text.match(pattern)?.length ?? 0;
    // Once in the text: that is the resource's type. Else (a property with the same words, escapes) the file is written anew.
    config.content = matches === 1 ? text.replace(pattern, `$1"${svcType}"`) : `${JSON.stringify({ ...parsed, type: svcType }, null, 2)}\n`;
    change(`${config.rel}: type ${type} -> ${svcType} (Deployd's name of the ${svcType} type)`);
    renamed++;
  }
  return renamed;
}

/**
 * dpd-fileupload kept its files in public/<directory>/, where Deployd's static server served them
 * as they were (an uploaded page ran on the app's origin). @svc/type-fileupload keeps them in
 * <directory>/ of the app, outside public/, and serves them itself with safe headers: the folder
 * moves there, and the links of the public files to them (`"/upload/a.png"`, `src="upload/a.png"`)
 * become links to the resource (`"/photos/a.png"`). Answers the folders moved.
 */
async function moveUploadFolders(tree: AppTree, label: string, change: (line: string) => void, rewriteRoot: (from: string, to: string) => void): Promise<{ directory: string; resource: string }[]> {
  const files = new Map(tree.entries.map((entry) => [entry.rel, entry]));
  const moved: { directory: string; resource: string }[] = [];
  for (const folder of tree.entries) {
    if (folder.kind !== 'dir' || !folder.rel.startsWith('resources/')) continue;
    const config = files.get(`${folder.rel}/config.json`);
    if (config?.kind !== 'file') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(await readEntry(config, label));
    } catch {
      continue;
    }
    if (!isRecord(parsed) || parsed.type !== 'Fileupload') continue;
    const name = folder.rel.slice('resources/'.length);
    const directory = typeof parsed.directory === 'string' && parsed.directory !== '' ? parsed.directory.replace(/^\/+|\/+$/g, '') : 'upload';
    const from = `public/${directory}`;
    if (files.get(from)?.kind !== 'dir') continue;
    if (directory.includes('/') || files.has(directory)) {
      change(`kept ${from}/: move the files of Fileupload resource ${name} into ${directory}/ of the app by hand (svc does not serve them from public/)`);
      continue;
    }
    change(`move ${from}/ -> ${directory}/ (the files of Fileupload resource ${name}: served at /${name}/<file>, no longer as /${directory}/<file>; links in public files are rewritten below, check others)`);
    rewriteRoot(from, directory);
    files.delete(from);
    moved.push({ directory, resource: name });
  }
  return moved;
}

/** `require('name')` with a literal name, in an event script. */
const REQUIRE = /(?<![\w$.])require\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g;

/**
 * The modules the event scripts require: those in the Deployd app's package.json go into app.json
 * `scripts.modules` (svc bundles them from node_modules at start); for every other one the report
 * says what the app loses. Answers the number of files changed (app.json: 0 or 1).
 */
async function scriptModules(tree: AppTree, label: string, pkgText: string | undefined, module: (line: string) => void, change: (line: string) => void): Promise<number> {
  const required = new Map<string, string[]>();
  const scripts = tree.entries.filter((entry) => entry.kind === 'file' && entry.rel.startsWith('resources/') && entry.rel.endsWith('.js'));
  for (const file of scripts.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))) {
    for (const match of (file.content ?? (await readEntry(file, label))).matchAll(REQUIRE)) {
      const name = match[2] as string;
      const files = required.get(name) ?? [];
      if (!files.includes(file.rel)) files.push(file.rel);
      required.set(name, files);
    }
  }
  if (required.size === 0) return 0;
  let deps: Record<string, unknown> = {};
  try {
    const pkg = pkgText === undefined ? undefined : (JSON.parse(pkgText) as unknown);
    if (isRecord(pkg)) deps = { ...(isRecord(pkg.devDependencies) ? pkg.devDependencies : {}), ...(isRecord(pkg.dependencies) ? pkg.dependencies : {}) };
  } catch {
    // package.json's own problem is reported below, where it is rewritten.
  }
  const named: string[] = [];
  for (const name of [...required.keys()].sort()) {
    const where = `${(required.get(name) as string[]).join(', ')}: require('${name}')`;
    const pkgName = name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : (name.split('/')[0] as string);
    const loses = 'the script fails where it requires it (the request answers 500)';
    if (name.startsWith('.') || name.startsWith('/')) module(`${where}: a file, not a package: svc scripts require packages only; ${loses} (copy the code into the script, or make it a package in node_modules and add it to app.json scripts.modules)`);
    else if (isBuiltin(name) && OFFERED_BUILTINS.includes(name.replace(/^node:/, ''))) module(`${where}: a Node built-in svc scripts have (in the sandbox; http/https reach hosts app.json outbound allows besides the public Internet): nothing to do`);
    else if (isBuiltin(name)) module(`${where}: a Node built-in: no host access from svc scripts; ${loses} (do the work in a resource type or a separate service)`);
    else if (pkgName === 'deployd' || pkgName.startsWith('dpd-')) module(`${where}: Deployd's own module: no equivalent in svc scripts; ${loses}`);
    else if (moduleNameProblem(name) !== undefined) module(`${where}: not a package name svc can allow; ${loses}`);
    else if (!Object.hasOwn(deps, pkgName)) module(`${where}: not in package.json, so not mapped; ${loses} (npm install ${pkgName} in the app folder, then add "${name}" to app.json scripts.modules)`);
    else {
      named.push(name);
      module(`${where}: in package.json: added to app.json scripts.modules (svc bundles it from the app's node_modules at start: run npm install first)`);
    }
  }
  if (named.length === 0) return 0;
  let appFile = tree.entries.find((entry) => entry.rel === 'app.json');
  let settings: Record<string, unknown> = {};
  if (appFile?.kind === 'file') {
    const text = appFile.content ?? (await readEntry(appFile, label));
    const parsed = text.trim() === '' ? {} : parseJsonObject(text);
    if (parsed === undefined) {
      module(`app.json is not a JSON object: add ${JSON.stringify(named)} to its scripts.modules by hand`);
      return 0;
    }
    settings = parsed;
  } else if (appFile === undefined) {
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    appFile = { rel: 'app.json', kind: 'file', from: '', dev: 0, ino: 0, mode: 0o644, uid, gid };
    tree.entries.push(appFile);
  } else return 0;
  const scriptSettings = isRecord(settings.scripts) ? settings.scripts : {};
  const before = Array.isArray(scriptSettings.modules) ? scriptSettings.modules.filter((m): m is string => typeof m === 'string') : [];
  const modules = [...new Set([...before, ...named])];
  if (modules.length === before.length) return 0;
  settings.scripts = { ...scriptSettings, modules };
  appFile.content = `${JSON.stringify(settings, null, 2)}\n`;
  change(`app.json: scripts.modules ${JSON.stringify(modules)} (the packages the event scripts require)`);
  return 1;
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The `type` of a resource's config.json text: `undefined` when it is not JSON. */
function configType(text: string): unknown {
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isRecord(config) ? config.type : null;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function isDir(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
