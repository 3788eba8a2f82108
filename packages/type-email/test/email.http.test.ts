import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { AddressObject } from 'mailparser';
import { afterEach, describe, expect, it } from 'vitest';
import emailType from '@svc/type-email';
import eventType from '@svc/type-event';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { startSmtpServer } from './helpers/smtpServer.js';
import type { SmtpServerOptions, TestSmtpServer } from './helpers/smtpServer.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close();
});

async function smtp(options: SmtpServerOptions = {}): Promise<TestSmtpServer> {
  const server = await startSmtpServer(options);
  open.push(server);
  return server;
}

async function app(config: Record<string, unknown>, env: 'development' | 'production' = 'development'): Promise<TestApp> {
  // The sending cases speak as any client; who may send is tested on its own below.
  const started = await startTestApp({ email: { config: { type: 'Email', allowClients: true, ...config } } }, { types: [emailType], env });
  open.push(started);
  return started;
}

function addresses(field: AddressObject | AddressObject[] | undefined): { name: string; address: string | undefined }[] {
  const list = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return list.flatMap((f) => f.value.map((v) => ({ name: v.name, address: v.address })));
}

/** A loopback port nothing listens on: listen, note the port, close. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const FULL = {
  from: 'Ann Sender <ann@example.com>',
  to: 'bob@example.com, Carol Jones <carol@example.org>',
  cc: 'dave@example.net',
  bcc: 'eve@example.com, frank@example.com',
  subject: 'Quarterly report ✓ (ünïcode)',
  text: 'Hello Bob,\nthe report is attached in spirit.\n',
  html: '<p>Hello <b>Bob</b>,</p><p>the report is attached in spirit.</p>',
};

describe('Email resource: sending through a real SMTP server', () => {
  it('delivers every header and both bodies, keeps Bcc in the envelope only, and answers {sent, messageId, accepted, rejected}', async () => {
    const server = await smtp();
    const svc = await app({ host: '127.0.0.1', port: server.port });
    const res = await svc.request('POST', '/email', { body: FULL });
    expect(res.status).toBe(200);
    const body = res.body as { sent: boolean; messageId: string; accepted: string[]; rejected: string[] };
    expect(body.sent).toBe(true);
    expect(body.messageId).toMatch(/^<.+@.+>$/);
    expect(body.accepted.sort()).toEqual(['bob@example.com', 'carol@example.org', 'dave@example.net', 'eve@example.com', 'frank@example.com']);
    expect(body.rejected).toEqual([]);

    expect(server.mails).toHaveLength(1);
    const mail = server.mails[0]!;
    expect(mail.mailFrom).toBe('ann@example.com');
    expect(mail.rcptTo.sort()).toEqual(body.accepted);
    const parsed = mail.parsed;
    expect(addresses(parsed.from)).toEqual([{ name: 'Ann Sender', address: 'ann@example.com' }]);
    expect(addresses(parsed.to)).toEqual([
      { name: '', address: 'bob@example.com' },
      { name: 'Carol Jones', address: 'carol@example.org' },
    ]);
    expect(addresses(parsed.cc)).toEqual([{ name: '', address: 'dave@example.net' }]);
    expect(parsed.bcc).toBeUndefined();
    expect(parsed.headers.has('bcc')).toBe(false);
    const headerBlock = mail.raw.slice(0, mail.raw.indexOf('\r\n\r\n'));
    expect(headerBlock).not.toMatch(/eve@example\.com|frank@example\.com/);
    expect(parsed.subject).toBe(FULL.subject);
    expect(parsed.messageId).toBe(body.messageId);
    expect(parsed.date).toBeInstanceOf(Date);
    expect(parsed.headers.get('mime-version')).toBe('1.0');
    expect((parsed.headers.get('content-type') as { value: string }).value).toBe('multipart/alternative');
    expect(parsed.text).toBe(FULL.text);
    expect(parsed.html).toBe(FULL.html);
  });

  it('uses defaultFromAddress when the request has no from, and a request from wins over it', async () => {
    const server = await smtp();
    const svc = await app({ host: '127.0.0.1', port: server.port, defaultFromAddress: 'Svc App <noreply@example.com>' });
    expect((await svc.request('POST', '/email', { body: { to: 'bob@example.com', subject: 'a', text: 'x' } })).status).toBe(200);
    expect((await svc.request('POST', '/email', { body: { from: 'ann@example.com', to: 'bob@example.com', subject: 'b', text: 'y' } })).status).toBe(200);
    expect(addresses(server.mails[0]!.parsed.from)).toEqual([{ name: 'Svc App', address: 'noreply@example.com' }]);
    expect(server.mails[0]!.mailFrom).toBe('noreply@example.com');
    expect(addresses(server.mails[1]!.parsed.from)).toEqual([{ name: '', address: 'ann@example.com' }]);
  });

  it('sends a text-only mail from a form body, and an html-only one', async () => {
    const server = await smtp();
    const svc = await app({ host: '127.0.0.1', port: server.port });
    const form = new URLSearchParams({ from: 'ann@example.com', to: 'bob@example.com', subject: 'form', text: 'plain only' }).toString();
    const res = await svc.request('POST', '/email', { body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(200);
    // A single-part body ends with the line break that closes the DATA block.
    expect(server.mails[0]!.parsed.text?.trimEnd()).toBe('plain only');
    expect(server.mails[0]!.parsed.html).toBe(false);
    expect((await svc.request('POST', '/email', { body: { from: 'ann@example.com', bcc: 'eve@example.com', html: '<i>hi</i>' } })).status).toBe(200);
    expect((server.mails[1]!.parsed.html as string).trimEnd()).toBe('<i>hi</i>');
    expect(server.mails[1]!.parsed.subject).toBeUndefined();
    expect(server.mails[1]!.rcptTo).toEqual(['eve@example.com']);
    expect(server.mails[1]!.parsed.to).toBeUndefined();
  });

  it('logs in with username and password, and a refused login is a 502 naming it', async () => {
    const server = await smtp({ users: { mailer: 's3cret' } });
    const good = await app({ host: '127.0.0.1', port: server.port, username: 'mailer', password: 's3cret' });
    expect((await good.request('POST', '/email', { body: FULL })).status).toBe(200);
    expect(server.mails[0]!.user).toBe('mailer');
    const bad = await app({ host: '127.0.0.1', port: server.port, username: 'mailer', password: 'wrong' });
    const res = await bad.request('POST', '/email', { body: FULL });
    expect(res.status).toBe(502);
    expect((res.body as { message: string }).message).toBe('the mail server refused the login (SMTP 535)');
    expect(server.mails).toHaveLength(1);
  });

  it('reports recipients the server refused; when it refuses all of them the send is a 502', async () => {
    const server = await smtp({ refuse: ['ghost@example.com', 'phantom@example.com'] });
    const svc = await app({ host: '127.0.0.1', port: server.port });
    const some = await svc.request('POST', '/email', { body: { ...FULL, to: 'bob@example.com, ghost@example.com', cc: '', bcc: '' } });
    expect(some.status).toBe(200);
    expect(some.body).toMatchObject({ sent: true, accepted: ['bob@example.com'], rejected: ['ghost@example.com'] });
    expect(server.mails[0]!.rcptTo).toEqual(['bob@example.com']);
    const none = await svc.request('POST', '/email', { body: { ...FULL, to: 'ghost@example.com, phantom@example.com', cc: '', bcc: '' } });
    expect(none.status).toBe(502);
    expect((none.body as { message: string }).message).toMatch(/refused the sender or the recipients/);
    expect(server.mails).toHaveLength(1);
  });

  it('ssl: true speaks TLS from the first byte: a plain-text server is a 503, not a hang', async () => {
    const server = await smtp();
    const svc = await app({ host: '127.0.0.1', port: server.port, ssl: true });
    const started = Date.now();
    const res = await svc.request('POST', '/email', { body: FULL });
    expect(res.status).toBe(503);
    expect((res.body as { message: string }).message).toMatch(/is not reachable/);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(server.mails).toHaveLength(0);
  });

  it('answers 503 with Retry-After when the mail server is down, and keeps serving', async () => {
    const port = await closedPort();
    const svc = await app({ host: '127.0.0.1', port });
    const started = Date.now();
    const res = await svc.request('POST', '/email', { body: FULL });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('60');
    // The answer does not tell a client where the mail server is; the log does.
    expect((res.body as { message: string }).message).toBe('the mail server is not reachable; try again later');
    expect(svc.logs.some((l) => l.level === 'error' && (l.fields?.cause as Error | undefined)?.message.includes(`mail server 127.0.0.1:${port} is not reachable`))).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(svc.logs.some((l) => l.level === 'error' && l.message.includes('not reachable'))).toBe(true);
    expect((await svc.request('POST', '/email', { body: FULL })).status).toBe(503);
  });
});

describe('Email resource: what a request may ask', () => {
  const BAD: { name: string; body: unknown; errors?: Record<string, RegExp> }[] = [
    { name: 'an empty body', body: {}, errors: { from: /required/, to: /at least one recipient/, text: /text or html/ } },
    { name: 'a from that is not an address', body: { ...FULL, from: 'Ann Sender' }, errors: { from: /"Ann Sender" is not an email address/ } },
    { name: 'two senders', body: { ...FULL, from: 'a@example.com, b@example.com' }, errors: { from: /exactly one/ } },
    { name: 'a CR/LF in to (header injection)', body: { ...FULL, to: 'bob@example.com\r\nBcc: victim@example.com' }, errors: { to: /line breaks/ } },
    { name: 'a LF in from', body: { ...FULL, from: 'Ann <ann@example.com>\nX-Injected: 1' }, errors: { from: /line breaks/ } },
    { name: 'a CR/LF in subject', body: { ...FULL, subject: 'Hi\r\nBcc: victim@example.com' }, errors: { subject: /line breaks/ } },
    { name: 'a LF in cc and bcc', body: { ...FULL, cc: 'x@example.com\n', bcc: '\nBcc: y@example.com' }, errors: { cc: /line breaks/, bcc: /line breaks/ } },
    { name: 'a bad address among good ones', body: { ...FULL, to: 'bob@example.com, nope' }, errors: { to: /"nope" is not an email address/ } },
    { name: 'a group', body: { ...FULL, to: 'friends: a@example.com, b@example.com;' }, errors: { to: /groups/ } },
    { name: 'a number for to', body: { ...FULL, to: 42 }, errors: { to: /must be a string/ } },
    { name: 'no body text at all', body: { ...FULL, text: '', html: undefined }, errors: { text: /text or html/ } },
    { name: 'an array', body: [FULL] },
  ];

  it.each(BAD)('refuses $name with 400 and nothing reaches the mail server', async ({ body, errors }) => {
    const server = await smtp();
    const svc = await app({ host: '127.0.0.1', port: server.port });
    const res = await svc.request('POST', '/email', { body });
    expect(res.status).toBe(400);
    const answer = res.body as { status: number; errors?: Record<string, string> };
    expect(answer.status).toBe(400);
    if (errors) {
      expect(Object.keys(answer.errors ?? {}).sort()).toEqual(Object.keys(errors).sort());
      for (const [field, pattern] of Object.entries(errors)) expect(answer.errors?.[field]).toMatch(pattern);
    }
    expect(server.mails).toHaveLength(0);
  });

  it('sends on POST / only: other methods are 405 with Allow, sub-paths 404', async () => {
    const server = await smtp();
    const svc = await app({ host: '127.0.0.1', port: server.port });
    const get = await svc.request('GET', '/email');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await svc.request('PUT', '/email', { body: FULL })).status).toBe(405);
    expect((await svc.request('POST', '/email/send', { body: FULL })).status).toBe(404);
    expect(server.mails).toHaveLength(0);
  });

  // Issue 23, item 9: an anonymous POST in production sent mail, and its error named the SMTP server.
  it('by default only event scripts and root send: an anonymous client gets 403, in production too, and learns nothing of the mail server', async () => {
    const server = await smtp();
    const notify = "svc.email.post({ to: body.to, text: 'hi' }, function (result, err) { setResult(err ? { failed: err } : result); });";
    for (const env of ['development', 'production'] as const) {
      const svc = await startTestApp(
        {
          email: { config: { type: 'Email', host: '127.0.0.1', port: server.port, defaultFromAddress: 'App <app@example.com>' } },
          notify: { config: { type: 'Event' }, files: { 'post.js': notify } },
        },
        // A loaded machine sends slower than the default 1 s of a script run.
        { types: [emailType, eventType], env, appJson: { scripts: { timeoutMs: 20_000 } } },
      );
      open.push(svc);
      const before = server.mails.length;
      const anonymous = await svc.request('POST', '/email', { body: FULL });
      expect(anonymous.status).toBe(403);
      expect(anonymous.text).not.toContain('127.0.0.1');
      expect(anonymous.text).not.toContain(String(server.port));
      expect((anonymous.body as { message: string }).message).toBe('email sends mail for event scripts and root only; its config\'s allowClients lets any client send');
      expect(server.mails).toHaveLength(before);
      const fromScript = await svc.request('POST', '/notify', { body: { to: 'bob@example.com' } });
      expect(fromScript.body, env).toMatchObject({ sent: true });
    }
    expect(server.mails).toHaveLength(2);
    // Development's root (any key from this machine) may send.
    const dev = await startTestApp({ email: { config: { type: 'Email', host: '127.0.0.1', port: server.port } } }, { types: [emailType] });
    open.push(dev);
    expect((await dev.request('POST', '/email', { body: FULL, headers: { 'svc-ssh-key': 'any' } })).status).toBe(200);
    expect(server.mails).toHaveLength(3);
  });

  it('internalOnly refuses requests that do not come from a script with 403', async () => {
    const server = await smtp();
    const svc = await app({ host: '127.0.0.1', port: server.port, internalOnly: true });
    const res = await svc.request('POST', '/email', { body: FULL, headers: { 'svc-ssh-key': 'any' } });
    expect(res.status).toBe(403);
    expect((res.body as { message: string }).message).toMatch(/internalOnly/);
    expect(server.mails).toHaveLength(0);
  });

  it('internalOnly lets event scripts send through the svc client, and they see the errors', async () => {
    const server = await smtp();
    const notify = [
      '// POST /notify {to}: a script sends through the internalOnly email resource.',
      "svc.email.post({ to: body.to, subject: 'From a script', text: 'Sent by ' + (me ? me.username : 'a guest') }, function (result, err) {",
      '  if (err) return setResult({ failed: err });',
      '  setResult(result);',
      '});',
    ].join('\n');
    const svc = await startTestApp(
      {
        email: { config: { type: 'Email', host: '127.0.0.1', port: server.port, internalOnly: true, defaultFromAddress: 'App <app@example.com>' } },
        notify: { config: { type: 'Event' }, files: { 'post.js': notify } },
      },
      { types: [emailType, eventType] },
    );
    open.push(svc);
    const res = await svc.request('POST', '/notify', { body: { to: 'Bob <bob@example.com>' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ sent: true, accepted: ['bob@example.com'], rejected: [] });
    expect(server.mails).toHaveLength(1);
    expect(addresses(server.mails[0]!.parsed.from)).toEqual([{ name: 'App', address: 'app@example.com' }]);
    expect(server.mails[0]!.parsed.subject).toBe('From a script');
    expect(server.mails[0]!.parsed.text?.trimEnd()).toBe('Sent by a guest');
    const bad = await svc.request('POST', '/notify', { body: { to: 'bob@example.com\r\nBcc: x@example.com' } });
    expect(bad.body).toEqual({ failed: { status: 400, statusCode: 400, message: 'the message is not valid', errors: { to: 'to must not contain line breaks' } } });
    expect((await svc.request('POST', '/email', { body: FULL })).status).toBe(403);
    expect(server.mails).toHaveLength(1);
  });

  it('productionOnly prints the mail to the log in development and sends nothing', async () => {
    const server = await smtp();
    const svc = await app({ host: '127.0.0.1', port: server.port, productionOnly: true });
    const res = await svc.request('POST', '/email', { body: FULL });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ sent: false, messageId: null, accepted: [], rejected: [] });
    expect(server.mails).toHaveLength(0);
    const line = svc.logs.find((l) => l.message.includes('productionOnly'));
    expect(line?.level).toBe('info');
    expect(line?.fields).toMatchObject({ from: FULL.from, to: 'bob@example.com, Carol Jones <carol@example.org>', bcc: 'eve@example.com, frank@example.com', subject: FULL.subject, text: FULL.text, html: FULL.html });
  });

  it('productionOnly sends in production', async () => {
    const server = await smtp();
    const svc = await app({ host: '127.0.0.1', port: server.port, productionOnly: true }, 'production');
    const res = await svc.request('POST', '/email', { body: FULL });
    expect(res.status).toBe(200);
    expect((res.body as { sent: boolean }).sent).toBe(true);
    expect(server.mails).toHaveLength(1);
  });
});

describe('Email resource: settings are checked at start', () => {
  const CASES: { name: string; config: Record<string, unknown>; error: RegExp }[] = [
    { name: 'no host', config: {}, error: /resource email: setting host is required/ },
    { name: 'a port that is a string', config: { host: 'localhost', port: '25' }, error: /resource email: setting port must be a number/ },
    { name: 'a port out of range', config: { host: 'localhost', port: 70000 }, error: /resource email: setting port must be a port number/ },
    { name: 'ssl as a string', config: { host: 'localhost', ssl: 'yes' }, error: /resource email: setting ssl must be a boolean/ },
    { name: 'a username without password', config: { host: 'localhost', username: 'u' }, error: /resource email: setting password is required when username is set/ },
    { name: 'a bad defaultFromAddress', config: { host: 'localhost', defaultFromAddress: 'nobody' }, error: /resource email: setting defaultFromAddress must be one address/ },
  ];
  it.each(CASES)('refuses $name', async ({ config, error }) => {
    await expect(app(config)).rejects.toThrow(error);
  });
});
