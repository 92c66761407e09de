import { describe, expect, it } from 'vitest';
import { translateEmbeddedCondition } from '../../shared/adapters/embedded/condition.js';
import { createEmbeddedDataSourceReader } from '../../shared/adapters/embedded/data-source-reader.js';
import { embeddedDialect } from '../../shared/adapters/embedded/dialect.js';
import { translateMssqlCondition } from '../../shared/adapters/mssql/condition.js';
import { createMssqlDataSourceReader } from '../../shared/adapters/mssql/data-source-reader.js';
import { mssqlDialect } from '../../shared/adapters/mssql/dialect.js';
import type { LargeObjectStore } from '../../shared/core/answers.js';
import {
  getData,
  getDataPaginate,
  getDataWithCondition,
  getRowsCount,
} from '../../shared/core/data-api/read.js';
import {
  type Database,
  DatabaseStatementError,
  type DataSourceInfo,
  type Row,
  type SqlDialect,
} from '../../shared/core/database.js';
import { recordingDatabase } from '../support/recording-database.js';

const SUBJECT: DataSourceInfo = {
  schema: 'dbo',
  name: 'SUBJECT',
  kind: 'table',
  columns: [
    { name: 'ID', kind: 'int', dataType: 'int', ordinal: 1 },
    { name: 'NAZEV', kind: 'string', dataType: 'nvarchar', ordinal: 2 },
  ],
  primaryKey: ['ID'],
};
const VIEW: DataSourceInfo = {
  ...SUBJECT,
  name: 'V_X',
  kind: 'view',
  primaryKey: [],
  columns: [...SUBJECT.columns, { name: 'OBSAH', kind: 'binary', dataType: 'varbinary', ordinal: 3 }],
};

/** A database port that records the SQL it is given and yields `batches`. */
const recordingSubjects = (dialect: SqlDialect, batches: Row[][] = []) =>
  recordingDatabase(dialect, {
    answer: [{ n: 7 }],
    batches,
    findDataSource: async (_schema, name) =>
      [SUBJECT, VIEW].find((s) => s.name.toLowerCase() === name.toLowerCase()),
  });

const limits = { inlineLimitBytes: 5 * 1024 * 1024, presignSeconds: 900, store: undefined, keyPrefix: 't' };
const ctx = (db: Database, inlineLimitBytes = limits.inlineLimitBytes, store?: LargeObjectStore) => ({
  tenant: 'demo',
  reader:
    db.dialect.name === 'mssql'
      ? createMssqlDataSourceReader(db, translateMssqlCondition)
      : createEmbeddedDataSourceReader(db, translateEmbeddedCondition),
  allowed: '*' as const,
  limits: { ...limits, inlineLimitBytes, store },
  batchRows: 1000,
});

