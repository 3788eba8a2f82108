import { coreRangeOf, defineResourceType, SvcError } from '@svc/core';
import type { Context, Logger, Reply, ResourceImplementation, ResourceType, SettingsSchema } from '@svc/core';
import { formatMailbox, parseAddresses, readMessage } from './internal/readMessage.js';
import { createMailer } from './mailer.js';
import type { Mailer, SendResult } from './mailer.js';
import type { Mailbox, MailMessage } from './mailMessage.js';

/**
 * An Email resource's settings (config.json), after validation and defaults. A type alias, not an
 * interface, so that it fits the server's `ResourceType<Record<string, unknown>>` list.
 */
export type EmailSettings = {
  /** The outgoing mail server. */
  host: string;
  /** Default 25; 587 (STARTTLS) and 465 (with ssl) are common too. */
  port: number;
  /** TLS from the first byte (port 465). Without it STARTTLS is still used when the server offers it. */
  ssl: boolean;
  /** Login; leave unset for a relay that needs none. */
  username?: string;
  password?: string;
  /** Used when a request gives no `from`; 'Name <address>' or a plain address. */
  defaultFromAddress?: string;
  /** Only internal requests (from event scripts) may send. */
  internalOnly: boolean;
  /**
   * Any client may send (Deployd's behaviour). Default false: event scripts and root only, so that
   * an app does not relay mail for anyone who finds the route.
   */
  allowClients: boolean;
  /** In development, print the mail to the server log instead of sending it. */
  productionOnly: boolean;
};

/** The settings schema: drives validation at start and the dashboard's Config page. */
export const emailSettings: SettingsSchema = {
  host: { type: 'string', required: true, description: 'Hostname of the outgoing mail server' },
  port: { type: 'number', default: 25, description: 'SMTP port: 25, 587 (STARTTLS) or 465 (ssl)' },
  ssl: { type: 'boolean', default: false, description: 'Use TLS from the start (port 465); 587 upgrades by itself' },
  username: { type: 'string', description: 'Mail account user; leave empty for a relay without login' },
  password: { type: 'string', description: 'Mail account secret' },
  defaultFromAddress: { type: 'string', description: "Sender used when a request gives no from ('Name <address>' accepted)" },
  internalOnly: { type: 'boolean', default: false, description: 'Only requests from event scripts may send mail' },
  allowClients: { type: 'boolean', default: false, description: 'Any client may send mail (unchecked: event scripts and root only)' },
  productionOnly: { type: 'boolean', default: false, description: 'In development, print mails to the server log instead of sending' },
};

/** What {@link createEmailResource} needs. */
export interface EmailResourceOptions {
  /** The resource's name, for messages: 'email'. */
  name: string;
  settings: EmailSettings;
  env: 'development' | 'production';
  logger: Logger;
  /** Replaces the SMTP mailer (tests, other transports). */
  mailer?: Mailer;
}

/** Checks the settings that the schema alone cannot: the port's range, login pairs, the default sender. */
export function checkEmailSettings(name: string, settings: EmailSettings): Mailbox | undefined {
  if (!Number.isInteger(settings.port) || settings.port < 1 || settings.port > 65535) throw new Error(`resource ${name}: setting port must be a port number (1-65535), not ${settings.port}`);
  if (settings.username !== undefined && settings.password === undefined) throw new Error(`resource ${name}: setting password is required when username is set`);
  if (settings.password !== undefined && settings.username === undefined) throw new Error(`resource ${name}: setting username is required when password is set`);
  if (settings.defaultFromAddress === undefined) return undefined;
  const parsed = parseAddresses(settings.defaultFromAddress);
  if (typeof parsed === 'string' || parsed.length !== 1) {
    throw new Error(`resource ${name}: setting defaultFromAddress must be one address ('Name <address>' or 'address'): ${typeof parsed === 'string' ? parsed : `${parsed.length} given`}`);
  }
  return parsed[0];
}

/** Handles requests to one Email resource: POST / sends. */
export function createEmailResource(options: EmailResourceOptions): ResourceImplementation {
  const { settings, logger, name } = options;
  const defaultFrom = checkEmailSettings(name, settings);
  const logOnly = settings.productionOnly && options.env !== 'production';
  let mailer = options.mailer;
  const mailerFor = (): Mailer => {
    mailer ??= createMailer({
      host: settings.host,
      port: settings.port,
      ssl: settings.ssl,
      ...(settings.username !== undefined ? { username: settings.username } : {}),
      ...(settings.password !== undefined ? { password: settings.password } : {}),
    });
    return mailer;
  };
  return {
    async handle(ctx: Context): Promise<Reply> {
      if (ctx.url !== '/') throw new SvcError('NOT_FOUND', `no route ${ctx.url} on ${name}; POST /${name} sends a mail`);
      if (ctx.method !== 'POST') throw new SvcError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported; POST /${name} sends a mail`, { headers: { allow: 'POST' } });
      if (settings.internalOnly && !ctx.internal) throw new SvcError('FORBIDDEN', `${name} sends mail for event scripts only (internalOnly)`);
      if (!settings.allowClients && !ctx.internal && !ctx.isRoot) {
        throw new SvcError('FORBIDDEN', `${name} sends mail for event scripts and root only; its config's allowClients lets any client send`);
      }
      const message = readMessage(ctx.body, defaultFrom);
      const result = logOnly ? logMail(logger, name, message) : await mailerFor().send(message);
      return { status: 200, body: result };
    },
    close: () => {
      mailer?.close();
      return Promise.resolve();
    },
  };
}

/** productionOnly in development: the whole mail goes to the log, nothing is sent. */
function logMail(logger: Logger, name: string, message: MailMessage): SendResult {
  const list = (boxes: Mailbox[]): string => boxes.map(formatMailbox).join(', ');
  logger.info(`${name}: not sending in development (productionOnly); the mail would be:`, {
    from: formatMailbox(message.from),
    to: list(message.to),
    cc: list(message.cc),
    bcc: list(message.bcc),
    subject: message.subject,
    text: message.text,
    html: message.html,
  });
  return { sent: false, messageId: null, accepted: [], rejected: [] };
}

/**
 * The Email resource type: POST /<resource> with from, to, cc, bcc, subject, text and html sends a
 * mail through the configured SMTP server (nodemailer) and answers `{sent, messageId, accepted,
 * rejected}`.
 */
export const emailType: ResourceType<EmailSettings> = defineResourceType<EmailSettings>({
  name: 'Email',
  core: coreRangeOf(import.meta.url),
  settings: emailSettings,
  events: [],
  client: {},
  dashboard: { label: 'Email' },
  create: (context) => createEmailResource({ name: context.name, settings: context.settings, env: context.env, logger: context.logger }),
});
