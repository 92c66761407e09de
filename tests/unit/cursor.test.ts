import { describe, expect, it } from 'vitest';
import { fitsKey, makeCursor, readCursor } from '../../shared/core/data-api/cursor.js';
import type { DataSourceInfo } from '../../shared/core/database.js';
import { mintCursor } from '../support/cursors.js';

/**
 * Cursors whose MAC is valid but whose values do not fit the key's columns (a key that leaked, or
 * a column whose type changed): 400 invalid_cursor before any database sees them, on every type.
 */
const source = (kinds: [string, string, string][]): DataSourceInfo => ({
  schema: 'dbo',
  name: 'T',
  kind: 'table',
  columns: kinds.map(([name, kind, dataType], index) => ({
    name,
    kind: kind as never,
    dataType,
    ordinal: index + 1,
  })),
  primaryKey: kinds.map(([name]) => name),
});
const KEY = Buffer.from('a-signing-key-of-the-deployment-32+');
const signer = { keys: [KEY], tenant: 'acme' };

/** A cursor over `values` with a valid MAC, as someone holding the key could make it. */
const forged = (table: DataSourceInfo, values: unknown[]) =>
  mintCursor(
    KEY,
    { tenant: 'acme', schema: table.schema, source: table.name, primaryKey: table.primaryKey },
    values,
  );

describe('Cursors: values that must fit the key columns', () => {
  const cases: [string, [string, string, string][], unknown[], boolean][] = [
    ['int in range', [['ID', 'int', 'int']], [2147483647], true],
    ['int past its type', [['ID', 'int', 'int']], [2147483648], false],
    ['int with a fraction', [['ID', 'int', 'integer']], [1.5], false],
    ['int as 1e20', [['ID', 'int', 'int']], [1e20], false],
    ['smallint past its type', [['ID', 'int', 'smallint']], [40000], false],
    ['tinyint below 0', [['ID', 'int', 'tinyint']], [-1], false],
    ['bigint as text', [['ID', 'int', 'bigint']], ['9223372036854775807'], true],
    ['bigint past its type', [['ID', 'int', 'bigint']], ['9223372036854775808'], false],
    ['int as a word', [['ID', 'int', 'int']], ['one'], false],
    ['real past its type', [['X', 'float', 'real']], [1e39], false],
    ['float', [['X', 'float', 'float']], [1e300], true],
    ['string', [['K', 'string', 'nvarchar']], ['Praha'], true],
    ['string with NUL', [['K', 'string', 'nvarchar']], ['a\u0000b'], false],
    ['string with a lone surrogate', [['K', 'string', 'nvarchar']], ['\uD800'], false],
    ['string as a number', [['K', 'string', 'nvarchar']], [5], false],
    ['guid', [['G', 'guid', 'uniqueidentifier']], ['6F9619FF-8B86-D011-B42D-00C04FC964FF'], true],
    ['guid malformed', [['G', 'guid', 'uniqueidentifier']], ['6F9619FF-8B86'], false],
    ['null', [['ID', 'int', 'int']], [null], false],
    [
      'too few values',
      [
        ['A', 'int', 'int'],
        ['B', 'int', 'int'],
      ],
      [1],
      false,
    ],
  ];
  for (const [name, kinds, values, fits] of cases) {
    it(`${fits ? 'takes' : 'refuses'} ${name}`, () => {
      const table = source(kinds);
      expect(fitsKey(table, values)).toBe(fits);
      const read = () => readCursor(signer, table, forged(table, values));
      if (fits) expect(read()).toEqual(values);
      else expect(read).toThrow(expect.objectContaining({ status: 400, code: 'invalid_cursor' }));
    });
  }

  it('verifies with any of the keys and signs with the first (rotation)', () => {
    const table = source([['ID', 'int', 'int']]);
    const old = { keys: [Buffer.from('the-old-key-of-the-deployment-32-chars')], tenant: 'acme' };
    const cursor = makeCursor(old, table, { ID: 41 });
    const rotated = {
      keys: [Buffer.from('the-new-key-of-the-deployment-32-chars'), old.keys[0]!],
      tenant: 'acme',
    };
    expect(readCursor(rotated, table, cursor)).toEqual([41]);
    expect(makeCursor(rotated, table, { ID: 41 })).not.toBe(cursor);
    const dropped = { keys: [rotated.keys[0]!], tenant: 'acme' };
    expect(() => readCursor(dropped, table, cursor)).toThrow(
      expect.objectContaining({ code: 'invalid_cursor' }),
    );
  });
});
