import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defineResourceType } from '@svc/core';
import { startApp } from '@svc/server';
import { resolveEnvReferences } from '../src/envReferences.js';
import { memoryLogger, writeApp } from './helpers/app.js';

// Issue 23, item 8: `${env:NAME}` in config.json, so that an SMTP password is not committed.
const SECRET = 'pa55-from-the-environment';
process.env.SVC_TEST_SMTP_PASSWORD = SECRET;
process.env.SVC_TEST_SMTP_PORT = '2525';

/** A test type answering the settings it was created with (a real type must never do that). */
const probe = defineResourceType({
  name: 'Probe',
  settings: { password: { type: 'string' }, port: { type: 'number', default: 25 }, label: { type: 'string' }, nested: { type: 'object' } },
  create: ({ settings, config }) => ({ handle: () => Promise.resolve({ status: 200, body: { settings, config } }) }),
});

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function start(files: Record<string, string | object>, env: 'development' | 'production' = 'development') {
  const dir = await writeApp(files);
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const logger = memoryLogger();
  const app = await startApp({ appDir: dir, port: 0, host: '127.0.0.1', env, logger, resourceTypes: [probe] });
  cleanup.push(() => app.close());
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(app.url + path, { method, headers: { 'content-type': 'application/json', 'svc-ssh-key': 'dev' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as unknown, text };
  };
  return { app, dir, logger, call };
}

describe('${env:NAME} in config.json', () => {
  it('a setting takes the variable at load; a whole reference becomes a number where the schema wants one', async () => {
    const { call } = await start({
      'resources/mail/config.json': { type: 'Probe', password: '${env:SVC_TEST_SMTP_PASSWORD}', port: '${env:SVC_TEST_SMTP_PORT}', label: 'user-${env:SVC_TEST_SMTP_PORT}-$${env:NOT_A_REFERENCE}', nested: { deep: ['${env:SVC_TEST_SMTP_PASSWORD}'] } },
    });
    const res = await call('GET', '/mail');
    expect(res.body).toMatchObject({ settings: { password: SECRET, port: 2525, label: 'user-2525-${env:NOT_A_REFERENCE}', nested: { deep: [SECRET] } } });
  });

  it('a missing variable stops the start naming the resource, the setting and the variable; no value is printed', async () => {
    const err = await start({ 'resources/mail/config.json': { type: 'Probe', password: '${env:SVC_TEST_UNSET_VARIABLE}' } }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('resource mail: setting password refers to ${env:SVC_TEST_UNSET_VARIABLE}, which is not set in the environment');
    // A number setting with a reference inside a longer text: refused without quoting the value.
    const mixed = await start({ 'resources/mail/config.json': { type: 'Probe', port: '1${env:SVC_TEST_SMTP_PASSWORD}' } }).catch((e: unknown) => e as Error);
    expect((mixed as Error).message).toContain('resource mail: setting port must be a number');
    expect((mixed as Error).message).not.toContain(SECRET);
    const notNumber = await start({ 'resources/mail/config.json': { type: 'Probe', port: '${env:SVC_TEST_SMTP_PASSWORD}' } }).catch((e: unknown) => e as Error);
    expect((notNumber as Error).message).toBe('resource mail: setting port: ${env:SVC_TEST_SMTP_PASSWORD} must hold a number');
  });

  it('root keys cannot be named, nor a malformed name', () => {
    expect(() => resolveEnvReferences('mail', { type: 'Probe', label: '${env:SVC_ROOT_KEYS}' }, probe.settings, { SVC_ROOT_KEYS: 'k'.repeat(64) })).toThrow(/not allowed: root keys are not configuration/);
    expect(() => resolveEnvReferences('mail', { type: 'Probe', label: '${env:A-B}' }, probe.settings, { 'A-B': 'x' })).toThrow(/must name an environment variable/);
    // `type` and the keys themselves are never resolved.
    expect(resolveEnvReferences('mail', { type: '${env:T}', '${env:T}': 'x' }, undefined, { T: 'Probe' })).toEqual({ type: '${env:T}', '${env:T}': 'x' });
  });

  it('what requests and scripts bring is never resolved (a body or a script naming ${env:...} stays text)', async () => {
    const { call } = await start({
      'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' }, note: { type: 'string' } } },
      'resources/todos/post.js': "this.note = '${env:SVC_TEST_SMTP_PASSWORD}';\n",
    });
    const made = await call('POST', '/todos', { title: '${env:PATH} ${env:SVC_TEST_SMTP_PASSWORD}' });
    expect(made.status).toBe(200);
    expect(made.body).toMatchObject({ title: '${env:PATH} ${env:SVC_TEST_SMTP_PASSWORD}', note: '${env:SVC_TEST_SMTP_PASSWORD}' });
    expect(made.text).not.toContain(SECRET);
  });

  it('the dashboard shows and saves the reference, never the value', async () => {
    const { call, dir } = await start({ 'resources/mail/config.json': { type: 'Probe', password: '${env:SVC_TEST_SMTP_PASSWORD}' } });
    const shown = await call('GET', '/dashboard/api/resources/mail');
    expect(shown.body).toMatchObject({ password: '${env:SVC_TEST_SMTP_PASSWORD}' });
    const app = await call('GET', '/dashboard/api/app');
    expect(app.text).not.toContain(SECRET);
    const saved = await call('PUT', '/dashboard/api/resources/mail', { config: { type: 'Probe', password: '${env:SVC_TEST_SMTP_PASSWORD}', port: '${env:SVC_TEST_SMTP_PORT}' } });
    expect(saved.status).toBe(200);
    expect(saved.text).not.toContain(SECRET);
    expect(JSON.parse(await readFile(join(dir, 'resources/mail/config.json'), 'utf8'))).toEqual({ type: 'Probe', password: '${env:SVC_TEST_SMTP_PASSWORD}', port: '${env:SVC_TEST_SMTP_PORT}' });
    expect((await call('GET', '/mail')).body).toMatchObject({ settings: { password: SECRET, port: 2525 } });
    // A reference to a variable this server does not have is refused before anything is written.
    const missing = await call('PUT', '/dashboard/api/resources/mail', { config: { type: 'Probe', password: '${env:SVC_TEST_UNSET_VARIABLE}' } });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ errors: { password: 'refers to ${env:SVC_TEST_UNSET_VARIABLE}, which is not set in the environment' } });
    expect(await readFile(join(dir, 'resources/mail/config.json'), 'utf8')).toContain('${env:SVC_TEST_SMTP_PORT}');
  });
});
