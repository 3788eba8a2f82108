import { createClient } from 'redis';

/** Removes what a test left in the shared test Redis under each `prefix:` (change logs, holds, locks). */
export async function clearRedisKeys(url: string, ...prefixes: string[]): Promise<void> {
  const redis = createClient({ url });
  await redis.connect();
  try {
    for (const prefix of prefixes) for await (const keys of redis.scanIterator({ MATCH: `${prefix}:*` })) if (keys.length > 0) await redis.del(keys);
  } finally {
    await redis.close();
  }
}
