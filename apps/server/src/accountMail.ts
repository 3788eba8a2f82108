import { validateSettings } from '@svc/core';
import type { AccountMail, AccountMailer, Logger } from '@svc/core';
import { checkEmailSettings, createMailer, emailSettings } from '@svc/type-email';
import type { EmailSettings, Mailbox, Mailer } from '@svc/type-email';
import { loadTemplates, renderMail, templateFor } from './accountMailTemplates.js';
import { resolveEnvReferences } from './envReferences.js';
import type { AppFolder, ResourceFolder } from './loadApp.js';
import type { RateCounter } from './rateCounter.js';

/** `auth.mail` of a UserCollection's config.json. */
export interface AccountMailSettings {
  /** An Email resource of the app whose SMTP settings (and defaultFromAddress) to use. */
  resource?: string;
  /** SMTP settings of its own (as an Email resource's: host, port, ssl, username, password); `${env:NAME}` for secrets. */
  smtp?: Record<string, unknown>;
  /** The sender, 'Name <address>'; default: the Email resource's defaultFromAddress. */
  from?: string;
  limits?: { perRecipient?: number; perClient?: number; windowMinutes?: number };
}

/** What {@link createAccountMailer} needs. */
export interface AccountMailerOptions {
  /** The UserCollection's folder (its `mail/` templates). */
  folder: ResourceFolder;
  /** Its `auth.mail` as `parseAuthSettings` read it (references resolved). */
  mail: unknown;
  app: AppFolder;
  env: 'development' | 'production';
  logger: Logger;
  counter: RateCounter;
  /** Replaces the SMTP mailer (tests of other transports). */
  mailer?: Mailer;
}

const MAIL_KEYS = new Set(['resource', 'smtp', 'from', 'limits']);
const LIMIT_KEYS = new Set(['perRecipient', 'perClient', 'windowMinutes']);

/**
 * The mailer of a UserCollection's account flows, from `auth.mail`: through the SMTP server of
 * an Email resource of the app (`resource`) or of its own settings (`smtp`), with the collection's
 * templates, and limits per recipient and per client (shared by every process with `--redis`).
 * A wrong setting stops the start, naming resource and setting; never a secret.
 */
export async function createAccountMailer(options: AccountMailerOptions): Promise<AccountMailer> {
  const name = options.folder.path.slice(1);
  const where = `resource ${name}: auth.mail`;
  const raw = options.mail;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${where} is required by auth.verification, auth.reset and auth.codes: {"resource": "<an Email resource>"} or {"smtp": {...}, "from": "..."}`);
  const unknown = Object.keys(raw).filter((k) => !MAIL_KEYS.has(k));
  if (unknown.length > 0) throw new Error(`${where}: unknown setting ${unknown.join(', ')} (known: ${[...MAIL_KEYS].join(', ')})`);
  const mail = raw as AccountMailSettings;
  const { smtp, from, logOnly } = smtpSettings(mail, options, where);
  const limits = limitsOf(mail.limits, where);
  const templates = await loadTemplates(options.folder.dir);
  let mailer = options.mailer;
  const { logger, counter } = options;
  return {
    async limit(client, recipient) {
      const windowMs = limits.windowMinutes * 60_000;
      const [byRecipient, byClient] = await Promise.all([counter.hit(`mail:r:${name}\n${recipient.toLowerCase()}`, windowMs), counter.hit(`mail:c:${name}\n${client}`, windowMs)]);
      const over = [byRecipient.count > limits.perRecipient ? byRecipient.resetMs : 0, byClient.count > limits.perClient ? byClient.resetMs : 0];
      const waitMs = Math.max(...over);
      return waitMs > 0 ? Math.max(1, Math.ceil(waitMs / 1000)) : 0;
    },
    async send(account: AccountMail) {
      // Without the flow's `url`, {{link}} is the bare token (docs/accounts.md): the built-in text then offers no link.
      const linked = account.values.link !== account.values.token;
      const rendered = renderMail(templateFor(templates, account.kind, account.language, linked), account.values);
      const to: Mailbox = { name: '', address: account.to };
      if (logOnly) {
        logger.info(`${name}: not sending the ${account.kind} mail in development (the Email resource's productionOnly); it would be:`, { to: account.to, ...rendered });
        return;
      }
      mailer ??= createMailer(smtp);
      await mailer.send({ from, to: [to], cc: [], bcc: [], ...rendered });
    },
  };
}

