import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadOutcome, runApp, writeApp } from './helpers/app.js';
import { runSvc } from './cli.js';

// Issue 15 (8): app.json and config.json are checked at start, naming the file and the key.

const loadError = loadOutcome;

describe('app.json and config.json validation', () => {
  it('a valid app.json with every key loads', async () => {
    const full = {
      publicCount: ['todos'],
      bodyLimit: 2_000_000,
      sessionIdleSeconds: 3600,
      cors: { origins: ['https://app.example.com', 'http://localhost:5173'], crossSiteCookies: true },
      methodOverrideKey: '_m',
      scripts: { memoryLimitMb: 64, timeoutMs: 500, isolates: 2 },
      databaseTimeoutMs: 3000,
      passwordCost: 10,
      loginRateLimit: { max: 5, windowSeconds: 60, maxPerAddress: 50, slowdownMs: 0 },
      realtime: { maxSocketsPerAddress: 20, maxSockets: 0 },
      embeddedStore: { fsync: true, engine: 'files', cacheMb: 128, mmapMb: 256 },
      backups: { intervalMinutes: 60, keep: 24 },
      redisPrefix: 'shop-eu.1',
    };
    expect(await loadError({ 'app.json': full })).toBe('loaded');
    expect(await loadError({ 'app.json': '' })).toBe('loaded');
  });

  it('wrong types, ranges and misspelt keys name the file and the key', async () => {
    expect(await loadError({ 'app.json': { bodyLimit: 'big' } })).toBe('<app>/app.json: "bodyLimit" must be a whole number >= 1, not "big"');
    expect(await loadError({ 'app.json': { scripts: { timeoutMs: 'fast' } } })).toBe('<app>/app.json: "scripts.timeoutMs" must be a whole number from 1 to 600000, not "fast"');
    expect(await loadError({ 'app.json': { bodylimit: 10 } })).toMatch(/^<app>\/app\.json: unknown key "bodylimit" \(did you mean "bodyLimit"\?\)/);
    expect(await loadError({ 'app.json': { scripts: { timeout: 5 } } })).toMatch(/unknown key "scripts.timeout" \(did you mean "scripts.timeoutMs"\?\)/);
    expect(await loadError({ 'app.json': { cors: { origins: ['https://a.example.com/path'] } } })).toMatch(/"cors.origins" must be "\*" or an array of origins/);
    expect(await loadError({ 'app.json': { passwordCost: 99 } })).toMatch(/"passwordCost" must be a whole number from 4 to 31, not 99/);
    expect(await loadError({ 'app.json': { realtime: { maxSocketsPerAddress: -1 } } })).toMatch(/"realtime.maxSocketsPerAddress" must be a whole number >= 0, not -1/);
    expect(await loadError({ 'app.json': { embeddedStore: { fsync: 'always' } } })).toMatch(/"embeddedStore.fsync" must be true or false, not "always"/);
    expect(await loadError({ 'app.json': { embeddedStore: { cacheMb: 0 } } })).toMatch(/"embeddedStore.cacheMb" must be a whole number from 1 to 65536, not 0/);
    expect(await loadError({ 'app.json': { embeddedStore: { mmapMb: 4096 } } })).toMatch(/"embeddedStore.mmapMb" must be a whole number from 0 to 2047, not 4096/);
    expect(await loadError({ 'app.json': { embeddedStore: { engine: 'sqlite3' } } })).toMatch(/"embeddedStore.engine" must be one of "files", "sqlite", not "sqlite3"/);
    expect(await loadError({ 'app.json': { backups: { intervalMinutes: 0 } } })).toMatch(/"backups.intervalMinutes" must be a whole number from 1 to 525600, not 0/);
    expect(await loadError({ 'app.json': [] })).toBe('<app>/app.json: must be a JSON object of settings');
    // A ':' or '#' could make one app's prefix the start of another's keys or channels.
    for (const bad of ['', 'a:b', 'shop#1', 'x'.repeat(65), 7]) expect(await loadError({ 'app.json': { redisPrefix: bad } })).toMatch(/"redisPrefix" must be 1 to 64 letters, digits/);
    expect(await loadError({ 'app.json': '{"bodyLimit": ' })).toMatch(/^<app>\/app\.json: invalid JSON/);
  });

  it('a config.json that is not an object or has no type says what it should be', async () => {
    expect(await loadError({ 'resources/x/config.json': [] })).toBe('<app>/resources/x/config.json: must be a JSON object with a "type", such as {"type": "Collection"}');
    expect(await loadError({ 'resources/x/config.json': { properties: {} } })).toMatch(/resources\/x\/config\.json: "type" is missing/);
  });

  it('the command line prints it in one line and exits 1', async () => {
    const dir = await writeApp({ 'resources/todos/config.json': { type: 'Collection' }, 'app.json': { bodyLimit: 'big' } });
    const res = await runSvc([dir, '--port', '0']);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`svc: ${join(dir, 'app.json')}: "bodyLimit" must be a whole number >= 1, not "big"\n`);
    await rm(dir, { recursive: true, force: true });
  });
});

describe('app.json realtime caps', () => {
  it('realtime.maxSocketsPerAddress refuses the handshake past it (403, saying why), and a closed socket frees its slot', async () => {
    const t = await runApp({ 'resources/todos/config.json': { type: 'Collection', properties: {} }, 'app.json': { realtime: { maxSocketsPerAddress: 2 } } });
    try {
      const handshake = () => fetch(`${t.url}/socket.io/?EIO=4&transport=polling`);
      // A polling handshake opens a socket that stays until closed (or its ping times out).
      const sids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const res = await handshake();
        expect(res.status).toBe(200);
        sids.push((JSON.parse((await res.text()).slice(1)) as { sid: string }).sid);
      }
      const refused = await handshake();
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ message: expect.stringMatching(/too many realtime connections from this address \(limit 2\)/) as unknown });
      // Engine.IO's close packet ('1') over polling.
      const closed = await fetch(`${t.url}/socket.io/?EIO=4&transport=polling&sid=${sids[0]!}`, { method: 'POST', body: '1', headers: { 'content-type': 'text/plain' } });
      expect(closed.status).toBe(200);
      await closed.text();
      const again = await handshake();
      expect(again.status).toBe(200);
      await again.text();
    } finally {
      await t.close();
    }
  });
});