describe('Data API SQL for SQL Server', () => {
  it('pages as a deferred join: the keys with OFFSET/FETCH in primary-key order, then their rows; parameters only', async () => {
    const { db, statements } = recordingSubjects(mssqlDialect);
    await getDataPaginate(ctx(db), 'subject', { fromRow: '11', rows: '5' });
    expect(statements[0]).toEqual({
      sql:
        'SELECT page_row.[ID], page_row.[NAZEV] FROM [dbo].[SUBJECT] AS page_row ' +
        'INNER JOIN (SELECT [ID] FROM [dbo].[SUBJECT] ORDER BY [ID] OFFSET @p1 ROWS FETCH NEXT @p2 ROWS ONLY) AS page_key ' +
        'ON page_row.[ID] = page_key.[ID] ORDER BY page_row.[ID]',
      params: [10, 5],
    });
  });

  it('pages a source without a primary key with a plain OFFSET/FETCH in the order of its columns', async () => {
    const { db, statements } = recordingSubjects(mssqlDialect);
    await getDataPaginate(ctx(db), 'V_X', { fromRow: '1', rows: '5' });
    expect(statements[0]!.sql).toBe(
      'SELECT [ID], [NAZEV], [OBSAH] FROM [dbo].[V_X] ORDER BY [ID], [NAZEV] OFFSET @p1 ROWS FETCH NEXT @p2 ROWS ONLY',
    );
  });

  it('orders a view without a key by every sortable column', async () => {
    const { db, statements } = recordingSubjects(mssqlDialect);
    await getData(ctx(db), 'V_X');
    expect(statements[0]!.sql).toBe('SELECT [ID], [NAZEV], [OBSAH] FROM [dbo].[V_X] ORDER BY [ID], [NAZEV]');
  });

  it('counts with COUNT_BIG', async () => {
    const { db, statements } = recordingSubjects(mssqlDialect);
    const answer = await getRowsCount(ctx(db), 'SUBJECT');
    expect(statements[0]!.sql).toBe('SELECT COUNT_BIG(*) AS [n] FROM [dbo].[SUBJECT]');
    expect(answer.kind === 'inline' && JSON.parse(answer.body.toString())).toEqual({
      SUBJECT: [{ rowsCount: 7 }],
    });
  });

  it('puts the compiled condition in WHERE with its literals as parameters', async () => {
    const { db, statements } = recordingSubjects(mssqlDialect);
    await getDataWithCondition(ctx(db), 'SUBJECT', "NAZEV = 'x''; DROP TABLE y; --'");
    expect(statements[0]!.sql).toMatch(
      /^SELECT \[ID\], \[NAZEV\] FROM \[dbo\]\.\[SUBJECT\] WHERE .*@p1.* ORDER BY \[ID\]$/,
    );
    expect(statements[0]!.sql).not.toContain('DROP');
    expect(statements[0]!.params).toEqual(["x'; DROP TABLE y; --"]);
  });
});

describe('Data API reads in batches', () => {
  it('pages on PostgreSQL with $1/$2, as a deferred join', async () => {
    const { db, statements } = recordingSubjects(embeddedDialect);
    await getDataPaginate(ctx(db), 'SUBJECT', { fromRow: '1', rows: '10' });
    expect(statements[0]!.sql).toBe(
      'SELECT "ID", "NAZEV" FROM "dbo"."SUBJECT" WHERE "ID" = ANY(ARRAY(' +
        'SELECT "ID" FROM "dbo"."SUBJECT" ORDER BY "ID" OFFSET $1 ROWS FETCH NEXT $2 ROWS ONLY)) ORDER BY "ID"',
    );
    expect(statements[0]!.params).toEqual([0, 10]);
  });

  it('starts uploading before the last batch is read, so memory stays bounded', async () => {
    const batch = (from: number) =>
      Array.from({ length: 100 }, (_, i) => ({ ID: from + i, NAZEV: 'x'.repeat(100) }));
    const batches = Array.from({ length: 20 }, (_, i) => batch(i * 100));
    const { db, batchesRead } = recordingSubjects(embeddedDialect, batches);
    const uploadedAt: number[] = [];
    const chunks: Buffer[] = [];
    const store: LargeObjectStore = {
      startUpload: () => ({
        write: async (chunk) => {
          uploadedAt.push(batchesRead());
          chunks.push(chunk);
        },
        complete: async () => undefined,
        abort: async () => undefined,
      }),
      presignGet: async () => 'https://bucket.example/answer',
    };
    const answer = await getData(ctx(db, 20_000, store), 'SUBJECT');
    expect(answer).toEqual({
      kind: 'redirect',
      location: 'https://bucket.example/answer',
      key: expect.any(String),
    });
    expect(uploadedAt[0]).toBeLessThan(3);
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { SUBJECT: { ID: number }[] };
    expect(body.SUBJECT).toHaveLength(2000);
    expect(body.SUBJECT[1999]!.ID).toBe(1999);
  });
});

