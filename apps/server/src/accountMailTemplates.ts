import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AccountMailKind } from '@svc/core';

/** One message's template: `{{name}}` placeholders, filled by {@link renderMail}. */
export interface MailTemplate {
  subject: string;
  text: string;
  html: string;
}

/** A rendered mail: what goes to the mail server. */
export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

const KINDS: readonly AccountMailKind[] = ['verification', 'reset', 'code'];
const LANGUAGE_FOLDER = /^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?$/;

/** The built-in templates (English), used for any part no file overrides: the flow has a `url`. */
export const DEFAULT_TEMPLATES: Readonly<Record<AccountMailKind, MailTemplate>> = {
  verification: {
    subject: 'Confirm your email address',
    text: 'Hello {{username}},\n\nplease confirm your email address {{email}}:\n\n{{link}}\n\nThe link is valid for {{expires}}. If you did not ask for this, ignore this mail.\n',
    html: '<p>Hello {{username}},</p><p>please confirm your email address {{email}}:</p><p><a href="{{link}}">{{link}}</a></p><p>The link is valid for {{expires}}. If you did not ask for this, ignore this mail.</p>',
  },
  reset: {
    subject: 'Reset your password',
    text: 'Hello {{username}},\n\nsomeone (hopefully you) asked to reset the password of {{email}}:\n\n{{link}}\n\nThe link is valid for {{expires}} and works once. If you did not ask for this, ignore this mail: your password stays as it is.\n',
    html: '<p>Hello {{username}},</p><p>someone (hopefully you) asked to reset the password of {{email}}:</p><p><a href="{{link}}">{{link}}</a></p><p>The link is valid for {{expires}} and works once. If you did not ask for this, ignore this mail: your password stays as it is.</p>',
  },
  code: {
    subject: 'Your sign-in code: {{code}}',
    text: 'Hello {{username}},\n\nyour sign-in code is {{code}}\n\nor sign in with this link:\n\n{{link}}\n\nBoth are valid for {{expires}} and work once. If you did not ask for this, ignore this mail.\n',
    html: '<p>Hello {{username}},</p><p>your sign-in code is <b>{{code}}</b></p><p>or sign in with this link: <a href="{{link}}">{{link}}</a></p><p>Both are valid for {{expires}} and work once. If you did not ask for this, ignore this mail.</p>',
  },
};

/**
 * The built-in templates of a flow without a `url`: there is no link, only the token (to enter
 * where the app asks for it) or, for a sign-in, the code alone. A bare token is never called a link.
 */
export const UNLINKED_TEMPLATES: Readonly<Record<AccountMailKind, MailTemplate>> = {
  verification: {
    subject: DEFAULT_TEMPLATES.verification.subject,
    text: 'Hello {{username}},\n\nto confirm your email address {{email}}, enter this key where the app asks for it:\n\n{{token}}\n\nThe key is valid for {{expires}}. If you did not ask for this, ignore this mail.\n',
    html: '<p>Hello {{username}},</p><p>to confirm your email address {{email}}, enter this key where the app asks for it:</p><p><code>{{token}}</code></p><p>The key is valid for {{expires}}. If you did not ask for this, ignore this mail.</p>',
  },
  reset: {
    subject: DEFAULT_TEMPLATES.reset.subject,
    text: 'Hello {{username}},\n\nsomeone (hopefully you) asked to reset the password of {{email}}. To choose a new one, enter this key where the app asks for it:\n\n{{token}}\n\nThe key is valid for {{expires}} and works once. If you did not ask for this, ignore this mail: your password stays as it is.\n',
    html: '<p>Hello {{username}},</p><p>someone (hopefully you) asked to reset the password of {{email}}. To choose a new one, enter this key where the app asks for it:</p><p><code>{{token}}</code></p><p>The key is valid for {{expires}} and works once. If you did not ask for this, ignore this mail: your password stays as it is.</p>',
  },
  code: {
    subject: DEFAULT_TEMPLATES.code.subject,
    text: 'Hello {{username}},\n\nyour sign-in code is {{code}}\n\nIt is valid for {{expires}} and works once. If you did not ask for this, ignore this mail.\n',
    html: '<p>Hello {{username}},</p><p>your sign-in code is <b>{{code}}</b></p><p>It is valid for {{expires}} and works once. If you did not ask for this, ignore this mail.</p>',
  },
};

