import { describe, expect, it } from 'vitest';
import { encodeRecord } from '../../shared/core/data-api/records.js';
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
