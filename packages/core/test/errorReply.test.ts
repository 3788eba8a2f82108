import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SvcError } from '../src/errors.js';
import { toErrorReply } from '../src/http/reply.js';
import { withoutPaths } from '../src/withoutPaths.js';
import type { Logger } from '../src/logger.js';

// Issue 21, item 9: an unexpected error answered in development carried its message, and a
// failed file operation's message names the server's files (ENAMETOOLONG ... mkdir '/srv/app/...').

function capture(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = (message: string, fields?: Record<string, unknown>): void => void lines.push(`${message} ${String((fields?.error as Error | undefined)?.message)}`);
  return { logger: { info: log, warn: log, error: log }, lines };
}

describe('error answers name no file of the server', () => {
  it('a failed file operation answers its code only, in development too; the log has the path', async () => {
    const path = join(tmpdir(), 'x'.repeat(300), 'y');
    const err = await mkdir(path, { recursive: true }).then(() => undefined, (e: unknown) => e);
    expect(String(err)).toContain(tmpdir());
    for (const production of [false, true]) {
      const { logger, lines } = capture();
      const reply = toErrorReply(err, { production, logger, where: 'POST /x' });
      expect(reply.status).toBe(500);
      expect(JSON.stringify(reply.body)).not.toContain(tmpdir());
      expect(JSON.stringify(reply.body)).not.toContain('xxxx');
      expect(lines.join('\n')).toContain(path.slice(0, 40));
    }
    expect(toErrorReply(err, { production: false, logger: capture().logger, where: 'x' }).body).toEqual({ status: 500, statusCode: 500, message: 'internal server error (ENAMETOOLONG)' });
  });

  it('other unexpected errors keep their message in development, without paths of this machine', () => {
    const reply = toErrorReply(new Error(`embedded store: ${join(process.cwd(), 'data', 'todos.db')} is corrupt`), { production: false, logger: capture().logger, where: 'GET /todos' });
    expect(reply.body).toEqual({ status: 500, statusCode: 500, message: 'embedded store: … is corrupt' });
  });

  it('a server-side SvcError carrying a cause\'s text loses its paths too; client errors are left as they are', () => {
    const logger = capture().logger;
    const unavailable = new SvcError('UNAVAILABLE', "storage provider unreachable: EACCES: permission denied, open '/var/lib/svc/spool/x'");
    expect(toErrorReply(unavailable, { production: true, logger, where: 'PUT /files/x' }).body).toEqual({ status: 503, statusCode: 503, message: "storage provider unreachable: EACCES: permission denied, open '…'" });
    expect(toErrorReply(new SvcError('NOT_FOUND', 'no resource at /usr/x'), { production: true, logger, where: 'GET /usr/x' }).body).toEqual({ status: 404, statusCode: 404, message: 'no resource at /usr/x' });
  });

  it('withoutPaths keeps resource paths and URLs, removes absolute paths of this machine', () => {
    expect(withoutPaths('no resource at /todos/1 (see https://example.com/usr/x)')).toBe('no resource at /todos/1 (see https://example.com/usr/x)');
    expect(withoutPaths("EACCES: permission denied, open '/usr/lib/x.json'")).toBe("EACCES: permission denied, open '…'");
    expect(withoutPaths(`cannot read ${tmpdir()}/app/config.json: bad`)).toBe('cannot read …: bad');
    expect(withoutPaths('C:\\Users\\me\\app\\x.json: bad')).toBe('…: bad');
  });
});

// Issue 22, item 11: a script's cancel('x', 501) was logged as a server error; it is the app's answer.
describe("a script's own answer is not a server error", () => {
  function levels(): { logger: Logger; lines: string[] } {
    const lines: string[] = [];
    return { logger: { info: (m) => lines.push(`info ${m}`), warn: (m) => lines.push(`warn ${m}`), error: (m) => lines.push(`error ${m}`) }, lines };
  }

  it.each([
    { name: "cancel('x', 501)", err: new SvcError('CANCELLED', 'not built yet', { status: 501 }), body: { status: 501, statusCode: 501, message: 'not built yet' } },
    { name: "cancel('x', 503) (a path of this machine still left out)", err: new SvcError('CANCELLED', 'come back at /var/maintenance', { status: 503 }), body: { status: 503, statusCode: 503, message: 'come back at …' } },
    { name: 'error() with a 500 cancel', err: new SvcError('VALIDATION_FAILED', 'bad', { status: 500, errors: { a: 'b' } }), body: { status: 500, statusCode: 500, message: 'bad', errors: { a: 'b' } } },
  ])('$name: answered as the script said, logged at info, not as an error', ({ err, body }) => {
    const { logger, lines } = levels();
    expect(toErrorReply(err, { production: true, logger, where: 'GET /x' })).toEqual({ status: body.status, body });
    expect(lines.filter((l) => !l.startsWith('info '))).toEqual([]);
  });

  it('a server failure of the same status is still an error in the log', () => {
    const { logger, lines } = levels();
    toErrorReply(new SvcError('UNAVAILABLE', 'down'), { production: true, logger, where: 'GET /x' });
    expect(lines).toEqual(['error GET /x: down']);
  });
});

// Issue 22, item 12c: Deployd's error bodies carried statusCode beside status; its validation
// errors were {errors, status}, without a message.
describe('the error body: status and statusCode, message and errors only when there are some', () => {
  const logger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

  it.each([
    { name: 'a cancel', err: new SvcError('CANCELLED', 'no', { status: 403 }), body: { status: 403, statusCode: 403, message: 'no' } },
    { name: 'a validation error', err: new SvcError('VALIDATION_FAILED', undefined, { errors: { title: 'is required' } }), body: { status: 400, statusCode: 400, errors: { title: 'is required' } } },
    { name: 'a 404', err: new SvcError('NOT_FOUND', 'not found'), body: { status: 404, statusCode: 404, message: 'not found' } },
    { name: 'anything unexpected', err: new Error('boom'), body: { status: 500, statusCode: 500, message: 'internal server error' } },
  ])('$name', ({ err, body }) => {
    expect(toErrorReply(err, { production: true, logger, where: 'GET /x' }).body).toEqual(body);
  });

  it("an SvcError of another copy of @svc/core (a resource type's own, older toJSON) gets statusCode too", () => {
    const foreign = Object.assign(new Error('hello only greets on GET'), { name: 'SvcError', code: 'METHOD_NOT_ALLOWED', status: 405, errors: undefined, headers: undefined, toJSON: () => ({ status: 405, message: 'hello only greets on GET' }) });
    expect(toErrorReply(foreign, { production: true, logger, where: 'POST /hello' }).body).toEqual({ status: 405, statusCode: 405, message: 'hello only greets on GET' });
  });
});
