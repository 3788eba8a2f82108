import addressparser from 'nodemailer/lib/addressparser';
import { SvcError } from '@svc/core';
import type { Mailbox, MailMessage } from '../mailMessage.js';

/** The body fields of a send, in the spec's order. */
export const MAIL_FIELDS = ['from', 'to', 'cc', 'bcc', 'subject', 'text', 'html'] as const;

const ADDRESS_FIELDS = ['to', 'cc', 'bcc'] as const;
const HEADER_FIELDS = new Set(['from', 'to', 'cc', 'bcc', 'subject']);
// Deliberately lenient (mail servers are the judge of what exists); what it refuses is anything
// that could change the meaning of a header or the SMTP envelope.
const ADDRESS = /^[^\s@"<>()[\]\\,;:]+@[^\s@"<>()[\]\\,;:.]+(\.[^\s@"<>()[\]\\,;:.]+)*$/u;
const LINE_BREAK = /[\r\n\u0085\u2028\u2029]/u;

/**
 * Parses a comma-separated address field. Returns the mailboxes, or the message of the first
 * problem found (a group, an empty entry, an address that is not user@domain).
 */
export function parseAddresses(value: string): Mailbox[] | string {
  const out: Mailbox[] = [];
  for (const entry of addressparser(value)) {
    if (entry.group !== undefined) return `address groups ("${entry.name}: ...;") are not accepted`;
    if (!ADDRESS.test(entry.address)) return `"${entry.address || entry.name}" is not an email address`;
    out.push({ name: entry.name, address: entry.address });
  }
  return out;
}

/**
 * Validates a send request's body. `defaultFrom` stands in for a missing `from`. Throws a 400
 * SvcError with an `errors` map (field -> message) listing every problem at once.
 */
export function readMessage(body: unknown, defaultFrom: Mailbox | undefined): MailMessage {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new SvcError('BAD_REQUEST', 'send a JSON object with from, to, cc, bcc, subject, text and html');
  }
  const input = body as Record<string, unknown>;
  const errors: Record<string, string> = {};
  const fields: Partial<Record<(typeof MAIL_FIELDS)[number], string>> = {};
  for (const field of MAIL_FIELDS) {
    const value = input[field];
    if (value === undefined || value === null || value === '') continue;
    if (typeof value !== 'string') errors[field] = `${field} must be a string`;
    else if (HEADER_FIELDS.has(field) && LINE_BREAK.test(value)) errors[field] = `${field} must not contain line breaks`;
    else fields[field] = value;
  }

  let from = defaultFrom;
  if (fields.from !== undefined) {
    const parsed = parseAddresses(fields.from);
    if (typeof parsed === 'string') errors.from = parsed;
    else if (parsed.length !== 1) errors.from = 'from must be exactly one address';
    else from = parsed[0];
  } else if (from === undefined && errors.from === undefined) {
    errors.from = 'from is required (no defaultFromAddress is configured)';
  }

  const lists: Record<(typeof ADDRESS_FIELDS)[number], Mailbox[]> = { to: [], cc: [], bcc: [] };
  for (const field of ADDRESS_FIELDS) {
    const value = fields[field];
    if (value === undefined) continue;
    const parsed = parseAddresses(value);
    if (typeof parsed === 'string') errors[field] = parsed;
    else lists[field] = parsed;
  }
  if (lists.to.length + lists.cc.length + lists.bcc.length === 0 && !ADDRESS_FIELDS.some((f) => errors[f] !== undefined)) {
    errors.to = 'at least one recipient is required (to, cc or bcc)';
  }
  if (fields.text === undefined && fields.html === undefined && errors.text === undefined && errors.html === undefined) {
    errors.text = 'text or html is required';
  }

  if (Object.keys(errors).length > 0 || from === undefined) throw new SvcError('VALIDATION_FAILED', 'the message is not valid', { errors });
  return {
    from,
    ...lists,
    subject: fields.subject ?? '',
    ...(fields.text !== undefined ? { text: fields.text } : {}),
    ...(fields.html !== undefined ? { html: fields.html } : {}),
  };
}

/** 'Ann <ann@example.com>' or 'ann@example.com', for logs. */
export function formatMailbox(box: Mailbox): string {
  return box.name ? `${box.name} <${box.address}>` : box.address;
}
