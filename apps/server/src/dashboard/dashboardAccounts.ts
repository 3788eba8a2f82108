import { constants } from 'node:fs';
import { lstat, mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isPlainObject, SvcError, UserCollection } from '@svc/core';
import type { Resource } from '@svc/core';
import type { AccountMailKind, ResourceConfig } from '@svc/core';
import { PROVIDER_PRESETS } from '@svc/core';
import { builtInTemplates } from '../accountMailTemplates.js';
import type { MailTemplate } from '../accountMailTemplates.js';

// The dashboard's Accounts tab (issue 27): a UserCollection's `auth` settings and its mail
// templates. Settings are saved through the dashboard's one config path (written, loaded, undone
// when the server refuses them); secrets only ever as `${env:NAME}` references.

/** What the Accounts endpoints need from the dashboard. */
export interface AccountsDeps {
  /** The resource's folder and config as last loaded; 404 when it does not exist. */
  folderOf(name: string): { dir: string; config: ResourceConfig };
  /** The dashboard's config path: checks, writes config.json, reloads or undoes. */
  saveConfig(name: string, config: ResourceConfig): Promise<void>;
  /** One change of the app folder at a time. */
  serial<T>(work: () => Promise<T>): Promise<T>;
  reloadOrUndo(undo: () => Promise<void>): Promise<void>;
  writeAtomic(file: string, text: string): Promise<void>;
  /** The running resources (the Accounts tab counts the users `verification.required` would keep out). */
  resources(): readonly Resource[];
}

/** What a secret written as a value in config.json is answered as (never the value itself). */
export const HIDDEN_SECRET = '(hidden: a value written in config.json)';
const ENV_REFERENCE = /^\$\{env:[A-Za-z_][A-Za-z0-9_]*\}$/;
const KINDS: readonly AccountMailKind[] = ['verification', 'reset', 'code'];
const PARTS = { subject: 'subject.txt', text: 'txt', html: 'html' } as const;
type Part = keyof typeof PARTS;
/** As the mail loader reads language folders (accountMailTemplates.ts). */
const LANGUAGE = /^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?$/;
const MAX_TEMPLATE = 64 * 1024;

/** The places in `auth` that hold a secret: provider client secrets, Apple's key and the SMTP password. */
function secretSlots(auth: Record<string, unknown>): { holder: Record<string, unknown>; key: string; where: string }[] {
  const out: { holder: Record<string, unknown>; key: string; where: string }[] = [];
  const providers = isPlainObject(auth.oauth) && isPlainObject(auth.oauth.providers) ? auth.oauth.providers : {};
  for (const [name, p] of Object.entries(providers)) {
    if (!isPlainObject(p)) continue;
    out.push({ holder: p, key: 'clientSecret', where: `auth.oauth.providers.${name}.clientSecret` });
    if (p.privateKey !== undefined) out.push({ holder: p, key: 'privateKey', where: `auth.oauth.providers.${name}.privateKey` });
  }
  if (isPlainObject(auth.mail) && isPlainObject(auth.mail.smtp)) out.push({ holder: auth.mail.smtp, key: 'password', where: 'auth.mail.smtp.password' });
  return out;
}

/**
 * The config as the dashboard may show it: a secret written as a value (not an `${env:NAME}`
 * reference) is replaced by {@link HIDDEN_SECRET}. Copies; the loaded config is untouched.
 */
export function redactSecrets(config: ResourceConfig): ResourceConfig {
  if (!isPlainObject(config.auth)) return config;
  const copy = structuredClone(config);
  for (const slot of secretSlots(copy.auth as Record<string, unknown>)) {
    const value = slot.holder[slot.key];
    if (value !== undefined && !(typeof value === 'string' && ENV_REFERENCE.test(value))) slot.holder[slot.key] = HIDDEN_SECRET;
  }
  return copy;
}

