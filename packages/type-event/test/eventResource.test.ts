import { createRequestScope, SvcError } from '@svc/core';
import type { Context, EventScripts, ScriptOutcome, ScriptRunInput } from '@svc/core';
import { describe, expect, it } from 'vitest';
import { createEventResource, eventType, resultReply } from '@svc/type-event';

function context(method: string, url: string, extra: Partial<Context> = {}): Context {
  return {
    method,
    originalMethod: method,
    url,
    parts: url.split('/').filter(Boolean),
    query: {},
    body: undefined,
    bodyKind: 'none',
    headers: {},
    session: { id: 's', isNew: false },
    me: undefined,
    isRoot: false,
    internal: false,
    scope: createRequestScope('127.0.0.1'),
    ...extra,
  };
}

/** Scripts that record their runs and answer with a fixed outcome (or throw). */
function fakeScripts(files: string[], answer: (event: string) => Partial<ScriptOutcome>) {
  const runs: { event: string; input: ScriptRunInput | undefined }[] = [];
  const scripts: EventScripts = {
    has: (event) => files.includes(event),
    run(event, _ctx, input) {
      runs.push({ event, input });
      return Promise.resolve({ object: {}, hidden: [], protectedProps: [], resultSet: false, ...answer(event) });
    },
  };
  return { scripts, runs };
}

describe('createEventResource', () => {
  it('runs get for GET and post for POST with this = {} and url, parts, query, body as locals', async () => {
    const { scripts, runs } = fakeScripts(['get', 'post'], (event) => ({ resultSet: true, result: { event } }));
    const resource = createEventResource(scripts);
    expect(await resource.handle(context('GET', '/a/b', { query: { x: '1' } }))).toEqual({ status: 200, body: { event: 'get' } });
    expect(await resource.handle(context('POST', '/', { body: { n: 1 }, bodyKind: 'json' }))).toEqual({ status: 200, body: { event: 'post' } });
    expect(runs).toEqual([
      { event: 'get', input: { object: {}, locals: { url: '/a/b', parts: ['a', 'b'], query: { x: '1' }, body: {} } } },
      { event: 'post', input: { object: {}, locals: { url: '/', parts: [], query: {}, body: { n: 1 } } } },
    ]);
  });

  it('passes a cancel() through untouched', async () => {
    const scripts: EventScripts = { has: () => true, run: () => Promise.reject(new SvcError('CANCELLED', 'no', { status: 418 })) };
    await expect(createEventResource(scripts).handle(context('GET', '/'))).rejects.toMatchObject({ status: 418, message: 'no' });
  });

  it('runs put for PUT and delete for DELETE, as dpd-event 1.1', async () => {
    const { scripts, runs } = fakeScripts(['put', 'delete'], (event) => ({ resultSet: true, result: { event } }));
    const resource = createEventResource(scripts);
    expect(await resource.handle(context('PUT', '/7', { body: { n: 2 }, bodyKind: 'json' }))).toEqual({ status: 200, body: { event: 'put' } });
    expect(await resource.handle(context('DELETE', '/7'))).toEqual({ status: 200, body: { event: 'delete' } });
    expect(runs.map((r) => r.event)).toEqual(['put', 'delete']);
  });

  it('answers 404 "resource not found" for methods without a script, as Deployd', async () => {
    const { scripts, runs } = fakeScripts(['get'], () => ({}));
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'constructor', 'toString']) {
      await expect(createEventResource(scripts).handle(context(method, '/'))).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND', message: 'resource not found' });
    }
    expect(runs).toEqual([]);
  });

  it('answers this (200 {} unless the script gave it properties) when the script sets no result', async () => {
    const { scripts } = fakeScripts(['get', 'post'], (event) => (event === 'post' ? { object: { made: 1 } } : {}));
    expect(await createEventResource(scripts).handle(context('GET', '/'))).toEqual({ status: 200, body: {} });
    expect(await createEventResource(scripts).handle(context('POST', '/'))).toEqual({ status: 200, body: { made: 1 } });
  });
});

describe('resultReply', () => {
  it.each([
    { name: 'no setResult()', set: false, result: undefined, reply: { status: 200, body: {} } },
    { name: 'setResult(undefined)', set: true, result: undefined, reply: { status: 200, body: {} } },
    { name: 'setResult(null)', set: true, result: null, reply: { status: 200, body: null } },
    { name: 'an object', set: true, result: { a: 1 }, reply: { status: 200, body: { a: 1 } } },
    { name: 'false', set: true, result: false, reply: { status: 200, body: false } },
    { name: 'a string', set: true, result: 'hi', reply: { status: 200, body: 'hi', headers: { 'content-type': 'text/html; charset=utf-8', 'x-content-type-options': 'nosniff' } } },
  ])('$name', ({ set, result, reply }) => {
    expect(resultReply(set, result)).toEqual(reply);
  });
});

describe('eventType', () => {
  it('is a checked resource type named Event that loads get.js, post.js, put.js, delete.js and schedule.js', () => {
    expect(eventType).toMatchObject({ kind: 'svc.resourceType', name: 'Event', core: '^0.1.0', events: ['get.js', 'post.js', 'put.js', 'delete.js', 'schedule.js'] });
  });
});
