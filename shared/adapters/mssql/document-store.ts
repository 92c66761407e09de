/** The document store (`dbo.SVCDOC`, `setFile` procedures) in T-SQL. */
import type { Database } from '../../core/database.js';
import type { DocumentStore } from '../../core/files/document-store.js';
import { createSqlDocumentStore, type DocumentStatements } from '../sql-common/document-store.js';
import { mssqlDialect } from './dialect.js';

/** Content that came back as something else than bytes. */
class NotBinaryContentError extends TypeError {
  override readonly name = 'NotBinaryContentError';
}

function driverBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new NotBinaryContentError('The database returned file content that is not binary');
}

const q = mssqlDialect.quoteIdent;

export const MSSQL_DOCUMENT_STATEMENTS: DocumentStatements = {
  insert: `INSERT INTO [dbo].[SVCDOC] ([FILEGUID], [FILENAME], [CONTENT_TYPE], [SIZE_BYTES], [CONTENT])
    VALUES (@p1, @p2, @p3, @p4, @p5)`,
  // SVCDOC is the ERP's table and gets no column of ours: the ETag's hash is computed from the
  // content, in the server (HASHBYTES takes varbinary(max) from SQL Server 2016 on), so that no
  // byte of a file crosses the network for an answer 304.
  find: `SELECT [FILEGUID] AS [fileGuid], [FILENAME] AS [fileName],
      [CONTENT_TYPE] AS [contentType], DATALENGTH([CONTENT]) AS [size],
      HASHBYTES('SHA2_256', [CONTENT]) AS [sha256]
    FROM [dbo].[SVCDOC] WHERE [FILEGUID] = @p1`,
  readContent: `SELECT [CONTENT] AS [content] FROM [dbo].[SVCDOC] WHERE [FILEGUID] = @p1`,
  // SUBSTRING counts from 1.
  readContentSlice: `SELECT SUBSTRING([CONTENT], @p2, @p3) AS [content]
    FROM [dbo].[SVCDOC] WHERE [FILEGUID] = @p1`,
  // LOWER() on both sides: the lookup stays case-insensitive under a case-sensitive collation.
  findProcedure: `SELECT TOP (1) s.name AS [schema], p.name AS [name]
      FROM sys.procedures AS p
      JOIN sys.schemas AS s ON s.schema_id = p.schema_id
     WHERE LOWER(s.name) = LOWER(@p1) AND LOWER(p.name) = LOWER(@p2)
     ORDER BY CASE WHEN s.name = @p1 AND p.name = @p2 THEN 0 ELSE 1 END, s.name, p.name`,
  call: (procedure) => `EXEC ${q(procedure.schema)}.${q(procedure.name)} @p1`,
  // The save point in the call's own batch: one round trip, as outside a transaction.
  callInTransaction: (procedure) => `SAVE TRANSACTION svc_file_procedure;
    EXEC ${q(procedure.schema)}.${q(procedure.name)} @p1`,
  // A failure that doomed the transaction (XACT_ABORT, a severe error) or a procedure's own
  // ROLLBACK or COMMIT (266) leaves nothing to go back to.
  backToSavepoint: `IF XACT_STATE() = 1 ROLLBACK TRANSACTION svc_file_procedure;
    SELECT CASE WHEN XACT_STATE() = 1 AND @@TRANCOUNT > 0 THEN 1 ELSE 0 END AS usable`,
  // Typed, or SQL Server compares the GUID as nvarchar.
  guid: (value) => ({ type: 'uniqueidentifier', value }),
  binary: (value) => ({ type: 'varbinary', value }),
  toBuffer: driverBuffer,
};

/** The document store on table `dbo.SVCDOC` of a SQL Server database. */
export function createMssqlDocumentStore(db: Pick<Database, 'query'>, inTransaction = false): DocumentStore {
  const store = createSqlDocumentStore(db, MSSQL_DOCUMENT_STATEMENTS, inTransaction);
  return {
    ...store,
    async readContentSlice(fileGuid, offset, length) {
      try {
        return await store.readContentSlice(fileGuid, offset, length);
      } catch (error) {
        if (!(error instanceof NotBinaryContentError)) throw error;
        // SQL Server's SUBSTRING of varbinary is bytes. Babelfish (the T-SQL engine of the tests)
        // computes it on the value's hex text and answers text, and no T-SQL both accept slices
        // bytes (docs/sql-server.md, "Verified where"): there the slice is cut from the whole content.
        const whole = await store.readContent(fileGuid);
        return whole ? whole.subarray(offset, offset + length) : Buffer.alloc(0);
      }
    },
    within: (tx) => createMssqlDocumentStore(tx as Pick<Database, 'query'>, true),
  };
}