/** Puts back, where a saved config says {@link HIDDEN_SECRET}, the value config.json has there. */
export function restoreSecrets(config: ResourceConfig, before: unknown): void {
  if (!isPlainObject(config.auth)) return;
  const old = isPlainObject(before) && isPlainObject(before.auth) ? secretSlots(before.auth) : [];
  for (const slot of secretSlots(config.auth)) {
    if (slot.holder[slot.key] !== HIDDEN_SECRET) continue;
    const kept = old.find((o) => o.where === slot.where);
    if (kept === undefined || kept.holder[kept.key] === undefined) {
      throw new SvcError('BAD_REQUEST', `${slot.where}: there is no value to keep; write it as \${env:NAME}`, { errors: { [slot.where]: 'an ${env:NAME} reference' } });
    }
    slot.holder[slot.key] = kept.holder[kept.key];
  }
}

function userCollection(deps: AccountsDeps, name: string): { dir: string; config: ResourceConfig } {
  const folder = deps.folderOf(name);
  if (folder.config.type !== 'UserCollection') throw new SvcError('NOT_FOUND', `${name} is a ${folder.config.type}: accounts are settings of a UserCollection`);
  return folder;
}

/**
 * GET accounts: the `auth` settings (secrets as references or hidden), the presets, the messages,
 * and how many users have no verified address (whom `verification.required` keeps out).
 */
async function view(deps: AccountsDeps, name: string): Promise<Record<string, unknown>> {
  const { config } = userCollection(deps, name);
  const auth = isPlainObject(config.auth) ? (redactSecrets(config).auth as Record<string, unknown>) : {};
  const users = deps.resources().find((r) => r.path === `/${name}`);
  return {
    auth,
    unverified: users instanceof UserCollection ? await users.unverifiedUsers() : null,
    presets: Object.keys(PROVIDER_PRESETS),
    // Where an app is registered with each preset's provider (the tab shows it with the callback URL).
    consoles: Object.fromEntries(Object.entries(PROVIDER_PRESETS).map(([name, preset]) => [name, preset.console])),
    messages: KINDS,
    parts: Object.keys(PARTS),
    placeholders: ['link', 'token', 'code', 'email', 'username', 'expires', 'expiresMinutes', 'collection'],
  };
}

/**
 * PUT accounts {auth}: a new secret must be an `${env:NAME}` reference (the dashboard never stores
 * a secret's value); {@link HIDDEN_SECRET} keeps the one config.json has. The server's load-time
 * check answers the rest, through the config path.
 */
async function save(deps: AccountsDeps, name: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { config } = userCollection(deps, name);
  const auth = body.auth;
  if (auth !== null && !isPlainObject(auth)) throw new SvcError('BAD_REQUEST', 'auth must be an object (or null: no auth settings)', { errors: { auth: 'an object' } });
  const errors: Record<string, string> = {};
  for (const slot of auth ? secretSlots(auth) : []) {
    const value = slot.holder[slot.key];
    if (value === undefined || value === HIDDEN_SECRET) continue;
    if (typeof value !== 'string' || !ENV_REFERENCE.test(value)) errors[slot.where] = 'must be an ${env:NAME} reference: the dashboard does not store secret values';
  }
  if (Object.keys(errors).length > 0) throw new SvcError('VALIDATION_FAILED', `${Object.keys(errors)[0] as string} must be an \${env:NAME} reference (set the secret in the server's environment): nothing was saved`, { errors });
  const next: ResourceConfig = { ...config };
  if (auth === null || Object.keys(auth).length === 0) delete next.auth;
  else next.auth = auth;
  await deps.saveConfig(name, next);
  return view(deps, name);
}

