import { Transform } from 'node:stream';
import type { Readable } from 'node:stream';
import { escapeLineBreaks } from '../../lineBreaks.js';

/** The part of nedb's Persistence this module changes (documented in nedb's source, not typed). */
interface Persistence {
  treatRawStreamAsync(stream: Readable): Promise<unknown>;
}

/**
 * Makes a nedb datastore load data files written with NEL, U+2028 and U+2029 raw (by svc before
 * issue 38 was fixed): nedb's line reader splits lines on them, so the file is read through a
 * stream that escapes them first, and each object is one line again and loads whole. Valid JSON
 * lines read the same; a line that was corrupt stays corrupt (the load still refuses it).
 */
export function readLineBreaksAsText(db: object): void {
  const persistence = Reflect.get(db, 'persistence') as Persistence | undefined;
  if (!persistence || typeof persistence.treatRawStreamAsync !== 'function') throw new Error('nedb without the expected persistence layer');
  const treat = persistence.treatRawStreamAsync.bind(persistence);
  persistence.treatRawStreamAsync = (raw: Readable): Promise<unknown> =>
    new Promise((resolve, reject) => {
      // The file stream decodes UTF-8 (nedb opens it with encoding 'utf8'), so a chunk never ends
      // inside a character, and the escaped text goes on as strings with the same encoding.
      const escaping = new Transform({
        decodeStrings: false,
        encoding: 'utf8',
        transform(chunk: string | Buffer, _encoding, done) {
          done(null, escapeLineBreaks(typeof chunk === 'string' ? chunk : chunk.toString('utf8')));
        },
      });
      // nedb listens for errors on its line reader only: a read error of the file itself
      // (EIO) would otherwise leave the load waiting forever.
      raw.once('error', (err) => {
        escaping.destroy();
        reject(err);
      });
      treat(raw.pipe(escaping)).then(resolve, reject);
    });
}
