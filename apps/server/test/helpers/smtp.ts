import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import type { ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** One mail as the SMTP server received it. */
export interface ReceivedMail {
  rcptTo: string[];
  raw: string;
  parsed: ParsedMail;
}

/** A real SMTP server on a free loopback port, keeping every mail it gets. */
export interface TestSmtp {
  port: number;
  mails: ReceivedMail[];
  /** The next mail to `to` not taken before (waits for it up to `timeoutMs`). */
  next(to: string, timeoutMs?: number): Promise<ReceivedMail>;
  /** Mails to `to` not taken yet. */
  pending(to: string): ReceivedMail[];
  close(): Promise<void>;
}

/** Starts an SMTP server (no TLS, no login) for the account mail tests. */
export async function startSmtp(): Promise<TestSmtp> {
  const mails: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        simpleParser(raw).then(
          (parsed) => {
            mails.push({ rcptTo: session.envelope.rcptTo.map((r) => r.address), raw, parsed });
            callback();
          },
          (err: unknown) => callback(err as Error),
        );
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const pending = (to: string) => mails.filter((m) => !taken.has(m) && m.rcptTo.includes(to));
  return {
    port: (server.server.address() as AddressInfo).port,
    mails,
    pending,
    async next(to, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = pending(to)[0];
        if (found) {
          taken.add(found);
          return found;
        }
        if (Date.now() > deadline) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The token in a mail's text (the 43 base64url characters after `token=` or alone on a line). */
export function tokenIn(mail: ReceivedMail): string {
  const text = mail.parsed.text ?? '';
  const found = /token=([A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/.exec(decodeURIComponent(text)) ?? /^([A-Za-z0-9_-]{43})$/m.exec(text);
  if (!found?.[1]) throw new Error(`no token in the mail: ${text}`);
  return found[1];
}

/** The one-time code in a sign-in mail. */
export function codeIn(mail: ReceivedMail): string {
  const found = /code is (\d+)/.exec(mail.parsed.text ?? '');
  if (!found?.[1]) throw new Error('no code in the mail');
  return found[1];
}