function templateTarget(deps: AccountsDeps, name: string, language: unknown, kind: unknown, part?: unknown): { root: string; dir: string; kind: AccountMailKind; part?: Part } {
  const { dir } = userCollection(deps, name);
  const lang = language === undefined || language === null ? '' : language;
  if (typeof lang !== 'string' || (lang !== '' && !LANGUAGE.test(lang))) throw new SvcError('BAD_REQUEST', 'language must be empty (the default) or a language tag such as de or pt-BR', { errors: { language: 'a language tag' } });
  if (typeof kind !== 'string' || !(KINDS as readonly string[]).includes(kind)) throw new SvcError('BAD_REQUEST', `message must be one of ${KINDS.join(', ')}`, { errors: { message: KINDS.join(', ') } });
  if (part !== undefined && (typeof part !== 'string' || !Object.hasOwn(PARTS, part))) throw new SvcError('BAD_REQUEST', `part must be one of ${Object.keys(PARTS).join(', ')}`, { errors: { part: 'subject, text or html' } });
  const root = join(dir, 'mail');
  return { root, dir: lang === '' ? root : join(root, lang), kind: kind as AccountMailKind, ...(part !== undefined ? { part: part as Part } : {}) };
}

/** Refuses a folder or file of the mail templates that is a symbolic link (or not what it should be). */
async function checkNoLink(path: string, want: 'dir' | 'file'): Promise<boolean> {
  const stat = await lstat(path).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
  if (stat === undefined) return false;
  if (stat.isSymbolicLink() || (want === 'dir' ? !stat.isDirectory() : !stat.isFile())) {
    throw new SvcError('BAD_REQUEST', 'the mail templates are files and folders of the collection\'s mail folder: a symbolic link or other kind of file there is not followed');
  }
  return true;
}

