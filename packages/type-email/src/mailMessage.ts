/** One mailbox: 'Ann <ann@example.com>' is `{name: 'Ann', address: 'ann@example.com'}`. */
export interface Mailbox {
  /** The display name; '' when none was given. */
  name: string;
  address: string;
}

/** A send request after validation: what goes to the mail server. */
export interface MailMessage {
  from: Mailbox;
  to: Mailbox[];
  cc: Mailbox[];
  /** In the envelope only, never in the headers. */
  bcc: Mailbox[];
  /** '' when the request gave none. */
  subject: string;
  text?: string;
  html?: string;
}
