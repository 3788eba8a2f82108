import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, test } from 'vitest';
import type { WebhookPayload } from '@svc/type-webhook';
import { startReceiver } from './helpers/receiver.js';
import type { Receiver } from './helpers/receiver.js';
import { eventually, startWebhookApp } from './helpers/webhookApp.js';
import type { WebhookApp } from './helpers/webhookApp.js';

// Deliveries give way to writes that saturate the process, for at most `maxDeferMs` (issue 43,
// round 8). The process is saturated for real: the test's own event loop (the app, its deliverer
// and the receiver all run in it) burns the CPU 50 ms at a time between short turns, while writers
// keep POSTing. Nothing here asserts a duration: only the order of events the deliverer decides
// (a delivery never reaches the receiver before its record has waited the bound while the loop is
// saturated; deliveries do reach it while the load lasts; every write is delivered once).

const payloadOf = (r: { body: string }): WebhookPayload => JSON.parse(r.body) as WebhookPayload;
/** How long a delivery gives way here, ms: a fraction of the saturated phase. */
const DEFER_MS = 1500;

/** Burns the event loop ~50 ms at a time (a turn for I/O between) until stopped. */
function saturate(): () => void {
  let on = true;
  const burn = (): void => {
    if (!on) return;
    const end = performance.now() + 50;
    while (performance.now() < end) {
      // busy: the loop is saturated, and its utilisation says so however slow the machine is
    }
    setTimeout(burn, 0);
  };
  burn();
  return () => {
    on = false;
  };
}

/** `writers` loops each POSTing todos until `until()`; answers how many were written. */
async function write(app: WebhookApp, writers: number, until: () => boolean): Promise<number> {
  let count = 0;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      while (!until()) {
        expect((await app.call('POST', '/todos', { title: `w${w}-${count}` })).status).toBe(200);
        count++;
      }
    }),
  );
  return count;
}

describe('Webhook deliveries give way to saturating writes, for at most maxDeferMs (embedded store)', () => {
  let receiver: Receiver;
  let app: WebhookApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await receiver.close();
  });

  test('while writes saturate the process no delivery starts before waiting the bound; past it they go; nothing lost', async () => {
    receiver = await startReceiver();
    app = await startWebhookApp(receiver.url, [`127.0.0.1:${receiver.port}`], { hook: { maxDeferMs: DEFER_MS, concurrency: 4 } });
    const stop = saturate();
    let phaseEnd = Infinity;
    let saturatedFrom = Infinity;
    let written = 0;
    try {
      // Writes under saturation: the deliverer's samples (200 ms) see the loop busy with writes
      // coming and hold deliveries back. The first 600 ms are its warm-up (a sample or two may
      // deliver at one slot before it sees them); the records written after it are the ones judged.
      const t0 = Date.now();
      const writing = write(app, 16, () => Date.now() >= t0 + 4 * DEFER_MS);
      await new Promise((resolve) => setTimeout(resolve, 600));
      saturatedFrom = Date.now();
      written = await writing;
      phaseEnd = Date.now();
    } finally {
      stop();
    }
    // The load is over: what is left goes out at once; every write delivered, once.
    await receiver.waitFor(written, undefined, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ids = receiver.received.map((r) => payloadOf(r).id);
    expect(new Set(ids).size).toBe(written);
    expect(ids.length).toBe(written);
    await eventually(async () => (await app?.deliveries())?.counts.delivered === written, 20_000, 'all delivered');

    // Of the records written under saturation, those the receiver got while the load lasted:
    const during = receiver.received.filter((r) => Date.parse(payloadOf(r).at) >= saturatedFrom && r.at < phaseEnd);
    // the bound: the load did not starve them (the phase lasts 4x the bound) ...
    expect(during.length).toBeGreaterThan(0);
    // ... and the pace: each had waited the bound first (writes first while they saturate the loop).
    const waits = during.map((r) => r.at - Date.parse(payloadOf(r).at));
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(DEFER_MS);
  }, 120_000);

  test('maxDeferMs must be a whole number of ms from 0 to 600000 (the start says which setting)', async () => {
    receiver = await startReceiver();
    for (const bad of [-1, 1.5, 600_001, '10s']) {
      await expect(startWebhookApp(receiver.url, [`127.0.0.1:${receiver.port}`], { hook: { maxDeferMs: bad } })).rejects.toThrow(/resource hooks: setting maxDeferMs/);
    }
  });
});
