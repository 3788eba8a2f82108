import { describe, expect, it } from 'vitest';
import { conversionNote, convertValue } from '../../src/migrations/convertValue.js';
import { advanceShape, diffShapes, newMigrationId, shapeOf } from '../../src/migrations/diffProperties.js';
import { formatMigration, isMigrationId, parseMigration } from '../../src/migrations/migration.js';
import type { MigrationStep } from '../../src/migrations/migration.js';

describe('convertValue: each type change, as the table in convertValue.ts states it', () => {
  it.each([
    // [value, to, outcome]
    ['12', 'number', { kind: 'changed', value: 12 }],
    [' 1.5e3 ', 'number', { kind: 'changed', value: 1500 }],
    ['abc', 'number', { kind: 'invalid' }],
    ['', 'number', { kind: 'invalid' }],
    ['12kg', 'number', { kind: 'invalid' }],
    ['0x10', 'number', { kind: 'invalid' }],
    ['Infinity', 'number', { kind: 'invalid' }],
    [true, 'number', { kind: 'changed', value: 1 }],
    [7, 'number', { kind: 'same' }],
    [null, 'number', { kind: 'same' }],
    [{ a: 1 }, 'number', { kind: 'invalid' }],
    [12, 'string', { kind: 'changed', value: '12' }],
    [false, 'string', { kind: 'changed', value: 'false' }],
    [[1], 'string', { kind: 'invalid' }],
    ['Yes', 'boolean', { kind: 'changed', value: true }],
    ['off', 'boolean', { kind: 'changed', value: false }],
    ['', 'boolean', { kind: 'changed', value: false }],
    ['maybe', 'boolean', { kind: 'invalid' }],
    [0, 'boolean', { kind: 'changed', value: false }],
    [5, 'boolean', { kind: 'invalid' }],
    ['2026-12-01', 'date', { kind: 'changed', value: '2026-12-01T00:00:00.000Z' }],
    ['2026-12-01T00:00:00.000Z', 'date', { kind: 'same' }],
    [0, 'date', { kind: 'changed', value: '1970-01-01T00:00:00.000Z' }],
    ['soon', 'date', { kind: 'invalid' }],
    ['a', 'array', { kind: 'changed', value: ['a'] }],
    [{ a: 1 }, 'array', { kind: 'invalid' }],
    [['a'], 'object', { kind: 'invalid' }],
    ['a1b2', 'relation', { kind: 'same' }],
    [3, 'relation', { kind: 'invalid' }],
  ] as const)('%j to %s', (value, to, outcome) => {
    expect(convertValue(value, to)).toEqual(outcome);
  });

  it('states the rule with examples the conversion itself computed', () => {
    expect(conversionNote('string', 'number', 'unset')).toBe(
      'string to number: "12" -> 12, " 1.5 " -> 1.5, "true" -> does not convert, "abc" -> does not convert, "" -> does not convert; values that do not convert are removed (kept for down); null stays null',
    );
  });
});

describe('migration files', () => {
  const id = '20261201T101500123-books-rename-title';
  it('read back what formatMigration writes, with a checksum that ignores notes', () => {
    const steps: MigrationStep[] = [{ op: 'convert', property: 'pages', from: 'string', to: 'number', invalid: 'unset', note: 'a' }];
    const a = parseMigration(id, formatMigration('books', steps));
    expect(a).toMatchObject({ id, collection: 'books', steps });
    const b = parseMigration(id, formatMigration('books', [{ ...steps[0], note: 'b' } as MigrationStep]));
    expect(b.checksum).toBe(a.checksum);
    expect(parseMigration(id, formatMigration('books', [{ ...steps[0], invalid: 'keep' } as MigrationStep])).checksum).not.toBe(a.checksum);
  });

  it.each([
    ['{', /invalid JSON/],
    ['[]', /must be a JSON object/],
    ['{"svcMigration": 2, "collection": "b", "steps": []}', /"svcMigration" must be 1/],
    ['{"svcMigration": 1, "collection": "_migrations", "steps": []}', /"collection" must name a collection/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "drop"}]}', /step 1: "op" must be one of/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "rename", "from": "a", "to": "a"}]}', /the same/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "rename", "from": "id", "to": "a"}]}', /"from" must name a property/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "remove", "property": "$where"}]}', /"property" must name a property/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "add", "property": "a", "type": "text"}]}', /"type" must be one of/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "add", "property": "a", "type": "object", "default": {"$gt": 1}}]}', /cannot be stored/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "add", "property": "a", "type": "object", "default": {"__proto__": {"x": 1}}}]}', /cannot be stored/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "convert", "property": "a", "from": "string", "to": "number", "invalid": "drop"}]}', /"invalid" must be/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "remove", "property": "a", "extra": 1}]}', /unknown keys extra/],
    ['{"svcMigration": 1, "collection": "b", "steps": [{"op": "renameCollection", "from": "b"}]}', /another collection/],
  ])('refuse %s with a clear error', (text, message) => {
    expect(() => parseMigration(id, text)).toThrow(message);
    expect(() => parseMigration(id, text)).toThrow(/^migrations\/20261201T101500123-books-rename-title\.json: /);
  });

  it('are named so that they sort in the order they were made', () => {
    const a = newMigrationId('shop/books', [{ op: 'rename', from: 'title', to: 'headline' }], new Date('2026-12-01T10:15:00.123Z'));
    expect(a).toBe('20261201T101500123-shop_books-rename-title-headline');
    expect(isMigrationId(a)).toBe(true);
    expect(newMigrationId('b', [{ op: 'remove', property: 'x', keep: true }, { op: 'add', property: 'y', type: 'string' }, { op: 'add', property: 'z', type: 'string' }], new Date('2026-12-01T10:15:00.124Z'))).toBe('20261201T101500124-b-remove-x-add-y-and-1-more');
    expect(isMigrationId('../x')).toBe(false);
    expect(isMigrationId('20261201T101500-a--b')).toBe(false);
  });
});

