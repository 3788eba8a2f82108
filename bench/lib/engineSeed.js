// The todos of the engine's scale benches (engine-scale.js, engine-pocketbase.js): an app folder
// and its data seeded through the embedded engine's store directly (needs `pnpm build`).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const log = (line) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

export const VOCABULARY = 2000;
const words = Array.from({ length: VOCABULARY }, (_, k) => `w${k.toString(36)}${'abcdefghij'[k % 10]}`);
/** A word of the vocabulary, skewed (k = V * r^2: word k is drawn about as often as 1/sqrt(k)). */
export const word = () => words[Math.floor(VOCABULARY * Math.random() ** 2)];
export const title = () => Array.from({ length: 5 }, word).join(' ');
export const q = (query) => encodeURIComponent(JSON.stringify(query));

export function config() {
  return JSON.stringify({ type: 'Collection', properties: { title: { type: 'string', search: true }, done: { type: 'boolean' }, n: { type: 'number', index: true } } });
}

export function appFolder(root, name, engine) {
  const dir = join(root, name);
  mkdirSync(join(dir, 'resources/todos'), { recursive: true });
  writeFileSync(join(dir, 'resources/todos/config.json'), config());
  writeFileSync(join(dir, 'app.json'), JSON.stringify({ embeddedStore: { engine }, publicCount: true, log: { access: false } }));
  return dir;
}

/** Seeds the engine's data folder through the store; answers some ids (for the GET by id requests). */
export async function seedEngine(dir, count) {
  const { createEngineStore } = await import(join(repo, 'packages/core/dist/index.js'));
  const store = await createEngineStore({ dir: join(dir, 'data'), warn: () => {} });
  const todos = store.collection('todos');
  const sample = [];
  const batch = 10_000;
  const started = performance.now();
  for (let from = 0; from < count; from += batch) {
    const hex = randomBytes(8 * batch).toString('hex');
    const docs = [];
    for (let i = from; i < Math.min(count, from + batch); i++) {
      const id = hex.slice((i - from) * 16, (i - from) * 16 + 16);
      docs.push({ id, title: title(), done: i % 2 === 0, n: (i * 7919) % count });
      if (sample.length < 100_000 && Math.random() < 100_000 / count) sample.push(id);
    }
    await todos.insertMany(docs);
    if (from % 1_000_000 === 0 && from > 0) log(`   seeded ${from.toLocaleString('en-US')} (${Math.round((performance.now() - started) / 1000)} s)`);
  }
  // The index of `n` made once the objects are in (SQLite sorts them once), not kept up insert by
  // insert: `n` is a permutation of the insertion order, so each insert touched a random page of it
  // (past 2,000,000 todos that was ~140 s per million, bench/RESULTS.md round 6). The search table
  // likewise, from the stored objects in one statement (cheaper than a trigger per insert).
  await todos.ensureIndex({ field: 'n' });
  await todos.ensureSearch(['title']);
  await store.close();
  return { sample, seconds: (performance.now() - started) / 1000 };
}

