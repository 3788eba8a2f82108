import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import type { ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** One mail as the SMTP server received it. */
export interface ReceivedMail {
  /** MAIL FROM of the envelope. */
  mailFrom: string;
  /** RCPT TO of the envelope, in order. */
  rcptTo: string[];
  /** The user that logged in, when one did. */
  user: string | undefined;
  raw: string;
  parsed: ParsedMail;
}

/** Options of {@link startSmtpServer}. */
export interface SmtpServerOptions {
  /** username -> password; when set, login is required. */
  users?: Record<string, string>;
  /** Recipients refused at RCPT TO with a 550. */
  refuse?: readonly string[];
}

/** A real SMTP server on a free loopback port, keeping every mail it gets. */
export interface TestSmtpServer {
  port: number;
  mails: ReceivedMail[];
  close(): Promise<void>;
}

/** Starts an SMTP server (no STARTTLS, plain-text AUTH allowed) for the tests. */
export async function startSmtpServer(options: SmtpServerOptions = {}): Promise<TestSmtpServer> {
  const mails: ReceivedMail[] = [];
  const users = options.users;
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: users === undefined,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (users !== undefined && users[auth.username ?? ''] === auth.password) callback(null, { user: auth.username });
      else callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, callback) {
      if (options.refuse?.includes(address.address)) callback(Object.assign(new Error(`no mailbox ${address.address}`), { responseCode: 550 }));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        simpleParser(raw)
          .then((parsed) => {
            const from = session.envelope.mailFrom;
            mails.push({
              mailFrom: from === false ? '' : from.address,
              rcptTo: session.envelope.rcptTo.map((r) => r.address),
              user: typeof session.user === 'string' ? session.user : undefined,
              raw,
              parsed,
            });
            callback();
          })
          .catch((err: unknown) => callback(err as Error));
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
