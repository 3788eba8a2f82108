import { Transform } from 'node:stream';
import type { Readable } from 'node:stream';

/**
 * The characters JSON leaves unescaped in strings that a line reader may still take for a line
 * end: NEL (U+0085), LINE SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029). nedb's loader
 * (its fork of byline, after Unicode TR18) splits lines on them, so one stored `"a\u2028b"`
 * cut its object in two and the collection no longer loaded. JSON.stringify already escapes
 * every other character such a reader splits on (\n, \r, \v, \f and the C0 controls).
 */
const LINE_BREAKS = /[\u0085\u2028\u2029]/g;
const HAS_LINE_BREAK = new RegExp(LINE_BREAKS.source);

const escaped = (c: string): string => (c === '\u0085' ? '\\u0085' : c === '\u2028' ? '\\u2028' : '\\u2029');

/**
 * A JSON text with NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR written as `\u` escapes: the same
 * value for any JSON parser, and one line for any line reader. Outside strings JSON cannot hold
 * them, so escaping them anywhere in a JSON text only touches strings. A text without them (almost
 * every one) is answered as it is, after one test.
 */
export function escapeLineBreaks(json: string): string {
  return HAS_LINE_BREAK.test(json) ? json.replace(LINE_BREAKS, escaped) : json;
}

/** The part of nedb's Persistence this module changes (documented in nedb's source, not typed). */
interface Persistence {
  treatRawStreamAsync(stream: Readable): Promise<unknown>;
}

/**
 * Makes a nedb datastore load data files written with these characters raw (by svc before this
 * was fixed, issue 38): the file is read through a stream that escapes them before nedb's line
 * reader sees it, so each object is one line again and loads whole. Valid JSON lines read the
 * same; a line that was corrupt stays corrupt (the load still refuses it).
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