describe('Data API reads of a table that changed', () => {
  /** A database whose count fails with `code` the first `failures` times, with a catalogue memory of `remembered`. */
  function changing(code: string, failures: number, remembered: boolean) {
    let calls = 0;
    let lookups = 0;
    const { db } = recordingDatabase(embeddedDialect, {
      answer: () => {
        calls++;
        if (calls <= failures) throw new DatabaseStatementError('column "GONE" does not exist', code);
        return [{ n: 3 }];
      },
      findDataSource: async () => {
        lookups++;
        return SUBJECT;
      },
    });
    const forgetDataSource = () => remembered;
    return { db: { ...db, forgetDataSource }, counts: () => ({ calls, lookups }) };
  }

  it('look the table up again and read once more when the database says a column or the table is gone', async () => {
    for (const code of ['42703', '42P01', '207', '208']) {
      const { db, counts } = changing(code, 1, true);
      const answer = await getRowsCount(ctx(db), 'SUBJECT');
      expect(answer.kind === 'inline' && JSON.parse(answer.body.toString())).toEqual({
        SUBJECT: [{ rowsCount: 3 }],
      });
      expect(counts()).toEqual({ calls: 2, lookups: 2 });
    }
  });

  it('read once more at most, and not at all when nothing was remembered or the error is another', async () => {
    const twice = changing('42703', 2, true);
    await expect(getRowsCount(ctx(twice.db), 'SUBJECT')).rejects.toBeInstanceOf(DatabaseStatementError);
    expect(twice.counts()).toEqual({ calls: 2, lookups: 2 });
    const fresh = changing('42703', 1, false);
    await expect(getRowsCount(ctx(fresh.db), 'SUBJECT')).rejects.toBeInstanceOf(DatabaseStatementError);
    expect(fresh.counts()).toEqual({ calls: 1, lookups: 1 });
    const other = changing('22012', 1, true);
    await expect(getRowsCount(ctx(other.db), 'SUBJECT')).rejects.toBeInstanceOf(DatabaseStatementError);
    expect(other.counts()).toEqual({ calls: 1, lookups: 1 });
  });
});

