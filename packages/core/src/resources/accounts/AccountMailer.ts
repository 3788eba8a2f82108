/** Which account message a mail is. */
export type AccountMailKind = 'verification' | 'reset' | 'code';

/** One account mail to send: what the template is filled with. */
export interface AccountMail {
  kind: AccountMailKind;
  /** The recipient's address (already checked: user@domain, no line breaks). */
  to: string;
  /** The language asked for ('de', 'pt-BR'); the mailer falls back to its default. */
  language: string | undefined;
  /**
   * The template's placeholders: `token`, `link` (the configured URL holding the token, or the
   * token alone), `code` (one-time codes), `email`, `username`, `expires` (in words: '1 day'),
   * `expiresMinutes`, `collection`.
   */
  values: Record<string, string>;
}

/**
 * How a UserCollection's account mails go out (the server makes it from `auth.mail`: an Email
 * resource or SMTP settings, templates, rate limits). Core never talks SMTP itself.
 */
export interface AccountMailer {
  /**
   * Counts one request for a mail to `recipient` from `client` and answers the seconds to wait
   * when either is over its limit (0: go ahead). Asked before the address is looked up, so the
   * answer does not depend on whether a user has it.
   */
  limit(client: string, recipient: string): Promise<number>;
  /** Sends one mail; rejects when it could not be handed to the mail server. */
  send(mail: AccountMail): Promise<void>;
}
