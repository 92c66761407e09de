import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Database,
  DatabaseStatementError,
  DatabaseUnavailableError,
  StatementCancelledError,
} from '../../shared/core/database.js';
import { demoDatabase } from '../support/demo.js';

let pg: PGlite;
let db: Database;

beforeAll(async () => {
  ({ pg, db } = await demoDatabase());
});
afterAll(async () => {
  await pg?.close();
});

describe('Class: embedded database adapter', () => {
  it('finds tables and views case-insensitively with columns, kinds and primary key', async () => {
    const subject = await db.findDataSource(undefined, 'subject');
    expect(subject).toMatchObject({ schema: 'dbo', name: 'SUBJECT', kind: 'table', primaryKey: ['ID'] });
    expect(subject!.columns[0]).toMatchObject({ name: 'ID', kind: 'int', ordinal: 1 });
    expect(subject!.columns.find((c) => c.name === 'DATUM_ZALOZENI')?.kind).toBe('datetime');
    const view = await db.findDataSource('DBO', 'v_dokument_soubor');
    expect(view).toMatchObject({ name: 'V_DOKUMENT_SOUBOR', kind: 'view', primaryKey: [] });
    expect(view!.columns.find((c) => c.name === 'DOKUMENTFILEGUID')?.kind).toBe('guid');
    expect(await db.findDataSource(undefined, 'pg_class')).toBeUndefined();
    expect(await db.findDataSource('pg_catalog', 'pg_class')).toBeUndefined();
  });

  it('tells which columns admit NULL and lists the tables and views, never the system ones (the per-tenant description)', async () => {
    const subject = await db.findDataSource(undefined, 'SUBJECT');
    const nullable = Object.fromEntries(subject!.columns.map((c) => [c.name, c.nullable]));
    expect(nullable).toMatchObject({ ID: false, NAZEV: false, WEBHOOK_URL: true });
    const listed = await db.listDataSources();
    expect(listed).toEqual(
      expect.arrayContaining([
        { schema: 'dbo', name: 'SUBJECT' },
        { schema: 'dbo', name: 'V_DOKUMENT_SOUBOR' },
      ]),
    );
    expect(listed.some((entry) => /^(pg_catalog|information_schema)$/.test(entry.schema))).toBe(false);
  });

  it('stops a stream at the next batch once its signal aborts, and closes the cursor', async () => {
    const deadline = new AbortController();
    let batches = 0;
    const reading = (async () => {
      for await (const _batch of db.streamBatches('SELECT "ID" FROM dbo."DOKUMENT" ORDER BY "ID"', [], 100, {
        signal: deadline.signal,
      })) {
        batches += 1;
        if (batches === 2) deadline.abort();
      }
    })();
    await expect(reading).rejects.toBeInstanceOf(StatementCancelledError);
    expect(batches).toBe(2);
    const open = await db.query(`SELECT count(*)::int AS n FROM pg_cursors WHERE name LIKE 'svc_cursor%'`);
    expect(open).toEqual([{ n: 0 }]);
  });

  it('streams a large result in batches of the requested size', async () => {
    const sizes: number[] = [];
    for await (const batch of db.streamBatches(
      'SELECT "ID" FROM dbo."DOKUMENT" WHERE "ID" <= $1 ORDER BY "ID"',
      [2500],
      1000,
    )) {
      sizes.push(batch.length);
    }
    expect(sizes).toEqual([1000, 1000, 500]);
  });

  it('closes its cursor when the reader stops early', async () => {
    for await (const batch of db.streamBatches('SELECT "ID" FROM dbo."DOKUMENT" ORDER BY "ID"', [], 10)) {
      expect(batch).toHaveLength(10);
      break;
    }
    const open = await db.query("SELECT count(*) AS n FROM pg_cursors WHERE name LIKE 'svc_cursor_%'");
    expect(open[0]!.n).toBe(0);
  });

  it('returns exact numerics as numbers and date-times as wall-clock text', async () => {
    const [row] = await db.query(
      'SELECT "CASTKA_CELKEM", "DATUM_VYSTAVENI" FROM dbo."DOKUMENT" WHERE "ID" = $1',
      [1],
    );
    expect(typeof row!.CASTKA_CELKEM).toBe('number');
    expect(row!.DATUM_VYSTAVENI).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
    // As the answers write them (the SQL Server driver's Dates are formatted the same way):
    // no fraction, no zone, a date at midnight; what has no four-digit year stays as it is.
    const [times] = await db.query(
      `SELECT timestamp '2024-01-02 03:04:05.678' AS "at", timestamptz '2024-01-02 03:04:05.678+00' AS "atZone",
              date '2024-01-02' AS "day", timestamp 'infinity' AS "never", timestamp '0044-03-15 12:00:00 BC' AS "ides",
              date '0044-03-15 BC' AS "idesDay", time '09:11:59.123' AS "clock", timetz '09:11:59.123+02' AS "clockZone"`,
    );
    expect(times).toEqual({
      at: '2024-01-02T03:04:05',
      atZone: '2024-01-02T03:04:05',
      day: '2024-01-02T00:00:00',
      never: 'infinity',
      ides: '0044-03-15 12:00:00 BC',
      idesDay: '0044-03-15 BC',
      clock: '09:11:59',
      clockZone: '09:11:59',
    });
  });

  it('maps a refused statement and a closed database to the port errors', async () => {
    await expect(db.query('SELECT * FROM dbo."NOPE"')).rejects.toBeInstanceOf(DatabaseStatementError);
    const { pg: other, db: closed } = await demoDatabase();
    await other.close();
    await expect(closed.query('SELECT 1')).rejects.toBeInstanceOf(DatabaseUnavailableError);
  });
});
