import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createConsoleLogger } from '@svc/core';
import type { AccessEntry, LogStream } from '@svc/core';

// Issue 23 (4): the server log as JSON lines or text, secrets never written, and a reader slower
// than the server never makes its memory grow.

/** A stream that keeps what it is given, read at once. */
function sink(): LogStream & { lines(): string[] } {
  let text = '';
  return {
    writableLength: 0,
    write(chunk: string) {
      text += chunk;
      return true;
    },
    lines: () => text.split('\n').filter((l) => l !== ''),
  };
}

const entry: AccessEntry = { time: '2026-11-25T12:00:00.000Z', id: 'abc-1', method: 'GET', path: '/todos/1', status: 200, ms: 1.5, uid: 'u1', client: '127.0.0.1', bytes: 321, aborted: false };

describe('createConsoleLogger', () => {
  it('json: one object per line with time, level, msg and the fields; errors with name, message and stack', async () => {
    const out = sink();
    const log = createConsoleLogger({ format: 'json', stream: out });
    log.info('started', { port: 2403 });
    log.error('failed', { error: new TypeError('bad\nthing') });
    log.warn('multi\nline message');
    log.access(entry);
    // Access lines go out together, 50 ms later at most.
    await new Promise((resolve) => setTimeout(resolve, 60));
    const parsed = out.lines().map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed).toHaveLength(4);
    expect(parsed[0]).toMatchObject({ level: 'info', msg: 'started', port: 2403 });
    expect(new Date(parsed[0]?.time as string).toISOString()).toBe(parsed[0]?.time);
    expect(parsed[1]).toMatchObject({ level: 'error', msg: 'failed', error: { name: 'TypeError', message: 'bad\nthing' } });
    expect((parsed[1]?.error as { stack: string }).stack).toContain('TypeError: bad');
    expect(parsed[2]).toMatchObject({ level: 'warn', msg: 'multi\nline message' });
    expect(parsed[3]).toEqual({ time: entry.time, level: 'info', msg: 'GET /todos/1 200', type: 'access', id: 'abc-1', method: 'GET', path: '/todos/1', status: 200, ms: 1.5, uid: 'u1', client: '127.0.0.1', bytes: 321, aborted: false });
  });

  it('json: a field named time, level or msg does not replace the line\'s own', () => {
    const out = sink();
    createConsoleLogger({ format: 'json', stream: out }).info('x', { level: 'forged', time: 1 });
    expect(JSON.parse(out.lines()[0] as string)).toMatchObject({ level: 'info', msg: 'x', fieldLevel: 'forged', fieldTime: 1 });
  });

  it('a server line is written at once, after the access lines queued before it', () => {
    const out = sink();
    const log = createConsoleLogger({ format: 'json', stream: out });
    log.access(entry);
    expect(out.lines()).toHaveLength(0);
    log.error('boom');
    expect(out.lines().map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['GET /todos/1 200', 'boom']);
  });

  it('text: the duration written as ${ms} writes it, and every control character escaped', () => {
    const out = sink();
    const log = createConsoleLogger({ stream: out });
    const durations = [0, 0.1, 0.3, 1.5, 2, 9.9, 10, 12.7, 99.9, 1234.5, 1e6 + 0.1, 2 ** 31 + 0.5, 0.25, 1 / 3, 1e-7, 1e21, -1.5, Number.NaN];
    for (let i = 0; i < 2000; i++) durations.push(Math.round(Math.random() * 10 ** (1 + (i % 7))) / 10);
    for (const ms of durations) log.access({ ...entry, ms });
    for (const code of [0, 9, 10, 13, 0x1f, 0x7f, 0x85, 0x9b, 0x2028, 0x2029]) log.access({ ...entry, path: `/x${String.fromCharCode(code)}y` });
    log.error('flush');
    const lines = out.lines();
    durations.forEach((ms, i) => expect(lines[i]?.split(' ')[5]).toBe(`${ms}ms`));
    const escaped = lines.slice(durations.length, -1).map((line) => line.split(' ')[3]);
    expect(escaped).toEqual(['/x\\u0000y', '/x\\u0009y', '/x\\u000ay', '/x\\u000dy', '/x\\u001fy', '/x\\u007fy', '/x\\u0085y', '/x\\u009by', '/x\\u2028y', '/x\\u2029y']);
  });

  // Issue 38 item 2: JSON leaves NEL, U+2028 and U+2029 raw, and readers that split lines as
  // Unicode does (TR18: Python's splitlines, many log shippers) cut such a line in two.
  it.each(['json', 'text'] as const)('%s: NEL, U+2028 and U+2029 from a client stay inside their one line', async (format) => {
    const out = sink();
    const log = createConsoleLogger({ format, stream: out });
    const odd = 'a\u0085b\u2028c\u2029d';
    log.access({ ...entry, path: `/x${odd}` });
    log.warn(`title ${odd}`, { title: odd, nested: { list: [odd] } });
    await new Promise((resolve) => setTimeout(resolve, 60));
    const text = out.lines().join('\n');
    expect(text.split(/\r\n|[\n\v\f\r\u0085\u2028\u2029]/)).toHaveLength(2);
    if (format === 'json') {
      const [access, warn] = out.lines().map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(access).toMatchObject({ path: `/x${odd}`, msg: `GET /x${odd} 200` });
      expect(warn).toMatchObject({ msg: `title ${odd}`, title: odd, nested: { list: [odd] } });
    } else {
      expect(text).toContain('/xa\\u0085b\\u2028c\\u2029d');
      expect(JSON.parse((out.lines()[1] as string).replace(/^.*? warn title \S+ /, ''))).toEqual({ title: odd, nested: { list: [odd] } });
    }
  });

  it('text: one line per event, a client\'s control characters escaped', async () => {
    const out = sink();
    const log = createConsoleLogger({ stream: out });
    log.warn('no resource at /a\n2026-01-01T00:00:00.000Z error forged');
    log.access({ ...entry, path: '/x\u001b[31m' });
    await new Promise((resolve) => setTimeout(resolve, 60));
    const lines = out.lines();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\S+ warn no resource at \/a\\u000a2026/);
    expect(lines[1]).toMatch(/^2026-11-25T12:00:00.000Z info GET \/x\\u001b\[31m 200 1.5ms 321B id=abc-1 client=127.0.0.1 uid=u1$/);
  });

  it.each(['json', 'text'] as const)('%s: root keys, cookies, authorization, passwords and URL passwords are redacted', (format) => {
    const out = sink();
    const log = createConsoleLogger({ format, stream: out });
    log.info('request', {
      headers: { 'svc-ssh-key': 'ROOTKEY1', cookie: 'sid=COOKIE1', authorization: 'Bearer TOKEN1', 'x-other': 'kept' },
      body: { username: 'ann', password: 'PASSWORD1', newPassword: 'PASSWORD2' },
      url: 'mongodb://admin:DBPASS1@db.example:27017/app',
    });
    log.error('could not connect to redis://:REDISPASS1@cache:6379', { error: new Error('auth failed for mongodb://u:DBPASS2@h/db') });
    const text = out.lines().join('\n');
    for (const secret of ['ROOTKEY1', 'COOKIE1', 'TOKEN1', 'PASSWORD1', 'PASSWORD2', 'DBPASS1', 'DBPASS2', 'REDISPASS1']) expect(text).not.toContain(secret);
    expect(text).toContain('kept');
    expect(text).toContain('ann');
    expect(text).toContain('db.example');
  });

  it('a reader that falls behind: lines are dropped and counted, not kept in memory, and the count is logged once it catches up', async () => {
    const taken: string[] = [];
    let release: (() => void) | undefined;
    // Takes the first chunk and then holds on to the callback: everything after waits in the buffer.
    const slow = new Writable({
      write(chunk: Buffer, _enc, callback) {
        taken.push(chunk.toString());
        release = callback;
      },
    });
    const log = createConsoleLogger({ format: 'json', stream: slow, maxBacklogBytes: 10_000 });
    for (let i = 0; i < 10_000; i++) log.access({ ...entry, id: `r${i}` });
    await new Promise((resolve) => setTimeout(resolve, 60));
    // At most the backlog allowed plus one batch of access lines (64 kB) waits.
    expect(slow.writableLength).toBeLessThan(10_000 + 64 * 1024 + 1000);
    expect(log.dropped).toBeGreaterThan(9_000);
    expect(log.dropped).toBeLessThan(10_000);
    const dropped = log.dropped;
    // The reader catches up: the next line says how many were lost.
    for (let i = 0; i < 10_000 && slow.writableLength > 0; i++) {
      const r = release;
      release = undefined;
      r?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(slow.writableLength).toBe(0);
    log.info('after');
    release?.();
    const lines = taken.join('').split('\n').filter((l) => l !== '');
    const note = lines.map((l) => JSON.parse(l) as { msg: string; level: string }).find((l) => l.msg.startsWith('log: '));
    expect(note).toMatchObject({ level: 'warn', msg: `log: ${dropped} lines dropped: the log's reader fell more than 10000 bytes behind` });
    expect(lines.at(-1)).toContain('"msg":"after"');
  });
});
