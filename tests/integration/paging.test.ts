import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedDataSourceReader } from '../../shared/adapters/embedded/data-source-reader.js';
import type { DataSourceReader } from '../../shared/core/data-api/reader.js';
import type { Database, DataSourceInfo, Row } from '../../shared/core/database.js';
import { demoDatabase } from '../support/demo.js';

/** Every row of a page as the reader yields it, batch by batch. */
async function readPage(
  reader: DataSourceReader,
  source: DataSourceInfo,
  offset: number,
  rows: number,
  batchRows: number,
): Promise<Row[]> {
  const all: Row[] = [];
  for await (const batch of reader.readPage(source, offset, rows, batchRows)) all.push(...batch);
  return all;
}

describe('getDataPaginate as a deferred join on the embedded database', () => {
  let pg: PGlite;
  let db: Database;
  let reader: DataSourceReader;
  const source = async (name: string) => (await db.findDataSource('dbo', name))!;
  /** The plain OFFSET query in primary-key order: what a page must equal. */
  const plainPage = (info: DataSourceInfo, offset: number, rows: number) =>
    db.query(
      `SELECT ${info.columns.map((c) => `"${c.name}"`).join(', ')} FROM dbo."${info.name}"
       ORDER BY ${info.primaryKey.map((k) => `"${k}"`).join(', ')} OFFSET $1 ROWS FETCH NEXT $2 ROWS ONLY`,
      [offset, rows],
    );

  beforeAll(async () => {
    ({ pg, db } = await demoDatabase());
    reader = createEmbeddedDataSourceReader(db);
    // A composite key whose order differs from the insertion order and from either column alone.
    await pg.exec(`CREATE TABLE dbo."PAGING_PAIR" ("A" int NOT NULL, "B" varchar(10) NOT NULL, "V" int,
        CONSTRAINT "PK_PAGING_PAIR" PRIMARY KEY ("B", "A"));
      INSERT INTO dbo."PAGING_PAIR" SELECT (i * 7919) % 101, chr(65 + (i * 31) % 5), i FROM generate_series(1, 500) i
        ON CONFLICT DO NOTHING;`);
  });
  afterAll(async () => {
    await pg.close();
  });

  it.each([
    [0, 1000],
    [1, 1000],
    [49_500, 1000],
    [99_000, 1000],
    [99_999, 1000],
    [100_000, 1000],
    [0, 10_000],
    [90_000, 10_000],
    [95_000, 10_000],
  ])(
    'DOKUMENT from offset %i, %i rows: the same rows in the same order as the plain OFFSET query',
    async (offset, rows) => {
      const info = await source('DOKUMENT');
      const page = await readPage(reader, info, offset, rows, 1000);
      const plain = await plainPage(info, offset, rows);
      expect(page.length).toBe(Math.max(0, Math.min(rows, 100_000 - offset)));
      expect(page).toEqual(plain);
    },
  );

  it('pages of a table cover every row once, in key order, with no overlap or gap', async () => {
    const info = await source('SUBJECT');
    const ids: unknown[] = [];
    for (let offset = 0; offset < 70; offset += 7) {
      ids.push(...(await readPage(reader, info, offset, 7, 3)).map((row) => row.ID));
    }
    const all = (await db.query(`SELECT "ID" FROM dbo."SUBJECT" ORDER BY "ID"`)).map((row) => row.ID);
    expect(ids).toEqual(all);
  });

  it('pages a composite primary key in key order, at the start, the middle and the end', async () => {
    const info = await source('PAGING_PAIR');
    expect(info.primaryKey).toEqual(['B', 'A']);
    const total = Number((await db.query(`SELECT count(*) AS n FROM dbo."PAGING_PAIR"`))[0]!.n);
    for (const offset of [0, Math.floor(total / 2) - 3, total - 5, total]) {
      expect(await readPage(reader, info, offset, 10, 4)).toEqual(await plainPage(info, offset, 10));
    }
  });

  it('pages a view without a primary key in the order of its columns, as before', async () => {
    const info = await source('V_DOKUMENT_SOUBOR');
    expect(info.primaryKey).toEqual([]);
    const columns = info.columns.map((c) => `"${c.name}"`);
    const sortable = info.columns
      .filter((c) => c.kind !== 'binary' && c.kind !== 'other')
      .map((c) => `"${c.name}"`);
    const plain = await db.query(
      `SELECT ${columns.join(', ')} FROM dbo."V_DOKUMENT_SOUBOR" ORDER BY ${sortable.join(', ')} OFFSET 2 ROWS FETCH NEXT 5 ROWS ONLY`,
    );
    expect(plain.length).toBe(5);
    expect(await readPage(reader, info, 2, 5, 1000)).toEqual(plain);
  });
});
