import type { Logger } from '@svc/core';
import type { AppFolder } from './loadApp.js';

/** The actions that change a collection. */
export const WRITE_ACTIONS = ['create', 'update', 'delete'] as const;
export type WriteAction = (typeof WRITE_ACTIONS)[number];

/** The event script that runs for each write (and may hold a Deployd-style guard). */
const SCRIPT_OF: Record<WriteAction, string> = { create: 'post.js', update: 'put.js', delete: 'delete.js' };

/** A collection anyone may write to, and how. */
export interface OpenWrites {
  /** The resource's name (its path without the leading /). */
  name: string;
  /** The write actions without a rule. */
  actions: WriteAction[];
  /** The event scripts of those actions that exist: they may guard them, svc cannot tell. */
  scripts: string[];
}

/**
 * The Collections and UserCollections whose write rules are absent (Deployd's default: anyone may
 * write). A rule written as `true` says "open on purpose" (a sign-up form) and is not listed;
 * `false` and a query are not open.
 */
export function openWriteRules(app: AppFolder): OpenWrites[] {
  const out: OpenWrites[] = [];
  for (const folder of app.resources) {
    if (folder.config.type !== 'Collection' && folder.config.type !== 'UserCollection') continue;
    const rules = folder.config.rules;
    const ruleOf = (action: WriteAction): unknown => (typeof rules === 'object' && rules !== null ? (rules as Record<string, unknown>)[action] : undefined);
    const actions = WRITE_ACTIONS.filter((action) => ruleOf(action) === undefined);
    if (actions.length === 0) continue;
    out.push({ name: folder.path.slice(1), actions, scripts: actions.map((a) => SCRIPT_OF[a]).filter((file) => folder.scripts.has(file)) });
  }
  return out;
}

/** The one line of a production start that lists what anyone may write (nothing when all is ruled). */
export function openWritesWarning(open: readonly OpenWrites[]): string | undefined {
  if (open.length === 0) return undefined;
  const listed = open.map((o) => `${o.name} (${o.actions.join(', ')}${o.scripts.length > 0 ? `; ${o.scripts.join(', ')} may guard ${o.scripts.length === 1 ? 'it' : 'them'}` : ''})`);
  return (
    `access rules: anyone may write to ${listed.join(', ')}: ${open.length === 1 ? 'its' : 'their'} write rules are absent (Deployd's open default). ` +
    'Add "rules" to resources/<name>/config.json, e.g. "create": {"@me.id": {"$exists": true}}, "update": {"owner": "@me.id"}, "delete": {"owner": "@me.id"} ' +
    '(false: root only; true: open on purpose, not listed here); see docs/access-rules.md'
  );
}

/** The actions that show users to others. */
export const READ_ACTIONS = ['list', 'read'] as const;
export type ReadAction = (typeof READ_ACTIONS)[number];

/** A UserCollection anyone may list or read, and how. */
export interface OpenUserReads {
  name: string;
  /** The read actions without a rule. */
  actions: ReadAction[];
  /** get.js, when it exists: it may hide users (svc cannot tell). */
  scripts: string[];
}

/**
 * The UserCollections whose `list` or `read` rule is absent (Deployd's default: anyone lists
 * every user, with every property that is not private). `true` says "open on purpose" and is not
 * listed, as for writes.
 */
export function openUserReadRules(app: AppFolder): OpenUserReads[] {
  const out: OpenUserReads[] = [];
  for (const folder of app.resources) {
    if (folder.config.type !== 'UserCollection') continue;
    const rules = folder.config.rules;
    const actions = READ_ACTIONS.filter((action) => (typeof rules === 'object' && rules !== null ? (rules as Record<string, unknown>)[action] : undefined) === undefined);
    if (actions.length === 0) continue;
    out.push({ name: folder.path.slice(1), actions, scripts: folder.scripts.has('get.js') ? ['get.js'] : [] });
  }
  return out;
}

/** The one line of a production start that lists the user collections anyone may list or read. */
export function openUserReadsWarning(open: readonly OpenUserReads[]): string | undefined {
  if (open.length === 0) return undefined;
  const listed = open.map((o) => `${o.name} (${o.actions.join(', ')}${o.scripts.length > 0 ? '; get.js may guard them' : ''})`);
  return (
    `access rules: anyone may list or read the users of ${listed.join(', ')}: ${open.length === 1 ? 'its' : 'their'} list/read rules are absent (Deployd's open default). ` +
    'Add "list": {"id": "@me.id"}, "read": {"id": "@me.id"} to "rules" in resources/<name>/config.json ' +
    '(true: open on purpose, not listed here); see docs/access-rules.md'
  );
}

/** Logs {@link openWritesWarning} and {@link openUserReadsWarning} for the app, once. */
export function warnOpenRules(app: AppFolder, logger: Logger): void {
  const warning = openWritesWarning(openWriteRules(app));
  if (warning !== undefined) logger.warn(warning);
  const users = openUserReadsWarning(openUserReadRules(app));
  if (users !== undefined) logger.warn(users);
}
