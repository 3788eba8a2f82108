import type * as Mongo from 'mongodb';

/**
 * The MongoDB driver, loaded by the first createMongoStore, not when @svc/core is imported: an app
 * on the embedded store never loads it (bench/engine-start.js: the driver was about a tenth of a
 * start's CPU, most of it compiling modules).
 */
let loaded: typeof Mongo | undefined;

/** Loads the driver (once). */
export async function loadMongo(): Promise<typeof Mongo> {
  loaded ??= await import('mongodb');
  return loaded;
}

/** The driver, once loadMongo() resolved (every store call runs after it). */
export function mongo(): typeof Mongo {
  if (loaded === undefined) throw new Error('the MongoDB driver is not loaded (createMongoStore loads it)');
  return loaded;
}

/** Whether `err` is the driver's MongoServerError (false when the driver was never loaded: no error of it exists). */
export function isMongoServerError(err: unknown): err is Mongo.MongoServerError {
  return loaded !== undefined && err instanceof loaded.MongoServerError;
}
