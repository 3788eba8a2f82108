import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BSONRegExp, Binary, Decimal128, Double, Int32, Long, ObjectId, Timestamp, UUID } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { TypeTally, typeOfValue } from '../src/internal/TypeTally.js';
import { idOf, toPlain, toSvcDoc } from '../src/internal/toPlain.js';
import type { ConvertNotes } from '../src/internal/toPlain.js';
import { resourceNameFor, writeCollectionConfig } from '../src/internal/writeCollectionConfig.js';

describe('toPlain: BSON values become JSON data', () => {
  const oid = new ObjectId('65a1b2c3d4e5f60718293a4b');
  it.each([
    { name: 'ObjectId', value: oid, plain: '65a1b2c3d4e5f60718293a4b' },
    { name: 'Date', value: new Date(Date.UTC(2024, 1, 29, 12, 30)), plain: '2024-02-29T12:30:00.000Z' },
    { name: 'invalid Date', value: new Date(Number.NaN), plain: null },
    { name: 'Long', value: Long.fromNumber(9_007_199_254), plain: 9_007_199_254 },
    { name: 'Int32', value: new Int32(7), plain: 7 },
    { name: 'Double', value: new Double(1.5), plain: 1.5 },
    { name: 'Decimal128', value: Decimal128.fromString('12.75'), plain: 12.75 },
    { name: 'Binary', value: new Binary(Buffer.from('hi')), plain: 'aGk=' },
    { name: 'UUID', value: new UUID('0e4b8f6e-6c1a-4c49-9d6e-3f3a7f3d2b11'), plain: '0e4b8f6e-6c1a-4c49-9d6e-3f3a7f3d2b11' },
    { name: 'Timestamp', value: new Timestamp({ t: 1_700_000_000, i: 1 }), plain: 1_700_000_000_000 },
    { name: 'BSONRegExp', value: new BSONRegExp('^a', 'i'), plain: '/^a/i' },
    { name: 'RegExp', value: /^b/m, plain: '/^b/m' },
    { name: 'nested', value: { ref: oid, list: [oid, { at: new Date(0) }] }, plain: { ref: '65a1b2c3d4e5f60718293a4b', list: ['65a1b2c3d4e5f60718293a4b', { at: '1970-01-01T00:00:00.000Z' }] } },
    { name: 'undefined', value: undefined, plain: null },
  ])('$name', ({ value, plain }) => {
    expect(toPlain(value)).toEqual(plain);
  });

  it('idOf: ObjectId hex, strings as they are, numbers as text', () => {
    expect(idOf(oid)).toBe('65a1b2c3d4e5f60718293a4b');
    expect(idOf('custom-id')).toBe('custom-id');
    expect(idOf(42)).toBe('42');
    expect(idOf({ a: 1 })).toBe('{"a":1}');
  });

  it('toSvcDoc: _id becomes id, an own id is kept as originalId, names no store accepts are dropped', () => {
    const notes: ConvertNotes = { dropped: [], renamedId: false };
    const doc = toSvcDoc({ _id: oid, id: 17, name: 'x', 'a.b': 1, $weird: 2, when: new Date(0) }, notes);
    expect(doc).toEqual({ id: '65a1b2c3d4e5f60718293a4b', originalId: 17, name: 'x', when: '1970-01-01T00:00:00.000Z' });
    expect(notes).toEqual({ dropped: ['a.b', '$weird'], renamedId: true });
  });
});

describe('TypeTally: each property typed by its most common type', () => {
  it('types properties, ignores nulls, reports mixed ones with their counts', () => {
    const tally = new TypeTally();
    tally.add({ id: '1', a: 'x', b: 1, c: null, d: [1], e: { k: 1 }, f: true });
    tally.add({ id: '2', a: 'y', b: '2', c: null });
    tally.add({ id: '3', a: 3, b: 3 });
    expect(tally.result()).toEqual({
      properties: { a: { type: 'string' }, b: { type: 'number' }, c: { type: 'string' }, d: { type: 'array' }, e: { type: 'object' }, f: { type: 'boolean' } },
      mixed: { a: { chosen: 'string', counts: { string: 2, number: 1 } }, b: { chosen: 'number', counts: { number: 2, string: 1 } } },
    });
  });

  it('breaks ties in the order string, number, boolean, object, array', () => {
    const tally = new TypeTally();
    tally.add({ id: '1', v: true });
    tally.add({ id: '2', v: 5 });
    expect(tally.result().properties.v).toEqual({ type: 'number' });
    expect(typeOfValue(null)).toBeUndefined();
  });
});

describe('config.json of imported collections', () => {
  it('resource names: path-safe, never empty', () => {
    expect(resourceNameFor('orders.2024')).toBe('orders-2024');
    expect(resourceNameFor('_private stuff!')).toBe('private-stuff');
    expect(resourceNameFor('...')).toBe('imported');
  });

  it('creates a Collection config, keeps existing definitions, refuses another type', async () => {
    const app = await mkdtemp(join(tmpdir(), 'svc-importer-config-'));
    try {
      const file = join(app, 'resources', 'people', 'config.json');
      expect(await writeCollectionConfig(app, 'people', { name: { type: 'string' }, age: { type: 'number' } })).toBe('created');
      expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ type: 'Collection', properties: { name: { type: 'string' }, age: { type: 'number' } } });
      expect(await writeCollectionConfig(app, 'people', { name: { type: 'string' }, age: { type: 'number' } })).toBe('unchanged');
      await writeFile(file, JSON.stringify({ type: 'UserCollection', properties: { age: { type: 'string', required: true } } }));
      expect(await writeCollectionConfig(app, 'people', { name: { type: 'string' }, age: { type: 'number' } })).toBe('updated');
      expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ type: 'UserCollection', properties: { age: { type: 'string', required: true }, name: { type: 'string' } } });
      await mkdir(join(app, 'resources', 'mail'), { recursive: true });
      await writeFile(join(app, 'resources', 'mail', 'config.json'), JSON.stringify({ type: 'Email' }));
      await expect(writeCollectionConfig(app, 'mail', {})).rejects.toThrow('resources/mail has type Email, not Collection');
    } finally {
      await rm(app, { recursive: true, force: true });
    }
  });
});
