import type { Document } from 'mongodb';

/** BSON values that the MongoDB driver hands out as class instances. */
interface BsonValue {
  _bsontype: string;
  toHexString?(): string;
  toString(encoding?: string): string;
  toNumber?(): number;
  toJSON?(): unknown;
}

function isBson(value: object): value is BsonValue {
  return typeof (value as { _bsontype?: unknown })._bsontype === 'string';
}

/**
 * Turns one BSON value into plain JSON data, the only kind svc's stores and clients know:
 * ObjectId -> its hex string, Date -> ISO 8601 string, Long/Int32/Double/Decimal128 -> number,
 * Binary -> base64 (UUIDs -> their canonical string), Timestamp -> milliseconds,
 * RegExp -> its source text, other BSON types -> their JSON form.
 */
export function toPlain(value: unknown): unknown {
  if (value === null || value === undefined) return value ?? null;
  if (typeof value !== 'object') return typeof value === 'bigint' ? Number(value) : value;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Array.isArray(value)) return value.map(toPlain);
  if (value instanceof RegExp) return value.toString();
  if (isBson(value)) return bsonToPlain(value);
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[key] = toPlain(inner);
  return out;
}

function bsonToPlain(value: BsonValue): unknown {
  switch (value._bsontype) {
    case 'ObjectId':
    case 'ObjectID':
      return value.toHexString?.() ?? value.toString();
    case 'Long':
    case 'Int32':
    case 'Double':
      return value.toNumber?.() ?? Number(value.toString());
    case 'Decimal128':
      return Number(value.toString());
    case 'Binary': {
      const binary = value as BsonValue & { sub_type?: number; toUUID?(): { toString(): string } };
      if (binary.sub_type === 4 && binary.toUUID) return binary.toUUID().toString();
      return value.toString('base64');
    }
    case 'Timestamp': {
      const ts = value as BsonValue & { t?: number };
      return (ts.t ?? 0) * 1000;
    }
    case 'BSONRegExp': {
      const re = value as BsonValue & { pattern?: string; options?: string };
      return `/${re.pattern ?? ''}/${re.options ?? ''}`;
    }
    default:
      return value.toJSON ? toPlain(value.toJSON()) : value.toString();
  }
}

/** The string id svc uses for a source `_id`: ObjectIds become their hex string. */
export function idOf(raw: unknown): string {
  const plain = toPlain(raw);
  if (typeof plain === 'string') return plain;
  if (typeof plain === 'number' || typeof plain === 'boolean') return String(plain);
  return JSON.stringify(plain);
}

/** What converting one source document did besides the conversion itself. */
export interface ConvertNotes {
  /** Top-level names svc cannot store ('$x', 'a.b'), dropped. */
  dropped: string[];
  /** True when the document had its own `id`, kept as `originalId`. */
  renamedId: boolean;
}

/**
 * A source document as an svc object: `_id` becomes `id`, values become plain JSON, names that no
 * svc store accepts are dropped (and named in `notes`).
 */
export function toSvcDoc(raw: Document, notes: ConvertNotes): { id: string } & Record<string, unknown> {
  const doc: { id: string } & Record<string, unknown> = { id: idOf(raw._id) };
  for (const [key, value] of Object.entries(raw)) {
    if (key === '_id') continue;
    if (key.startsWith('$') || key.includes('.') || key === '') {
      notes.dropped.push(key);
      continue;
    }
    if (key === 'id') {
      notes.renamedId = true;
      doc.originalId = toPlain(value);
      continue;
    }
    doc[key] = toPlain(value);
  }
  return doc;
}