/** The built-in templates for a flow with a `url` (`linked`) or without. */
export function builtInTemplates(linked: boolean): Readonly<Record<AccountMailKind, MailTemplate>> {
  return linked ? DEFAULT_TEMPLATES : UNLINKED_TEMPLATES;
}

/** Templates by language ('' is the default language), each part possibly overridden by a file. */
export type TemplateSet = Map<string, Partial<Record<AccountMailKind, Partial<MailTemplate>>>>;

/**
 * Reads the template files of a UserCollection folder: `mail/<kind>.subject.txt`, `mail/<kind>.txt`
 * and `mail/<kind>.html` for the default language, the same under `mail/<language>/` ('de',
 * 'pt-BR') for others. A missing folder or file leaves the part to the next fallback.
 */
export async function loadTemplates(resourceDir: string): Promise<TemplateSet> {
  const set: TemplateSet = new Map();
  const root = join(resourceDir, 'mail');
  set.set('', await readFolder(root));
  for (const entry of await readdir(root, { withFileTypes: true }).catch(() => [])) {
    if (entry.isDirectory() && LANGUAGE_FOLDER.test(entry.name)) set.set(entry.name.toLowerCase(), await readFolder(join(root, entry.name)));
  }
  return set;
}

async function readFolder(dir: string): Promise<Partial<Record<AccountMailKind, Partial<MailTemplate>>>> {
  const out: Partial<Record<AccountMailKind, Partial<MailTemplate>>> = {};
  for (const kind of KINDS) {
    const part = async (file: string) => readFile(join(dir, file), 'utf8').catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' || err.code === 'ENOTDIR' ? undefined : Promise.reject(err)));
    const [subject, text, html] = await Promise.all([part(`${kind}.subject.txt`), part(`${kind}.txt`), part(`${kind}.html`)]);
    const template: Partial<MailTemplate> = {
      ...(subject !== undefined ? { subject: subject.trim() } : {}),
      ...(text !== undefined ? { text } : {}),
      ...(html !== undefined ? { html } : {}),
    };
    if (Object.keys(template).length > 0) out[kind] = template;
  }
  return out;
}

/**
 * The template of a kind in a language: 'pt-BR', then 'pt', then the default files, then built in
 * (with or without a link: `linked`); per part.
 */
export function templateFor(set: TemplateSet, kind: AccountMailKind, language: string | undefined, linked = true): MailTemplate {
  const lang = language?.toLowerCase();
  const chain = [lang, lang?.split('-')[0], ''].filter((l): l is string => l !== undefined);
  const pick = (part: keyof MailTemplate): string => {
    for (const l of chain) {
      const value = set.get(l)?.[kind]?.[part];
      if (value !== undefined) return value;
    }
    return builtInTemplates(linked)[kind][part];
  };
  return { subject: pick('subject'), text: pick('text'), html: pick('html') };
}

/**
 * Fills a template. Values are escaped for HTML in the html part; the subject is one line (a
 * line break in a value, a username say, could otherwise start a header). Unknown placeholders
 * stay empty.
 */
export function renderMail(template: MailTemplate, values: Readonly<Record<string, string>>): RenderedMail {
  const fill = (text: string, escape: (value: string) => string) => text.replace(/\{\{\s*([A-Za-z]+)\s*\}\}/g, (_whole, name: string) => escape(Object.hasOwn(values, name) ? (values[name] ?? '') : ''));
  return {
    subject: fill(template.subject, (v) => v).replace(/[\r\n\u0085\u2028\u2029]+/gu, ' ').trim(),
    text: fill(template.text, (v) => v),
    html: fill(template.html, escapeHtml),
  };
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
