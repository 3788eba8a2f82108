import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { SvcError } from '@svc/core';
import type { UploadFolder } from './uploadFolder.js';

/** One file of a multipart/form-data body, received into the upload folder's incoming folder. */
export interface ReceivedFile {
  /** The file name the client sent, without any folder part ('C:\\fakepath\\a.png' -> 'a.png'). */
  fileName: string;
  /** Where it was received. */
  path: string;
  size: number;
}

/** What a form holds: its files (received to disk) and its other fields. */
export interface ReceivedForm {
  files: ReceivedFile[];
  fields: Record<string, string>;
}

/** Limits of one form. */
export interface FormLimits {
  maxFileSize: number;
  maxFiles: number;
}

/** Fields are names and short values (a subdir, a title), not payloads. */
const MAX_FIELDS = 100;
const MAX_FIELD_BYTES = 64 * 1024;

/**
 * Reads a multipart/form-data request: every file into `folder`'s incoming folder, every other
 * field as a string. `incoming` collects each file path as soon as it is opened, so that the caller
 * can remove them all whatever happens. Rejects with 413 when a file or the form exceeds `limits`,
 * and with 400 on a malformed body or one that broke off before its end.
 */
export function receiveForm(req: IncomingMessage, folder: UploadFolder, limits: FormLimits, incoming: string[]): Promise<ReceivedForm> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const abort = new AbortController();
    const files: Promise<ReceivedFile | undefined>[] = [];
    const fail = (err: SvcError): void => {
      if (settled) return;
      settled = true;
      req.unpipe();
      // Files still arriving stop here; the rejection waits for their writes to end, so that the
      // caller's clean-up finds every file there will ever be.
      abort.abort();
      void Promise.allSettled(files).then(() => reject(err));
    };
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        // One more than allowed, so that busboy reports going over instead of silently dropping.
        limits: { fileSize: limits.maxFileSize, files: limits.maxFiles, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: limits.maxFiles + MAX_FIELDS },
      });
    } catch (err) {
      fail(new SvcError('BAD_REQUEST', `malformed multipart/form-data: ${(err as Error).message}`, { cause: err }));
      return;
    }
    const fields: Record<string, string> = Object.create(null) as Record<string, string>;
    parser.on('file', (_field, stream, info) => {
      const fileName = (info.filename ?? '').split(/[\\/]/).pop() ?? '';
      let tooLarge = false;
      stream.on('limit', () => {
        tooLarge = true;
        fail(new SvcError('PAYLOAD_TOO_LARGE', `a file is larger than ${limits.maxFileSize} bytes`));
      });
      // An empty file input still sends a part, with no file name.
      if (fileName === '' || settled) {
        stream.resume();
        return;
      }
      const received = folder.receive(stream, (path) => incoming.push(path), abort.signal).then(({ path, size }) => (tooLarge ? undefined : { fileName, path, size }));
      // A write that fails (a full disk) ends the form at once: busboy would wait for the file
      // stream it can no longer write to.
      received.catch((err: unknown) => fail(writeFailure(err)));
      files.push(received);
    });
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(new SvcError('PAYLOAD_TOO_LARGE', `form field ${name} is longer than ${MAX_FIELD_BYTES} bytes`));
      fields[name] = value;
    });
    parser.on('filesLimit', () => fail(new SvcError('PAYLOAD_TOO_LARGE', `the form holds more than ${limits.maxFiles} files`)));
    parser.on('fieldsLimit', () => fail(new SvcError('PAYLOAD_TOO_LARGE', `the form holds more than ${MAX_FIELDS} fields`)));
    parser.on('partsLimit', () => fail(new SvcError('PAYLOAD_TOO_LARGE', 'the form holds too many parts')));
    parser.on('error', (err: Error) => fail(new SvcError('BAD_REQUEST', `malformed multipart/form-data: ${err.message}`, { cause: err })));
    parser.on('close', () => {
      Promise.all(files).then(
        (all) => {
          if (settled) return;
          if (!req.complete) return fail(brokeOff());
          settled = true;
          resolve({ files: all.filter((f): f is ReceivedFile => f !== undefined), fields: { ...fields } });
        },
        (err: unknown) => fail(writeFailure(err)),
      );
    });
    req.on('error', (err) => fail(brokeOff(err)));
    req.on('close', () => {
      if (!req.complete) fail(brokeOff());
    });
    req.pipe(parser);
  });
}

function brokeOff(cause?: unknown): SvcError {
  return new SvcError('BAD_REQUEST', 'the upload broke off before its end', { cause });
}

/** A full disk is the server's trouble, told as such (507); anything else failing a write is a 500. */
function writeFailure(err: unknown): SvcError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return new SvcError('STORAGE_FULL', 'no space left to store the upload', { cause: err });
  if (err instanceof SvcError) return err;
  return new SvcError('INTERNAL', 'the upload could not be written', { cause: err });
}
