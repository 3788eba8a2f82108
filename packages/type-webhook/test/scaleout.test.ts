import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { WebhookPayload } from '@svc/type-webhook';
import { startReceiver } from './helpers/receiver.js';
import type { Receiver } from './helpers/receiver.js';
import { eventually, startWebhookApp } from './helpers/webhookApp.js';
import type { WebhookApp } from './helpers/webhookApp.js';

// Two servers on one MongoDB (FerretDB) serve the same app: both take writes, one lease decides
// which delivers, and the other takes over when the first stops.
const mongo = process.env.SVC_TEST_MONGODB_URL;
if (!mongo) console.log('scaleout.test: skipped (SVC_TEST_MONGODB_URL is unset)');

describe.skipIf(!mongo)('Webhook with two servers on one MongoDB', () => {
  const apps: WebhookApp[] = [];
  let receiver: Receiver | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close().catch(() => undefined);
    await receiver?.close();
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  test('each event is delivered once by the lease holder; the other process takes over when it stops', async () => {
    receiver = await startReceiver();
    const db = (mongo as string).replace(/\/[^/?]*(\?|$)/, `/svc_webhook_scale_${Date.now()}$1`);
    const timings = { leaseTtlMs: 1500, leasePollMs: 200, pollMs: 100 };
    const first = await startWebhookApp(receiver.url, [`127.0.0.1:${receiver.port}`], { db, timings });
    apps.push(first);
    // The second process serves a copy of the same app folder on the same database.
    const copy = await mkdtemp(join(tmpdir(), 'svc-webhook-second-'));
    dirs.push(copy);
    await cp(first.dir, copy, { recursive: true });
    const second = await startWebhookApp(receiver.url, [], { dir: copy, db, timings });
    apps.push(second);
    const writes = 40;
    const ids: string[] = [];
    for (let i = 0; i < writes; i++) {
      const app = i % 2 === 0 ? first : second;
      ids.push(((await app.call('POST', '/todos', { title: `w${i}` })).body as { id: string }).id);
    }
    await receiver.waitFor(writes);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const objects = receiver.received.map((r) => (JSON.parse(r.body) as WebhookPayload).object.id);
    expect(new Set(objects)).toEqual(new Set(ids));
    // Normally delivered once: one process held the lease.
    expect(receiver.received.map((r) => r.headers['svc-webhook-id']).length).toBe(new Set(receiver.received.map((r) => r.headers['svc-webhook-id'])).size);
    const views = await Promise.all([first.deliveries(), second.deliveries()]);
    expect(views.map((v) => v.delivering?.here).sort()).toEqual([false, true]);
    expect(views[0]?.counts.delivered).toBe(writes);
    // The holder stops; the other one delivers what is written from now on.
    const holder = views[0]?.delivering?.here ? first : second;
    const other = holder === first ? second : first;
    apps.splice(apps.indexOf(holder), 1);
    await holder.close({ keepDir: true });
    const late = ((await other.call('POST', '/todos', { title: 'after the holder stopped' })).body as { id: string }).id;
    await receiver.waitFor(1, (r) => (JSON.parse(r.body) as WebhookPayload).object.id === late, 15_000);
    await eventually(async () => (await other.deliveries()).delivering?.here === true, 10_000, 'the other process delivers');
  });
});
