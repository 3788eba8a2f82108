import { MongoClient, ObjectId } from 'mongodb';
import type { Document } from 'mongodb';

/** The MongoDB wire-protocol server the tests read from (FerretDB in CI). */
export const MONGODB_URL = process.env.SVC_TEST_MONGODB_URL;

/** Prints why the tests are skipped, and fails instead in CI, where the server must be there. */
export function requireMongo(suite: string): boolean {
  if (MONGODB_URL) return true;
  if (process.env.CI === 'true') throw new Error(`${suite}: SVC_TEST_MONGODB_URL is not set (CI must provide a MongoDB wire-protocol server)`);
  console.warn(`SKIPPED ${suite}: set SVC_TEST_MONGODB_URL to a MongoDB wire-protocol server (FerretDB) to run it`);
  return false;
}

/** The shared, read-only source: PEOPLE documents with deterministic ids, seeded once. */
export const SOURCE_DB = 'svc_import_source_v1';
export const PEOPLE = 100_000;
/**
 * A smaller shared source of the same people (the first SMALL_PEOPLE), for the tests whose claims
 * do not depend on the size (types, mixed counts, config.json, re-runs, the --db store): FerretDB
 * reads, counts and writes ~2,500 small documents a second on a 2-core machine, so each pass
 * over PEOPLE costs 20-40 s. The size-bound claim (svc import's live heap) keeps PEOPLE.
 */
export const SMALL_SOURCE_DB = 'svc_import_source_10k_v1';
export const SMALL_PEOPLE = 10_000;

/** The ObjectId of person `i`. */
export function personId(i: number): ObjectId {
  return new ObjectId(i.toString(16).padStart(24, '0'));
}

/** Person `i`: every 100th has its age as a string (mixed types), every 7th a nickname. */
export function person(i: number): Document {
  return {
    _id: personId(i),
    name: `person ${i}`,
    age: i % 100 === 0 ? String(i % 90) : i % 90,
    active: i % 2 === 0,
    tags: [`t${i % 5}`],
    address: { city: `city ${i % 50}`, zip: String(10_000 + i) },
    createdAt: new Date(Date.UTC(2020, 0, 1) + i * 60_000),
    score: i % 10 === 0 ? null : i * 1.5,
    manager: i > 0 ? personId(i - 1) : null,
    ...(i % 7 === 0 ? { nickname: `p${i}` } : {}),
  };
}

/**
 * Seeds `database`.people with people 0 to `count` - 1 when it is not complete (SOURCE_DB and
 * PEOPLE by default). Deterministic ids make it safe for several test files at once: a duplicate
 * is refused, never doubled. A `seeded` document written last says it is complete (FerretDB counts
 * 100,000 documents in ~20 s; the marker is read at once).
 */
export async function seedPeople(url: string, database = SOURCE_DB, count = PEOPLE): Promise<void> {
  const client = await MongoClient.connect(url);
  try {
    const db = client.db(database);
    const people = db.collection('people');
    const marker = db.collection<{ _id: string; count: number }>('seeded');
    if ((await marker.findOne({ _id: 'people' }))?.count === count) return;
    const BATCH = 5_000;
    for (let start = 0; start < count; start += BATCH) {
      const docs = Array.from({ length: Math.min(BATCH, count - start) }, (_, k) => person(start + k));
      try {
        await people.insertMany(docs, { ordered: false });
      } catch (err) {
        if (!isOnlyDuplicates(err)) throw err;
      }
    }
    await marker.replaceOne({ _id: 'people' }, { count }, { upsert: true });
  } finally {
    await client.close();
  }
}

function isOnlyDuplicates(err: unknown): boolean {
  const writeErrors = (err as { writeErrors?: { code?: number }[] | { code?: number } }).writeErrors;
  const list = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : [];
  return (err as { code?: number }).code === 11000 || (list.length > 0 && list.every((e) => e.code === 11000));
}

/** A database of the test's own (for sources it changes), dropped by `drop()`. */
export async function ownDatabase(url: string, prefix: string): Promise<{ name: string; client: MongoClient; drop(): Promise<void> }> {
  const client = await MongoClient.connect(url);
  const name = `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  return {
    name,
    client,
    async drop() {
      await client.db(name).dropDatabase();
      await client.close();
    },
  };
}