function smtpSettings(mail: AccountMailSettings, options: AccountMailerOptions, where: string): { smtp: EmailSettings; from: Mailbox; logOnly: boolean } {
  if ((mail.resource === undefined) === (mail.smtp === undefined)) throw new Error(`${where}: give either "resource" (an Email resource of the app) or "smtp" (host, port, ...), not ${mail.resource === undefined ? 'neither' : 'both'}`);
  if (mail.from !== undefined && typeof mail.from !== 'string') throw new Error(`${where}.from must be a string ('Name <address>')`);
  let settings: EmailSettings;
  let label: string;
  if (mail.resource !== undefined) {
    if (typeof mail.resource !== 'string') throw new Error(`${where}.resource must be the name of an Email resource`);
    const path = `/${mail.resource.replace(/^\/+|\/+$/g, '')}`;
    const folder = options.app.resources.find((r) => r.path === path);
    if (folder === undefined || folder.config.type !== 'Email') throw new Error(`${where}.resource: ${mail.resource} is not an Email resource of this app`);
    label = folder.path.slice(1);
    settings = validateSettings<EmailSettings>(label, emailSettings, resolveEnvReferences(label, folder.config, emailSettings));
  } else {
    if (typeof mail.smtp !== 'object' || mail.smtp === null || Array.isArray(mail.smtp)) throw new Error(`${where}.smtp must be an object: host, port, ssl, username, password`);
    label = `${options.folder.path.slice(1)}: auth.mail.smtp`;
    const given = { ...mail.smtp };
    // A `${env:PORT}` reference arrives as text.
    if (typeof given.port === 'string' && /^[0-9]+$/.test(given.port)) given.port = Number(given.port);
    const unknown = Object.keys(given).filter((k) => !['host', 'port', 'ssl', 'username', 'password'].includes(k));
    if (unknown.length > 0) throw new Error(`${where}.smtp: unknown setting ${unknown.join(', ')} (known: host, port, ssl, username, password)`);
    settings = validateSettings<EmailSettings>(label, emailSettings, { type: 'Email', ...given });
  }
  const fromText = mail.from ?? settings.defaultFromAddress;
  if (fromText === undefined) throw new Error(`${where}.from is required (the Email resource has no defaultFromAddress)`);
  let from: Mailbox | undefined;
  try {
    from = checkEmailSettings(label, { ...settings, defaultFromAddress: fromText });
  } catch (err) {
    // The Email type's message names its own setting; here it is auth.mail.from (or the resource's).
    throw new Error(`${mail.from !== undefined ? `${where}.from` : `${where}.resource's defaultFromAddress`} must be one address ('Name <address>' or 'address')`, { cause: err });
  }
  if (from === undefined) throw new Error(`${where}.from is required`);
  return { smtp: settings, from, logOnly: settings.productionOnly && options.env !== 'production' };
}

function limitsOf(raw: unknown, where: string): { perRecipient: number; perClient: number; windowMinutes: number } {
  if (raw !== undefined && (typeof raw !== 'object' || raw === null || Array.isArray(raw))) throw new Error(`${where}.limits must be an object: perRecipient, perClient, windowMinutes`);
  const given = (raw ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(given).filter((k) => !LIMIT_KEYS.has(k));
  if (unknown.length > 0) throw new Error(`${where}.limits: unknown setting ${unknown.join(', ')} (known: ${[...LIMIT_KEYS].join(', ')})`);
  const int = (key: string, fallback: number): number => {
    const v = given[key];
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 1_000_000) throw new Error(`${where}.limits.${key} must be a whole number from 1 to 1000000`);
    return v;
  };
  // Per recipient: a mailbox is not flooded; per client: one client cannot mail many.
  return { perRecipient: int('perRecipient', 5), perClient: int('perClient', 30), windowMinutes: int('windowMinutes', 60) };
}
