import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { SvcError, isSvcError } from '../errors.js';
import type { FileSettings } from './fileSettings.js';
import type { ReceivedFile, ReceivedFiles } from './receiveFile.js';

/** A multipart/form-data body of a create or update: its fields and its files, by property. */
export interface ReceivedForm {
  /** The object's values: the `$json` field's object, or the other fields as strings. */
  body: Record<string, unknown>;
  kind: 'json' | 'form';
  files: Map<string, ReceivedFile[]>;
}

/** Fields are an object's values, not payloads: the same budget as a JSON body. */
const MAX_FIELDS = 200;

/**
 * Reads a create's or update's multipart/form-data body: every file part (its field is a file
 * property's name) received into `tempDir` under that property's limits (held by `received`
 * until published), every other field as a form value, or the `$json` field as the object's
 * JSON. Rejects with 413 past a limit (a file, the number of files or parts, the field budget),
 * 415 on a type not allowed, 400 on an unknown file property, a malformed body or one that broke
 * off; every file received is removed then.
 */
export function receiveForm(req: IncomingMessage, properties: ReadonlyMap<string, FileSettings>, received: ReceivedFiles, tempDir: string, fieldBytes: number): Promise<ReceivedForm> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const pending: Promise<ReceivedFile>[] = [];
    /** The property of each pending file, in the order the parts came. */
    const order: string[] = [];
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      req.unpipe();
      const error = isSvcError(err) ? err : new SvcError('BAD_REQUEST', 'the upload broke off before its end', { cause: err });
      // Waits for the files still being written, then removes every one: nothing is left behind.
      void Promise.allSettled(pending).then(async (outcomes) => {
        for (const o of outcomes) if (o.status === 'fulfilled') await received.discard(o.value.path);
        reject(error);
      });
    };
    let maxFiles = 0;
    let maxSize = 0;
    for (const s of properties.values()) {
      maxFiles += s.maxFiles;
      maxSize = Math.max(maxSize, s.maxSize);
    }
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        // Names of files as browsers send them (UTF-8), not busboy's default latin1.
        defParamCharset: 'utf8',
        limits: { fileSize: maxSize + 1, files: Math.min(maxFiles, 1000), fields: MAX_FIELDS, fieldSize: fieldBytes, parts: Math.min(maxFiles, 1000) + MAX_FIELDS, headerPairs: 16 },
      });
    } catch (err) {
      fail(new SvcError('BAD_REQUEST', `malformed multipart/form-data: ${(err as Error).message}`, { cause: err }));
      return;
    }
    const fields: Record<string, string> = Object.create(null) as Record<string, string>;
    const counts = new Map<string, number>();
    let fieldTotal = 0;
    parser.on('file', (field, stream, info) => {
      const settings = properties.get(field);
      if (settled) return void stream.resume();
      if (settings === undefined) {
        stream.resume();
        return fail(new SvcError('BAD_REQUEST', `${field} is not a file property`, { errors: { [field]: 'is not a file property' } }));
      }
      // An empty file input still sends a part, with no file name and no bytes.
      if (info.filename === undefined || info.filename === '') return void stream.resume();
      const count = (counts.get(field) ?? 0) + 1;
      counts.set(field, count);
      if (count > settings.maxFiles) {
        stream.resume();
        return fail(new SvcError('PAYLOAD_TOO_LARGE', `${field}: at most ${settings.maxFiles} file${settings.maxFiles === 1 ? '' : 's'}`, { errors: { [field]: `holds at most ${settings.maxFiles} files` } }));
      }
      const file = received.receive(stream, settings, tempDir, info.filename);
      file.catch((err: unknown) => fail(err));
      pending.push(file);
      order.push(field);
    });
    parser.on('field', (name, value, info) => {
      fieldTotal += value.length;
      if (info.valueTruncated || fieldTotal > fieldBytes) return fail(new SvcError('PAYLOAD_TOO_LARGE', `the form's fields are larger than ${fieldBytes} bytes`));
      if (name !== '__proto__') fields[name] = value;
    });
    parser.on('filesLimit', () => fail(new SvcError('PAYLOAD_TOO_LARGE', 'the form holds too many files')));
    parser.on('fieldsLimit', () => fail(new SvcError('PAYLOAD_TOO_LARGE', `the form holds more than ${MAX_FIELDS} fields`)));
    parser.on('partsLimit', () => fail(new SvcError('PAYLOAD_TOO_LARGE', 'the form holds too many parts')));
    parser.on('error', (err: Error) => fail(new SvcError('BAD_REQUEST', `malformed multipart/form-data: ${err.message}`, { cause: err })));
    parser.on('close', () => {
      void Promise.allSettled(pending).then(() => {
        if (settled) return;
        if (!req.complete) return fail(undefined);
        Promise.all(pending).then((all) => {
          if (settled) return;
          try {
            const form = formBody(fields);
            settled = true;
            const files = new Map<string, ReceivedFile[]>();
            for (const [index, file] of all.entries()) {
              const property = order[index] as string;
              files.set(property, [...(files.get(property) ?? []), file]);
            }
            resolve({ ...form, files });
          } catch (err) {
            fail(err);
          }
        }, fail);
      });
    });
    // The whole body is bounded too: a preamble or an epilogue of any length is not read for ever.
    const budget = maxFiles * maxSize + fieldBytes + 64 * 1024;
    let seen = 0;
    // Nothing comes before the first part but a short preamble (usually none).
    let started = false;
    parser.on('file', () => (started = true));
    parser.on('field', () => (started = true));
    req.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > budget) fail(new SvcError('PAYLOAD_TOO_LARGE', `the form is larger than ${budget} bytes`));
      else if (!started && seen > fieldBytes + 64 * 1024) fail(new SvcError('PAYLOAD_TOO_LARGE', 'the form holds no part in its first bytes'));
    });
    req.on('error', (err) => fail(err));
    req.on('close', () => {
      if (!req.complete) fail(undefined);
    });
    req.pipe(parser);
  });
}

/** A form's values: `$json` alone (the object as JSON, types kept), or every field as a form value. */
function formBody(fields: Record<string, string>): { body: Record<string, unknown>; kind: 'json' | 'form' } {
  const json = fields.$json;
  if (json === undefined) return { body: { ...fields }, kind: 'form' };
  if (Object.keys(fields).length > 1) throw new SvcError('BAD_REQUEST', 'a form with a $json field holds no other field but files');
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw new SvcError('INVALID_JSON', 'the $json field is not valid JSON', { cause: err });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new SvcError('BAD_REQUEST', 'the $json field must hold a JSON object');
  return { body: value as Record<string, unknown>, kind: 'json' };
}