describe('diffShapes: config.json before and after to steps', () => {
  const shape = (properties: Record<string, unknown>) => shapeOf(properties);
  it.each([
    ['a rename hinted by $renameFrom', { title: { type: 'string' } }, { headline: { type: 'string', $renameFrom: 'title' } }, [{ op: 'rename', from: 'title', to: 'headline' }]],
    ['without the hint: a remove and an add', { title: { type: 'string' } }, { headline: { type: 'string' } }, [{ op: 'remove', property: 'title', type: 'string', keep: true }, { op: 'add', property: 'headline', type: 'string' }]],
    ['a hint already done is ignored', { headline: { type: 'string' } }, { headline: { type: 'string', $renameFrom: 'title' } }, []],
    ['an index made', { n: { type: 'number' } }, { n: { type: 'number', unique: true } }, [{ op: 'addIndex', property: 'n', unique: true }]],
    ['an index dropped', { n: { type: 'number', index: true } }, { n: { type: 'number' } }, [{ op: 'dropIndex', property: 'n', unique: false }]],
    ['index to unique', { n: { type: 'number', index: true } }, { n: { type: 'number', unique: true } }, [{ op: 'dropIndex', property: 'n', unique: false }, { op: 'addIndex', property: 'n', unique: true }]],
    ['an indexed property renamed', { n: { type: 'number', index: true } }, { m: { type: 'number', index: true, $renameFrom: 'n' } }, [{ op: 'dropIndex', property: 'n', unique: false }, { op: 'rename', from: 'n', to: 'm' }, { op: 'addIndex', property: 'm', unique: false }]],
    ['an indexed property removed', { n: { type: 'number', unique: true } }, {}, [{ op: 'dropIndex', property: 'n', unique: true }, { op: 'remove', property: 'n', type: 'number', keep: true }]],
    ['required, private and rules change no data', { n: { type: 'number' } }, { n: { type: 'number', required: true, private: true, read: false } }, []],
    ['a new property with $default: added with that default', {}, { rating: { type: 'number', $default: 0 } }, [{ op: 'add', property: 'rating', type: 'number', default: 0 }]],
    ['$default on a property that exists: the objects without a value get it', { n: { type: 'number', index: true } }, { n: { type: 'number', index: true, $default: 1 } }, [{ op: 'add', property: 'n', type: 'number', default: 1 }]],
    ['$default on a renamed, retyped property: after the move and the conversion', { pages: { type: 'string' } }, { count: { type: 'number', $renameFrom: 'pages', $default: 0 } }, [{ op: 'rename', from: 'pages', to: 'count' }, { op: 'convert', property: 'count', from: 'string', to: 'number', invalid: 'unset', note: conversionNote('string', 'number', 'unset') }, { op: 'add', property: 'count', type: 'number', default: 0 }]],
    ['$default null is no default', {}, { rating: { type: 'number', $default: null } }, [{ op: 'add', property: 'rating', type: 'number' }]],
  ])('%s', (_what, before, after, steps) => {
    const next = shape(after);
    expect(diffShapes(shape(before).shape, next.shape, next.renames, next.defaults)).toEqual(steps);
    // The steps take the old shape to the new one.
    expect(advanceShape(shape(before).shape, steps as MigrationStep[])).toEqual(next.shape);
  });

  it('a type change states its conversion', () => {
    const [step] = diffShapes(shapeOf({ pages: { type: 'string' } }).shape, shapeOf({ pages: { type: 'number' } }).shape);
    expect(step).toEqual({ op: 'convert', property: 'pages', from: 'string', to: 'number', invalid: 'unset', note: conversionNote('string', 'number', 'unset') });
  });

  it('a rename and a type change together: renamed first, converted under the new name', () => {
    const next = shapeOf({ count: { type: 'number', $renameFrom: 'pages' } });
    expect(diffShapes(shapeOf({ pages: { type: 'string' } }).shape, next.shape, next.renames).map((s) => s.op)).toEqual(['rename', 'convert']);
  });
});
