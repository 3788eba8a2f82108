/**
 * @svc/type-email: the Email resource. POST /<resource> sends a mail over SMTP with nodemailer;
 * the default export is the resource type the server loads.
 */
import { emailType } from './emailType.js';

export { emailType, emailSettings, createEmailResource, checkEmailSettings } from './emailType.js';
export type { EmailResourceOptions, EmailSettings } from './emailType.js';
export { createMailer, mailError } from './mailer.js';
export type { Mailer, MailerOptions, SendResult } from './mailer.js';
export type { Mailbox, MailMessage } from './mailMessage.js';
export default emailType;
