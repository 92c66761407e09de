import { describe, expect, it } from 'vitest';
import { mssqlDialect } from '../../shared/adapters/mssql/dialect.js';
import { createMssqlDocumentStore } from '../../shared/adapters/mssql/document-store.js';
import { sqlTypeOf } from '../../shared/adapters/mssql/types.js';
import type { Row } from '../../shared/core/database.js';
import { recordingDatabase } from '../support/recording-database.js';

/** A SQL Server database that records statements and answers with `rows`. */
const recordingMssql = (rows: Row[] = []) => recordingDatabase(mssqlDialect, { answer: rows });

/** The SQL Server type the adapter binds a parameter as (`UniqueIdentifier`, `VarBinary`, ...). */
const boundType = (param: unknown) =>
  (sqlTypeOf(param)[0] as unknown as { type: { declaration: string } }).type.declaration;

const GUID = '0D4B5C5E-AAAA-4BBB-8CCC-123456789ABC';

describe('Function: createMssqlDocumentStore', () => {
  it('inserts into [dbo].[SVCDOC] with a uniqueidentifier and a varbinary(max) parameter', async () => {
    const { db, statements } = recordingMssql();
    const content = Buffer.from([0, 1, 255]);
    await createMssqlDocumentStore(db).save({
      fileGuid: GUID,
      fileName: 'a.bin',
      contentType: undefined,
      size: 3,
      sha256: 'f'.repeat(64),
      content,
    });
    const [{ sql, params }] = statements as [(typeof statements)[0]];
    expect(sql.replace(/\s+/g, ' ')).toBe(
      'INSERT INTO [dbo].[SVCDOC] ([FILEGUID], [FILENAME], [CONTENT_TYPE], [SIZE_BYTES], [CONTENT]) VALUES (@p1, @p2, @p3, @p4, @p5)',
    );
    // No column of the service's own on the ERP's table (CONTRACT.md section 7): no hash is stored.
    expect(params.map(boundType)).toEqual(['uniqueidentifier', 'nvarchar', 'nvarchar', 'int', 'varbinary']);
    expect(sqlTypeOf(params[0])[1]).toBe(GUID);
    expect(sqlTypeOf(params[4])[1]).toBe(content);
    expect(params[2]).toBeNull();
  });

  it('measures the size with DATALENGTH, hashes the content with HASHBYTES and looks the GUID up as uniqueidentifier', async () => {
    const { db, statements } = recordingMssql([
      {
        fileGuid: GUID,
        fileName: 'a.bin',
        contentType: 'text/plain ',
        size: 3,
        sha256: Buffer.alloc(32, 0xff),
      },
    ]);
    expect(await createMssqlDocumentStore(db).find(GUID)).toEqual({
      fileGuid: GUID,
      fileName: 'a.bin',
      contentType: 'text/plain',
      size: 3,
      sha256: 'f'.repeat(64),
    });
    expect(statements[0]!.sql).toContain('DATALENGTH([CONTENT]) AS [size]');
    expect(statements[0]!.sql).toContain("HASHBYTES('SHA2_256', [CONTENT]) AS [sha256]");
    expect(statements[0]!.sql).toContain('WHERE [FILEGUID] = @p1');
    expect(boundType(statements[0]!.params[0])).toBe('uniqueidentifier');
  });

  it('reads a slice with SUBSTRING counting from 1', async () => {
    const { db, statements } = recordingMssql([{ content: Buffer.from('bc') }]);
    expect(await createMssqlDocumentStore(db).readContentSlice(GUID, 1, 2)).toEqual(Buffer.from('bc'));
    expect(statements[0]!.sql).toContain('SUBSTRING([CONTENT], @p2, @p3)');
    expect(statements[0]!.params.slice(1)).toEqual([2, 2]);
  });

  it('finds a procedure in sys.procedures and EXECs it, bracket-quoted, with a uniqueidentifier', async () => {
    const { db, statements } = recordingMssql([{ schema: 'dbo', name: 'DEMO_FILE_RECEIVED' }]);
    const store = createMssqlDocumentStore(db);
    const found = await store.findProcedure({ schema: 'dbo', name: 'demo_file_received' });
    expect(found).toEqual({ schema: 'dbo', name: 'DEMO_FILE_RECEIVED' });
    expect(statements[0]!.sql).toContain('FROM sys.procedures');
    expect(statements[0]!.params).toEqual(['dbo', 'demo_file_received']);
    await store.callProcedure({ schema: 'dbo', name: 'odd]name' }, GUID);
    expect(statements[1]!.sql).toBe('EXEC [dbo].[odd]]name] @p1');
    expect(boundType(statements[1]!.params[0])).toBe('uniqueidentifier');
  });
});
