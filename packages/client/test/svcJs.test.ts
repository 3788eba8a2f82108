import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSvcJsRoute, describeResources, renderSvcJs } from '@svc/client/server';
import type { ResourceInfo } from '@svc/client';
import { startClientTestServer } from './helpers.js';
import type { ClientTestServer } from './helpers.js';

/** A stand-in runtime that records what the generated script installs. */
const fakeRuntime = 'var __svcRuntime = { install: function (resources) { globalThis.installed = resources; } };';

describe('GET /svc.js', () => {
  let t: ClientTestServer;

  beforeAll(async () => {
    t = await startClientTestServer();
  });
  afterAll(async () => {
    await t.close();
  });

  it('describes every resource: kind from its client shape, custom methods kept', () => {
    expect(describeResources(t.server.resources)).toEqual([
      { path: '/todos', kind: 'collection' },
      { path: '/users', kind: 'users' },
      { path: '/a/b', kind: 'collection' },
      { path: '/add-follower', kind: 'custom', methods: { shout: { method: 'POST', func: 'shout' } } },
    ]);
  });

  it('the script runs the runtime, then installs the resource list, in one function scope', () => {
    const resources: ResourceInfo[] = [{ path: '/x</script>', kind: 'custom' }];
    const text = renderSvcJs(fakeRuntime, resources);
    expect(text).not.toContain('</script>');
    const sandbox: { installed?: unknown } = {};
    runInNewContext(text, sandbox);
    expect(sandbox.installed).toEqual(resources);
    expect(Object.keys(sandbox)).toEqual(['installed']);
  });

  it('is served as JavaScript with an ETag: 304 when unchanged, HEAD without body, 405 for POST', async () => {
    const route = createSvcJsRoute({ resources: t.server.resources, runtime: fakeRuntime });
    const other = await startClientTestServer([route]);
    try {
      const res = await fetch(`${other.url}/svc.js`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
      const text = await res.text();
      expect(text).toContain('"path":"/add-follower"');
      const etag = res.headers.get('etag')!;
      expect((await fetch(`${other.url}/svc.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
      const head = await fetch(`${other.url}/svc.js`, { method: 'HEAD' });
      expect([head.status, await head.text()]).toEqual([200, '']);
      expect((await fetch(`${other.url}/svc.js`, { method: 'POST' })).status).toBe(405);
    } finally {
      await other.close();
    }
  });
});
