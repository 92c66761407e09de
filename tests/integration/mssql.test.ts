import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { translateMssqlCondition } from '../../shared/adapters/mssql/condition.js';
import { createMssqlDataSourceReader } from '../../shared/adapters/mssql/data-source-reader.js';
import { mssqlDialect } from '../../shared/adapters/mssql/dialect.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import type { Answer } from '../../shared/core/answers.js';
import { rememberedCatalogue } from '../../shared/core/data-api/data-source.js';
import { getData, getDataWithCondition } from '../../shared/core/data-api/read.js';
import { type Database, DatabaseStatementError } from '../../shared/core/database.js';
import { ServiceError } from '../../shared/core/errors.js';
import { isBabelfish, mssqlUrl, runMssqlScripts } from '../support/mssql.js';

const url = mssqlUrl;
if (!url) console.warn('MSSQL_URL not set: SQL Server integration suite skipped');

describe.skipIf(!url)('SQL Server adapter (integration)', () => {
  // A real table, not #temp: temporary tables live in tempdb and in one pooled session only.
  const suffix = `${Date.now().toString(36)}_${process.pid}`;
  const table = `ItKinds_${suffix}`;
  const view = `ItKindsView_${suffix}`;
  const tenant = '6f9619ff-8b86-d011-b42d-00c04fc964ff';
  const placed = new Date('2024-05-06T07:08:09.123Z');
  let db: Database;
  /** Babelfish (the T-SQL engine of test:tsql): no geography type, view names lower-cased in every catalogue. */
  let babelfish = false;

  const count = async () => (await db.query(`SELECT COUNT(*) AS n FROM dbo.${table}`))[0]?.n;

  beforeAll(async () => {
    db = createMssqlDatabase({ connectionString: url! });
    babelfish = await isBabelfish(db);
    await db.query(`CREATE TABLE dbo.${table} (
      Tenant uniqueidentifier NOT NULL,
      Id int NOT NULL,
      Big bigint NULL,
      Amount decimal(12, 2) NULL,
      Ratio float NULL,
      Name nvarchar(50) NULL,
      Placed datetime2 NULL,
      Day date NULL,
      At time NULL,
      Flag bit NULL,
      Content varbinary(max) NULL,
      Doc xml NULL,
      ${babelfish ? '' : 'Geo geography NULL,'}
      CONSTRAINT PK_${table} PRIMARY KEY (Id, Tenant)
    )`);
    await db.query(`CREATE VIEW dbo.${view} AS SELECT Id, Name FROM dbo.${table}`);
    await db.query(
      `INSERT INTO dbo.${table} (Tenant, Id, Big, Amount, Ratio, Name, Placed, Flag, Content)
       VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9)`,
      [
        { type: 'uniqueidentifier', value: tenant },
        1,
        2 ** 40,
        12.5,
        0.25,
        'Ünïcode',
        placed,
        true,
        { type: 'varbinary', value: Buffer.from([0, 1, 255]) },
      ],
    );
    // 24 more rows, set-based.
    await db.query(
      `INSERT INTO dbo.${table} (Tenant, Id, Name)
       SELECT TOP (24) @p1, 1 + ROW_NUMBER() OVER (ORDER BY (SELECT NULL)), N'row'
       FROM sys.all_objects`,
      [{ type: 'uniqueidentifier', value: tenant }],
    );
  });

  afterAll(async () => {
    if (!db) return;
    await db.query(`DROP VIEW IF EXISTS dbo.${view}`);
    await db.query(`DROP TABLE IF EXISTS dbo.${table}`);
    await db.close();
  });

  it('describes a table: kinds, primary key order, exact spelling, any case', async () => {
    const info = await db.findDataSource(undefined, table.toUpperCase());
    expect(info).toMatchObject({ schema: 'dbo', name: table, kind: 'table', primaryKey: ['Id', 'Tenant'] });
    expect(info?.columns.map((column) => [column.name, column.kind, column.ordinal])).toEqual([
      ['Tenant', 'guid', 1],
      ['Id', 'int', 2],
      ['Big', 'int', 3],
      ['Amount', 'decimal', 4],
      ['Ratio', 'float', 5],
      ['Name', 'string', 6],
      ['Placed', 'datetime', 7],
      ['Day', 'date', 8],
      ['At', 'time', 9],
      ['Flag', 'bool', 10],
      ['Content', 'binary', 11],
      ['Doc', 'string', 12],
      ...(babelfish ? [] : [['Geo', 'other', 13]]),
    ]);
    expect(await db.findDataSource('DBO', table.toLowerCase())).toMatchObject({ name: table });
    expect(await db.findDataSource('no_such_schema', table)).toBeUndefined();
    expect(await db.findDataSource(undefined, `${table}_missing`)).toBeUndefined();
  });

  it('tells which columns admit NULL and lists the tables and views (the per-tenant description)', async () => {
    const info = await db.findDataSource(undefined, table);
    const nullable = Object.fromEntries(info!.columns.map((column) => [column.name, column.nullable]));
    expect(nullable).toMatchObject({ Tenant: false, Id: false, Big: true, Name: true });
    const listed = await db.listDataSources();
    expect(listed).toEqual(expect.arrayContaining([{ schema: 'dbo', name: table }]));
    expect(listed.map((entry) => entry.name.toLowerCase())).toContain(view.toLowerCase());
    expect(listed.some((entry) => /^(sys|INFORMATION_SCHEMA)$/i.test(entry.schema))).toBe(false);
  });

  it('detects views', async () => {
    const info = await db.findDataSource('dbo', view.toLowerCase());
    // The view's name as declared on both (Babelfish's catalogue lower-cases it: read from its definition).
    expect(info).toMatchObject({ name: view, kind: 'view', primaryKey: [] });
    expect(info?.columns.map((column) => column.name)).toEqual(['Id', 'Name']);
  });

  it('queries with parameters and normalises values', async () => {
    const [row] = await db.query(`SELECT * FROM dbo.${table} WHERE Id = @p1 AND Tenant = @p2`, [
      1,
      { type: 'uniqueidentifier', value: tenant },
    ]);
    expect(row).toMatchObject({
      Tenant: tenant.toUpperCase(),
      Id: 1,
      Big: 2 ** 40,
      Amount: 12.5,
      Ratio: 0.25,
      Name: 'Ünïcode',
      Flag: true,
      Content: Buffer.from([0, 1, 255]),
    });
    expect(row?.Placed).toEqual(placed);
    expect(await db.query(`SELECT Id FROM dbo.${table} WHERE Name = @p1`, ['nobody'])).toEqual([]);
  });

  it('pages with OFFSET/FETCH', async () => {
    const page = await db.query(
      `SELECT Id FROM dbo.${table} ORDER BY Id ${mssqlDialect.paginate('@p1', '@p2')}`,
      [10, 5],
    );
    expect(page.map((row) => row.Id)).toEqual([11, 12, 13, 14, 15]);
  });

  it('pages as a deferred join: the same rows in the same order as the plain OFFSET query (composite key)', async () => {
    const info = (await db.findDataSource('dbo', table))!;
    const reader = createMssqlDataSourceReader(db);
    const columns = info.columns.filter((c) => c.name !== 'Geo').map((c) => `[${c.name}]`);
    const plain = (offset: number, rows: number) =>
      db.query(
        `SELECT ${columns.join(', ')} FROM dbo.${table} ORDER BY [Id], [Tenant] OFFSET @p1 ROWS FETCH NEXT @p2 ROWS ONLY`,
        [offset, rows],
      );
    const paged = async (offset: number, rows: number, batchRows: number) => {
      const all: Record<string, unknown>[] = [];
      for await (const batch of reader.readPage(info, offset, rows, batchRows)) all.push(...batch);
      return all.map(({ Geo: _geo, ...rest }) => rest);
    };
    for (const [offset, rows] of [
      [0, 5],
      [10, 5],
      [22, 5],
      [25, 5],
      [0, 25],
    ] as const) {
      expect(await paged(offset, rows, 4)).toEqual(await plain(offset, rows));
    }
    expect((await paged(10, 5, 1000)).map((row) => row.Id)).toEqual([11, 12, 13, 14, 15]);
  });

  it('streams batches and frees the connection after an early stop', async () => {
    const sizes: number[] = [];
    const ids: unknown[] = [];
    for await (const batch of db.streamBatches(`SELECT Id FROM dbo.${table} ORDER BY Id`, [], 7)) {
      sizes.push(batch.length);
      ids.push(...batch.map((row) => row.Id));
    }
    expect(sizes).toEqual([7, 7, 7, 4]);
    expect(ids).toEqual(Array.from({ length: 25 }, (_, index) => index + 1));

    for await (const batch of db.streamBatches(`SELECT Id FROM dbo.${table} ORDER BY Id`, [], 2)) {
      expect(batch).toHaveLength(2);
      break;
    }
    expect(await count()).toBe(25);
  });

  it('rolls a failed transaction back and commits a successful one', async () => {
    const insert = `INSERT INTO dbo.${table} (Tenant, Id) VALUES (@p1, @p2)`;
    const guid = { type: 'uniqueidentifier', value: tenant } as const;
    await expect(
      db.transaction(async (tx) => {
        await tx.query(insert, [guid, 100]);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await count()).toBe(25);

    const duplicate = await db
      .transaction(async (tx) => {
        await tx.query(insert, [guid, 101]);
        await tx.query(insert, [guid, 1]);
      })
      .catch((error: unknown) => error);
    expect(duplicate).toBeInstanceOf(DatabaseStatementError);
    expect(duplicate).toMatchObject({ dbCode: '2627' });
    expect(await count()).toBe(25);

    await db.transaction((tx) => tx.query(insert, [guid, 102]));
    expect(await count()).toBe(26);
  });

  it('reads a table as it is now when it changed after its columns were remembered', async () => {
    const shifting = `ItShifting_${suffix}`;
    await db.query(
      `CREATE TABLE dbo.${shifting} (ID int NOT NULL PRIMARY KEY, A nvarchar(10), B nvarchar(10))`,
    );
    try {
      await db.query(`INSERT INTO dbo.${shifting} (ID, A, B) VALUES (1, N'a1', N'b1')`);
      // The catalogue remembered as the service's openDatabase does.
      const catalogue = rememberedCatalogue(db, 60_000);
      const remembering: Database = {
        ...db,
        findDataSource: (schema, name) => catalogue.findDataSource(schema, name),
        forgetDataSource: (schema, name) => catalogue.forgetDataSource?.(schema, name) ?? false,
      };
      const ctx = {
        tenant: 'demo',
        reader: createMssqlDataSourceReader(remembering, translateMssqlCondition),
        allowed: '*' as const,
        limits: { inlineLimitBytes: 1_000_000, presignSeconds: 60, store: undefined, keyPrefix: 't' },
        batchRows: 100,
      };
      const read = async (answer: Promise<Answer>) => {
        const done = await answer;
        return done.kind === 'inline' ? JSON.parse(done.body.toString()) : done;
      };
      expect(await read(getData(ctx, shifting))).toEqual({ [shifting]: [{ ID: 1, A: 'a1', B: 'b1' }] });
      await db.query(`ALTER TABLE dbo.${shifting} DROP COLUMN B`);
      expect(await read(getData(ctx, shifting))).toEqual({ [shifting]: [{ ID: 1, A: 'a1' }] });
      await db.query(`ALTER TABLE dbo.${shifting} DROP COLUMN A`);
      const gone = await getDataWithCondition(ctx, shifting, "A = 'a1'").catch((error: unknown) => error);
      expect(gone).toBeInstanceOf(ServiceError);
      expect(gone).toMatchObject({
        status: 400,
        code: 'invalid_condition',
        message: expect.stringMatching(/\bA\b/),
      });
      await db.query(`DROP TABLE dbo.${shifting}`);
      await expect(getData(ctx, shifting)).rejects.toMatchObject({ status: 404 });
    } finally {
      await db.query(`DROP TABLE IF EXISTS dbo.${shifting}`);
    }
  });

  it('runs infra/sql/mssql/*.sql twice without error', async () => {
    await runMssqlScripts(db);
    await runMssqlScripts(db);
  });
});
