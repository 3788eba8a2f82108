import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { SvcError } from '@svc/core';
import type { SpoolDir } from './spool.js';

/** One file of a multipart/form-data body, spooled to disk. */
export interface FormFile {
  /** The form field it came in. */
  field: string;
  /** The file name the browser sent, without any folder part. */
  fileName: string;
  contentType: string;
  /** Where it was spooled. */
  path: string;
  size: number;
}

/**
 * Reads every file of a multipart/form-data request into `spool`; other fields are ignored.
 * Rejects with a 400 on a malformed body.
 */
export function receiveForm(req: IncomingMessage, spool: SpoolDir): Promise<FormFile[]> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers });
    } catch (err) {
      reject(new SvcError('BAD_REQUEST', `malformed multipart/form-data: ${(err as Error).message}`, { cause: err }));
      return;
    }
    const pending: Promise<FormFile>[] = [];
    parser.on('file', (field, stream, info) => {
      const fileName = baseName(info.filename ?? '');
      // An empty file input still sends a part, with no file name.
      if (fileName === '') {
        stream.resume();
        return;
      }
      const written = spool.write(stream).then(({ path, size }) => ({ field, fileName, contentType: info.mimeType, path, size }));
      // Observed by Promise.all on 'close' only: a write failing before that (a full disk), or a
      // form failing first, must not be an unhandled rejection, which would end the process.
      written.catch(() => {});
      pending.push(written);
    });
    parser.on('error', (err: Error) => reject(new SvcError('BAD_REQUEST', `malformed multipart/form-data: ${err.message}`, { cause: err })));
    parser.on('close', () => {
      Promise.all(pending).then(resolve, reject);
    });
    req.on('error', reject);
    req.pipe(parser);
  });
}

/** Browsers may send 'C:\\fakepath\\a.png' or 'dir/a.png': keep the last segment. */
function baseName(name: string): string {
  return name.split(/[\\/]/).pop()?.trim() ?? '';
}
