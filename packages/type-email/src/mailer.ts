import { SvcError } from '@svc/core';
import type { MailMessage } from './mailMessage.js';

/** What a send answers: the server's verdict per recipient and the Message-ID it was sent with. */
export interface SendResult {
  /** False when productionOnly logged the mail instead of sending it. */
  sent: boolean;
  /** The Message-ID header of the mail; null when it was not sent. */
  messageId: string | null;
  /** Recipients the mail server accepted. */
  accepted: string[];
  /** Recipients the mail server refused (the others still got the mail). */
  rejected: string[];
}

/** How to reach the mail server. */
export interface MailerOptions {
  host: string;
  port: number;
  ssl: boolean;
  username?: string;
  password?: string;
  /** Milliseconds to connect, to get the greeting, and of silence mid-conversation. */
  timeoutMs?: number;
}

/** Sends mail to one SMTP server. */
export interface Mailer {
  send(message: MailMessage): Promise<SendResult>;
  close(): void;
}

// A client waiting on a request should hear about an unreachable mail server within seconds, not
// after nodemailer's default two minutes.
const DEFAULT_TIMEOUT_MS = 10_000;
// No answer from the server at all: the relay is down or unreachable, worth retrying later.
const UNREACHABLE = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ETLS', 'EPROXY']);

/**
 * nodemailer's SMTP transport for `options`. nodemailer is loaded here, at the first send, not
 * with the package: about 40 modules and 0.1 s of CPU that every start of an app paid before,
 * although most apps send no mail.
 */
async function openTransport(options: MailerOptions, timeout: number) {
  const { createTransport } = await import('nodemailer');
  return createTransport({
    host: options.host,
    port: options.port,
    secure: options.ssl,
    ...(options.username !== undefined ? { auth: { user: options.username, pass: options.password ?? '' } } : {}),
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout * 3,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
}

/** A mailer over nodemailer's SMTP transport (one connection per send, no pool). */
export function createMailer(options: MailerOptions): Mailer {
  const timeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let transport: ReturnType<typeof openTransport> | undefined;
  const where = `${options.host}:${options.port}`;
  return {
    async send(message) {
      try {
        const info = await (await (transport ??= openTransport(options, timeout))).sendMail({
          from: message.from,
          to: message.to,
          cc: message.cc,
          bcc: message.bcc,
          subject: message.subject,
          ...(message.text !== undefined ? { text: message.text } : {}),
          ...(message.html !== undefined ? { html: message.html } : {}),
        });
        return { sent: true, messageId: info.messageId, accepted: info.accepted.map(String), rejected: info.rejected.map(String) };
      } catch (err) {
        throw mailError(err, where);
      }
    },
    close: () => void transport?.then((opened) => opened.close()),
  };
}

/**
 * Maps a nodemailer failure to the client's error: 503 when the mail server cannot be reached
 * (retry later), 502 when it answered but refused (login, sender, every recipient, the message).
 * The answer names neither the mail server (`where`) nor its words, only its SMTP reply code: the
 * server's log has both, in the error's cause.
 */
export function mailError(err: unknown, where: string): SvcError {
  const e = err as { code?: unknown; responseCode?: unknown; response?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const reason = typeof e.response === 'string' && e.response ? e.response : typeof e.message === 'string' ? e.message : String(err);
  if (UNREACHABLE.has(code)) {
    const cause = new Error(`mail server ${where} is not reachable: ${reason}`, { cause: err });
    return new SvcError('UNAVAILABLE', 'the mail server is not reachable; try again later', { cause, headers: { 'retry-after': '60' } });
  }
  const what = code === 'EAUTH' || code === 'ENOAUTH' ? 'refused the login' : code === 'EENVELOPE' ? 'refused the sender or the recipients' : 'refused the message';
  const smtp = typeof e.responseCode === 'number' ? ` (SMTP ${e.responseCode})` : '';
  const cause = new Error(`mail server ${where} ${what}: ${reason}`, { cause: err });
  return new SvcError('UNAVAILABLE', `the mail server ${what}${smtp}`, { status: 502, cause });
}
