import { cp, mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { extname, join, relative, resolve } from 'node:path';

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
  'dpd-email': ['@svc/type-email', 'type "Email"; settings: see its README'],
  'dpd-s3': ['@svc/type-bucket', 'type "Bucket", any S3-compatible storage; settings differ'],
  'dpd-importer': ['@svc/type-importer', 'type "Importer"'],
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

const CODE_EXTENSIONS = new Set(['.js', '.mjs', '.html', '.htm', '.ts', '.jsx', '.tsx', '.vue', '.svelte']);
/** Folders whose files are rewritten: event scripts and the public site. */
const CODE_ROOTS = ['resources', 'public'];
const SKIP_DIRS = new Set(['node_modules', '.git']);

/**
 * Turns a Deployd 1.2 app folder into an svc app: `.dpd/` becomes `.svc/` (keys.json kept),
 * `app.dpd` goes, `dpd` names in event scripts and public files become `svc`, and each Deployd
 * module of package.json is named with its svc package (or "no equivalent"). Prints every change.
 */
export async function migrateDeployd(options: MigrateOptions): Promise<MigrateReport> {
  const source = resolve(options.dir);
  if (!(await isDir(source))) throw new Error(`${options.dir} is not a folder`);
  if (!(await exists(join(source, 'resources'))) && !(await exists(join(source, 'app.dpd'))) && !(await exists(join(source, '.dpd')))) {
    throw new Error(`${options.dir} does not look like a Deployd app (no app.dpd, .dpd/ or resources/)`);
  }
  let dir = source;
  const report: MigrateReport = { changes: [], modules: [] };
  const change = (line: string): void => {
    report.changes.push(line);
    options.print(line);
  };
  if (options.out !== undefined) {
    const out = resolve(options.out);
    if (await exists(out)) {
      if ((await readdir(out)).length > 0) throw new Error(`${options.out} exists and is not empty`);
    }
    if (out.startsWith(`${source}/`)) throw new Error('--out cannot be inside the app folder');
    change(`copy ${source} -> ${out}`);
    if (!options.dryRun) {
      await mkdir(out, { recursive: true });
      await cp(source, out, { recursive: true, filter: (from) => !from.slice(source.length).split('/').some((part) => part === 'node_modules' || part === '.git') });
    }
    // A dry run reads the source; the report names the files where they will be.
    dir = options.dryRun ? source : out;
  }
  const write = !options.dryRun;

  if (await exists(join(dir, '.dpd'))) {
    if (await exists(join(dir, '.svc'))) change('kept .dpd/: .svc/ exists already (merge keys.json by hand)');
    else {
      change('rename .dpd/ -> .svc/ (keys.json kept: the root key stays the same)');
      if (write) await rename(join(dir, '.dpd'), join(dir, '.svc'));
    }
  }
  if (await exists(join(dir, 'app.dpd'))) {
    change('remove app.dpd (svc needs no marker file)');
    if (write) await rm(join(dir, 'app.dpd'));
  }

  for (const root of CODE_ROOTS) {
    for (const file of await codeFiles(join(dir, root))) {
      const text = await readFile(file, 'utf8');
      const lines = text.split('\n');
      let changed = false;
      for (let i = 0; i < lines.length; i++) {
        const before = lines[i] as string;
        let after = before;
        for (const [pattern, replacement] of REWRITES) after = after.replace(pattern, replacement);
        if (after === before) continue;
        changed = true;
        lines[i] = after;
        change(`${relative(dir, file)}:${i + 1}: ${before.trim()}  ->  ${after.trim()}`);
      }
      if (changed && write) await writeFile(file, lines.join('\n'));
    }
  }

  for (const line of await typeHints(dir)) {
    report.modules.push(line);
    options.print(line);
  }

  const pkgFile = join(dir, 'package.json');
  if (await exists(pkgFile)) {
    const pkg = JSON.parse(await readFile(pkgFile, 'utf8')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string>; scripts?: Record<string, string> };
    let changed = false;
    for (const field of ['dependencies', 'devDependencies'] as const) {
      const deps = pkg[field];
      if (deps === undefined) continue;
      for (const name of Object.keys(deps).sort()) {
        if (name !== 'deployd' && !name.startsWith('dpd-')) continue;
        changed = true;
        const replacement = MODULES[name];
        delete deps[name];
        if (replacement) deps[replacement[0]] = options.version === undefined ? '*' : `^${options.version}`;
        const line = `package.json: ${name} -> ${replacement ? `${replacement[0]} (${replacement[1]})` : 'no equivalent (removed from package.json; the resources of its type will not start)'}`;
        report.modules.push(line);
        options.print(line);
      }
    }
    for (const [script, command] of Object.entries(pkg.scripts ?? {})) {
      const next = command.replace(/(^|[\s;&|])dpd(?=$|\s)/g, '$1svc');
      if (next === command) continue;
      changed = true;
      (pkg.scripts as Record<string, string>)[script] = next;
      change(`package.json: scripts.${script}: ${command}  ->  ${next}`);
    }
    if (changed && write) await writeFile(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`);
  }
  if (report.changes.length === 0 && report.modules.length === 0) options.print('nothing to change');
  else if (options.dryRun) options.print('dry run: nothing was written');
  return report;
}

/** Resource types svc has (built in or as first-party packages). */
const SVC_TYPES = new Set(['Collection', 'UserCollection', 'Event', 'Email', 'Bucket', 'Importer']);
const TYPE_HINTS: Record<string, string> = { S3Bucket: 'use type "Bucket" of @svc/type-bucket (settings differ)' };

/** A line for each resource whose type svc does not have under that name. */
async function typeHints(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(folder, entry.name);
      try {
        const type = (JSON.parse(await readFile(join(path, 'config.json'), 'utf8')) as { type?: unknown }).type;
        if (typeof type === 'string' && !SVC_TYPES.has(type)) {
          out.push(`${relative(dir, path)}: type ${type}: ${TYPE_HINTS[type] ?? 'no equivalent among svc packages (install a type package that provides it)'}`);
        }
      } catch {
        // No config.json here: a folder of nested resources.
      }
      await walk(path);
    }
  };
  if (await isDir(join(dir, 'resources'))) await walk(join(dir, 'resources'));
  return out;
}

async function codeFiles(dir: string): Promise<string[]> {
  if (!(await isDir(dir))) return [];
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) out.push(...(await codeFiles(path)));
    } else if (entry.isFile() && CODE_EXTENSIONS.has(extname(entry.name).toLowerCase())) {
      out.push(path);
    }
  }
  return out.sort();
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