describe('Data API reads beyond the ERP (CONTRACT 4a): the SQL', () => {
  const PAIRS: DataSourceInfo = {
    schema: 'dbo',
    name: 'PAIRS',
    kind: 'table',
    columns: [
      { name: 'A', kind: 'int', dataType: 'int', ordinal: 1 },
      { name: 'B', kind: 'string', dataType: 'nvarchar', ordinal: 2 },
      { name: 'V', kind: 'int', dataType: 'int', ordinal: 3 },
    ],
    primaryKey: ['A', 'B'],
  };
  const cursors = { keys: [Buffer.alloc(32, 7)], tenant: 'alpha' };
  const withPairs = (dialect: SqlDialect, rows: Row[]) =>
    recordingDatabase(dialect, {
      answer: rows,
      findDataSource: async (_schema, name) =>
        [SUBJECT, VIEW, PAIRS].find((s) => s.name.toLowerCase() === name.toLowerCase()),
    });

  it('columns= selects the chosen columns and the primary key (to continue from), and answers only the chosen', async () => {
    for (const dialect of [mssqlDialect, embeddedDialect]) {
      const { db, statements } = withPairs(dialect, [{ V: 1, A: 1, B: 'x' }]);
      const answer = await getDataPaginate({ ...ctx(db), cursors }, 'PAIRS', {
        fromRow: '1',
        rows: '1',
        columns: 'v',
      });
      const q = dialect.quoteIdent;
      expect(statements[0]!.sql).toContain(
        `SELECT page_row.${q('V')}, page_row.${q('A')}, page_row.${q('B')} FROM`,
      );
      expect(answer.kind === 'inline' && JSON.parse(answer.body.toString())).toEqual({ PAIRS: [{ V: 1 }] });
      expect(answer.next).toEqual({ after: expect.stringMatching(/^[\w-]+\.[\w-]{22}$/) });
    }
  });

  it('a page by cursor is a seek after the key, with the key values and the page size as parameters', async () => {
    const first = withPairs(mssqlDialect, [{ A: 2, B: "o'k", V: 1 }]);
    const page = await getDataPaginate({ ...ctx(first.db), cursors }, 'PAIRS', { fromRow: '1', rows: '1' });
    const after = page.next && 'after' in page.next ? page.next.after : '';
    const ms = withPairs(mssqlDialect, []);
    await getDataPaginate({ ...ctx(ms.db), cursors }, 'PAIRS', { after, rows: '50' });
    expect(ms.statements[0]).toEqual({
      sql:
        'SELECT [A], [B], [V] FROM [dbo].[PAIRS] WHERE [A] >= @p1 AND (([A] > @p1) OR ([A] = @p1 AND [B] > @p2)) ' +
        'ORDER BY [A], [B] OFFSET 0 ROWS FETCH NEXT @p3 ROWS ONLY',
      params: [2, "o'k", 50],
    });
    const pg = withPairs(embeddedDialect, []);
    await getDataPaginate({ ...ctx(pg.db), cursors }, 'PAIRS', { after, rows: '50' });
    expect(pg.statements[0]).toEqual({
      sql: 'SELECT "A", "B", "V" FROM "dbo"."PAIRS" WHERE ("A", "B") > ($1, $2) ORDER BY "A", "B" FETCH FIRST $3 ROWS ONLY',
      params: [2, "o'k", 50],
    });
  });

  it('a cursor of another tenant, another source or another key order is refused before any read', async () => {
    const first = withPairs(mssqlDialect, [{ A: 2, B: 'x', V: 1 }]);
    const page = await getDataPaginate({ ...ctx(first.db), cursors }, 'PAIRS', { fromRow: '1', rows: '1' });
    const after = page.next && 'after' in page.next ? page.next.after : '';
    const attempts = [
      { cursors: { ...cursors, tenant: 'beta' }, source: 'PAIRS', hidden: undefined },
      { cursors: { ...cursors, keys: [Buffer.alloc(32, 8)] }, source: 'PAIRS', hidden: undefined },
      { cursors, source: 'SUBJECT', hidden: undefined },
      // A hidden key column: the source is ordered as one without a key, so no cursor is its own.
      { cursors, source: 'PAIRS', hidden: { PAIRS: ['b'] } },
    ];
    for (const attempt of attempts) {
      const { db, statements } = withPairs(mssqlDialect, []);
      await expect(
        getDataPaginate({ ...ctx(db), cursors: attempt.cursors, hidden: attempt.hidden }, attempt.source, {
          after,
          rows: '5',
        }),
      ).rejects.toMatchObject({ status: 400, code: 'invalid_cursor' });
      expect(statements).toEqual([]);
    }
  });

  it('hidden columns are never read, in any case of the registry entry; a hidden key orders by the visible columns', async () => {
    for (const dialect of [mssqlDialect, embeddedDialect]) {
      const { db, statements } = withPairs(dialect, [{ A: 1, V: 1 }]);
      const hidden = { 'dbo.pairs': ['b'] };
      const answer = await getDataPaginate({ ...ctx(db), cursors, hidden }, 'PAIRS', {
        fromRow: '1',
        rows: '1',
      });
      const q = dialect.quoteIdent;
      expect(statements[0]!.sql).not.toContain(q('B'));
      expect(statements[0]!.sql).toContain(`ORDER BY ${q('A')}, ${q('V')}`);
      // Without a key the next page is by row number.
      expect(answer.next).toEqual({ fromRow: 2 });
      await expect(getDataWithCondition({ ...ctx(db), hidden }, 'PAIRS', "B = 'x'")).rejects.toMatchObject({
        status: 400,
        code: 'invalid_condition',
      });
    }
  });

  it('a page with fewer rows than asked has no next page', async () => {
    const { db } = withPairs(mssqlDialect, [{ A: 1, B: 'x', V: 1 }]);
    const answer = await getDataPaginate({ ...ctx(db), cursors }, 'PAIRS', { fromRow: '1', rows: '2' });
    expect(answer.next).toBeUndefined();
  });
});
