import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@svc/client';
import type { SvcErrorBody } from '@svc/client';
import { Collection, createEngineStore, createServer, silentLogger } from '@svc/core';
import type { SvcServer } from '@svc/core';

// The server's resource paths are case-sensitive (as Deployd's): the client asks for the path as
// it is written, as dpd.js did (dpd.TodoList is dpd('/TodoList')).
describe('resource names keep their case in the client', () => {
  let server: SvcServer;
  let url: string;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-client-case-'));
    const store = await createEngineStore({ dir });
    server = await createServer({ store, logger: silentLogger, resources: [new Collection({ path: '/TodoList', properties: { title: { type: 'string' } }, store: store.collection('todolist') })] });
    url = `http://127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('svc.TodoList and svc("TodoList") reach /TodoList; svc.todolist is another path (404)', async () => {
    for (const svc of [createClient(url), createClient(url, { resources: [{ path: '/TodoList', kind: 'collection' }] })]) {
      const svcAny = svc as unknown as Record<string, { get(): Promise<unknown>; post(body: unknown): Promise<unknown> }>;
      const made = (await svcAny.TodoList?.post({ title: 'a' })) as { id: string };
      expect(made.id).toMatch(/^[0-9a-f]{16}$/);
      expect(await svc('TodoList').get(made.id)).toMatchObject({ title: 'a' });
      expect(await svc('/TodoList/').get(made.id)).toMatchObject({ title: 'a' });
      const err = (await svc('todolist')
        .get()
        .then(
          () => undefined,
          (e: unknown) => e,
        )) as SvcErrorBody;
      expect(err).toMatchObject({ status: 404, statusCode: 404 });
      svc.close();
    }
  });
});