/** A template file's text, read without following a symbolic link; undefined when there is none. */
async function readPart(dir: string, file: string): Promise<string | undefined> {
  if (!(await checkNoLink(join(dir, file), 'file'))) return undefined;
  const handle = await open(join(dir, file), constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/** GET mail?language=&message=: each part's file (null: none, the next fallback is used) and the built-in text. */
async function readTemplate(deps: AccountsDeps, name: string, query: Record<string, unknown>): Promise<Record<string, unknown>> {
  const target = templateTarget(deps, name, query.language, query.message);
  const files: Record<Part, string | null> = { subject: null, text: null, html: null };
  if ((await checkNoLink(target.root, 'dir')) && (target.dir === target.root || (await checkNoLink(target.dir, 'dir')))) {
    for (const part of Object.keys(PARTS) as Part[]) files[part] = (await readPart(target.dir, `${target.kind}.${PARTS[part]}`)) ?? null;
  }
  // The built-in text the server would send: with a link when the flow has a url (the mailer decides the same).
  const auth = userCollection(deps, name).config.auth;
  const flow = isPlainObject(auth) ? auth[target.kind === 'code' ? 'codes' : target.kind] : undefined;
  const builtIn: MailTemplate = builtInTemplates(isPlainObject(flow) && typeof flow.url === 'string')[target.kind];
  return { language: typeof query.language === 'string' ? query.language : '', message: target.kind, files, builtIn };
}

/** PUT mail {language, message, part, text}: writes the part's file (text null or '': removes it), then reloads. */
async function writeTemplate(deps: AccountsDeps, name: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const target = templateTarget(deps, name, body.language, body.message, body.part);
  if (target.part === undefined) throw new SvcError('BAD_REQUEST', 'part is required (subject, text or html)', { errors: { part: 'required' } });
  const text = body.text;
  if (text !== null && typeof text !== 'string') throw new SvcError('BAD_REQUEST', 'text must be a string (or null: remove the file)', { errors: { text: 'a string' } });
  if (typeof text === 'string' && Buffer.byteLength(text) > MAX_TEMPLATE) throw new SvcError('BAD_REQUEST', `a template has at most ${MAX_TEMPLATE / 1024} KiB`, { errors: { text: 'too long' } });
  const part = target.part;
  await deps.serial(async () => {
    for (const dir of target.dir === target.root ? [target.root] : [target.root, target.dir]) {
      if (!(await checkNoLink(dir, 'dir'))) await mkdir(dir);
    }
    const file = join(target.dir, `${target.kind}.${PARTS[part]}`);
    const before = await readPart(target.dir, `${target.kind}.${PARTS[part]}`);
    // The rename replaces the directory entry: a link put there meanwhile is replaced, not followed.
    if (text === null || text === '') await rm(file, { force: true });
    else await deps.writeAtomic(file, text);
    await deps.reloadOrUndo(async () => {
      if (before === undefined) await rm(file, { force: true });
      else await deps.writeAtomic(file, before);
    });
  });
  return readTemplate(deps, name, { language: body.language ?? '', message: target.kind });
}

/** Answers `resources/<name>/accounts` and `resources/<name>/mail`; undefined for other requests. */
export async function accountsApi(deps: AccountsDeps, name: string, what: string, method: string, query: Record<string, unknown>, body: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
  if (what === 'accounts' && method === 'GET') return view(deps, name);
  if (what === 'accounts' && method === 'PUT') return save(deps, name, body);
  if (what === 'mail' && method === 'GET') return readTemplate(deps, name, query);
  if (what === 'mail' && method === 'PUT') return writeTemplate(deps, name, body);
  return undefined;
}

/** The shortest run of an environment value's characters that a message may not contain. */
const QUOTE_RUN = 8;

/**
 * The server's refusal of a config as the dashboard may answer it: a load-time message quotes the
 * bad value ('"…" is not an absolute URL'), and with `${env:NAME}` that value came from the
 * environment (a secret, perhaps). A message holding any run of QUOTE_RUN characters of such a
 * value is replaced by one naming the references instead.
 */
export function withoutEnvValues(err: unknown, config: unknown, env: NodeJS.ProcessEnv = process.env): unknown {
  if (!(err instanceof SvcError)) return err;
  const names = new Set<string>();
  const collect = (value: unknown): void => {
    if (typeof value === 'string') for (const m of value.matchAll(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g)) names.add(m[1] as string);
    else if (Array.isArray(value)) value.forEach(collect);
    else if (isPlainObject(value)) Object.values(value).forEach(collect);
  };
  collect(config);
  const values = [...names].map((n) => env[n]).filter((v): v is string => typeof v === 'string' && v.length > 0);
  const quotes = (text: string): boolean =>
    values.some((v) => {
      if (v.length < QUOTE_RUN) return text.includes(v);
      for (let i = 0; i + QUOTE_RUN <= v.length; i++) if (text.includes(v.slice(i, i + QUOTE_RUN))) return true;
      return false;
    });
  const text = JSON.stringify(err.toJSON());
  if (!quotes(text)) return err;
  const refs = [...names].map((n) => `\${env:${n}}`).join(', ');
  return new SvcError(err.code, `the server refused these settings; its message quoted a value from the environment (${refs}), so it is not shown: check the settings that use them`, { errors: { config: 'a setting written with ${env:NAME} is not valid' } });
}

/**
 * POST /dashboard/api/resources/<users>/reset-mfa {id}: root turns a user's two-factor off (a lost
 * device) and ends every session of that user, so the next login asks for the password only.
 */
export async function resetTwoFactor(resources: readonly Resource[], name: string, body: Record<string, unknown>): Promise<{ id: string; sessionsEnded: number }> {
  const users = resources.find((r) => r.path === `/${name}`);
  if (!(users instanceof UserCollection)) throw new SvcError('NOT_FOUND', `no user collection ${name}`);
  const id = body.id;
  if (typeof id !== 'string' || id === '' || id.length > 64) throw new SvcError('BAD_REQUEST', 'reset-mfa needs {"id": "<the user\'s id>"}', { errors: { id: 'the user\'s id' } });
  const sessionsEnded = await users.resetTwoFactor(id);
  if (sessionsEnded === null) throw new SvcError('NOT_FOUND', 'no such user');
  return { id, sessionsEnded };
}
