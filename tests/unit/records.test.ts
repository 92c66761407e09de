import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeRecord, recordEncoder } from '../../shared/core/data-api/records.js';
import type { ColumnInfo, ColumnKind } from '../../shared/core/database.js';

const col = (name: string, kind: ColumnKind): ColumnInfo => ({ name, kind, dataType: kind, ordinal: 0 });

describe('Function: encodeRecord', () => {
  it('leaves NULL columns out and encodes every kind as the contract says', () => {
    const columns = [
      col('I', 'int'),
      col('D', 'decimal'),
      col('S', 'string'),
      col('N', 'string'),
      col('T', 'datetime'),
      col('TD', 'datetime'),
      col('DA', 'date'),
      col('G', 'guid'),
      col('B', 'binary'),
      col('F', 'bool'),
    ];
    const record = encodeRecord(
      {
        I: '42',
        D: 1234.5,
        S: 'Žluťoučký kůň',
        N: null,
        T: '2024-03-01 08:15:30.123',
        TD: new Date(Date.UTC(2024, 2, 1, 8, 15, 30, 500)),
        DA: '2024-03-01',
        G: 'a1b2c3d4-0000-4000-8000-00000000000a',
        B: Uint8Array.from([0, 255, 1]),
        F: true,
      },
      columns,
    );
    expect(record).toEqual({
      I: 42,
      D: 1234.5,
      S: 'Žluťoučký kůň',
      T: '2024-03-01T08:15:30',
      TD: '2024-03-01T08:15:30',
      DA: '2024-03-01T00:00:00',
      G: 'A1B2C3D4-0000-4000-8000-00000000000A',
      B: 'AP8B',
      F: 1,
    });
    expect('N' in record).toBe(false);
  });
});

describe('Function: recordEncoder', () => {
  const kinds: ColumnKind[] = [
    'int',
    'decimal',
    'float',
    'string',
    'datetime',
    'date',
    'time',
    'guid',
    'binary',
    'bool',
    'other',
  ];
  // SQL Server's datetime2 and date span the years 1 to 9999.
  const FIRST_DAY = new Date('0001-01-01T00:00:00.000Z');
  const LAST_MOMENT = new Date('9999-12-31T23:59:59.999Z');
  const YEAR_EDGES = [
    FIRST_DAY,
    new Date('0999-12-31T23:59:59.999Z'),
    new Date('1000-01-01T00:00:00.000Z'),
    new Date('1753-01-01T00:00:00.000Z'),
    LAST_MOMENT,
  ];
  /** Values a driver may give for a column of each kind, NULLs included. */
  const driverValue = (kind: ColumnKind): fc.Arbitrary<unknown> => {
    const nullish = fc.constantFrom(null, undefined);
    const values: Record<ColumnKind, fc.Arbitrary<unknown>> = {
      int: fc.oneof(
        fc.integer(),
        fc.integer().map(String),
        fc.bigInt({ min: -(2n ** 53n), max: 2n ** 53n }).map(String),
      ),
      decimal: fc.oneof(fc.double({ noNaN: true }), fc.constantFrom('1234.50', '-0.001', '1e400', 'abc')),
      float: fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0)),
      string: fc.oneof(
        fc.string(),
        fc.string({ unit: 'binary' }),
        fc.constantFrom('"\\\n\u0001\u2028', 'Žluťoučký kůň'),
      ),
      datetime: fc.oneof(
        fc.date({ noInvalidDate: true, min: FIRST_DAY, max: LAST_MOMENT }),
        // Around the ends of the four-digit years, where the encoder's fast path hands over.
        fc.constantFrom(...YEAR_EDGES),
        fc.constantFrom('2024-03-01 08:15:30.123', '2024-03-01'),
      ),
      date: fc.oneof(
        fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(Date.UTC(9999, 0, 1)) }),
        fc.constant('2024-03-01'),
      ),
      time: fc.constantFrom('08:15:30.5', '23:59:59'),
      guid: fc.uuid(),
      binary: fc.uint8Array({ maxLength: 40 }),
      bool: fc.constantFrom(true, false, 1, 0, '1', '0', 't', 'f'),
      other: fc.oneof(fc.string(), fc.integer(), fc.jsonValue()),
    };
    return fc.oneof({ arbitrary: nullish, weight: 1 }, { arbitrary: values[kind], weight: 4 });
  };
  const table = fc
    .uniqueArray(fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom(...kinds)), {
      minLength: 1,
      maxLength: 8,
      selector: ([name]) => name,
    })
    .chain((spec) =>
      fc.tuple(
        fc.constant(spec.map(([name, kind]) => col(name, kind))),
        fc.array(fc.tuple(...spec.map(([, kind]) => driverValue(kind))), { maxLength: 5 }),
      ),
    );

  it('writes exactly the bytes of JSON.stringify(encodeRecord(row))', () => {
    fc.assert(
      fc.property(table, ([columns, rows]) => {
        const encode = recordEncoder(columns);
        for (const values of rows) {
          const row = Object.fromEntries(columns.map((c, i) => [c.name, values[i]]));
          expect(encode(row)).toBe(JSON.stringify(encodeRecord(row, columns)));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('writes {} for a row of NULLs', () => {
    expect(recordEncoder([col('A', 'int'), col('B', 'string')])({ A: null, B: undefined })).toBe('{}');
  });
});
