import { afterEach, describe, expect, it } from 'vitest';
import { runApp } from './helpers/app.js';
import type { AppHandle } from './helpers/app.js';

// Issue 11 (6): CORS used to echo any Origin with credentials, also in production, so any web
// site could read a logged-in user's data through their browser.

const files = (cors?: object) => ({
  'app.json': cors ? { cors } : {},
  'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
});

let open: AppHandle | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function probe(h: AppHandle, origin: string) {
  const get = await fetch(`${h.url}/todos`, { headers: { origin } });
  const pre = await fetch(`${h.url}/todos`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'PUT' } });
  return { get: get.headers.get('access-control-allow-origin'), credentials: get.headers.get('access-control-allow-credentials'), preflight: pre.headers.get('access-control-allow-origin') };
}

describe('CORS defaults', () => {
  it('production without cors.origins answers no cross-origin caller (same-origin only)', async () => {
    open = await runApp(files(), { env: 'production' });
    expect(await probe(open, 'https://evil.example')).toEqual({ get: null, credentials: null, preflight: null });
    // Same-origin requests are unaffected.
    expect((await fetch(`${open.url}/todos`)).status).toBe(200);
  });

  it('production with cors.origins allows exactly those origins, with credentials', async () => {
    open = await runApp(files({ origins: ['https://app.example'] }), { env: 'production' });
    expect(await probe(open, 'https://app.example')).toEqual({ get: 'https://app.example', credentials: 'true', preflight: 'https://app.example' });
    expect(await probe(open, 'https://evil.example')).toEqual({ get: null, credentials: null, preflight: null });
  });

  it('development allows any origin (the dev server listens on loopback only)', async () => {
    open = await runApp(files(), { env: 'development' });
    expect(await probe(open, 'http://localhost:5173')).toEqual({ get: 'http://localhost:5173', credentials: 'true', preflight: 'http://localhost:5173' });
  });
});
