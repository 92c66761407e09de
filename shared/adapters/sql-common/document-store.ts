/**
 * The document store on table `dbo.SVCDOC`, shared by the SQL adapters: the call sequence and the
 * row mapping. No SQL text of either dialect lives here; each adapter passes its statements.
 */
import {
  type Database,
  DatabasePermissionError,
  DatabaseStatementError,
  type Row,
} from '../../core/database.js';
import {
  type DocumentStore,
  DocumentTransactionLostError,
  type NewStoredFile,
  type ProcedureName,
  type StoredFileInfo,
} from '../../core/files/document-store.js';

/** A dialect's statements of the document store and how its driver wants GUIDs and binaries. */
export interface DocumentStatements {
  /** Parameters: GUID, file name, content type, size, content. */
  readonly insert: string;
  /** By GUID (parameter 1): `fileGuid`, `fileName`, `contentType`, `size` and `sha256` (bytes or hex) of the content. */
  readonly find: string;
  /** By GUID (parameter 1): `content`. */
  readonly readContent: string;
  /** By GUID (parameter 1): `content`, parameter 3 bytes from the 1-based byte parameter 2. */
  readonly readContentSlice: string;
  /** One procedure of the catalogue by schema (parameter 1) and name (parameter 2), case-insensitively: `schema`, `name`. */
  readonly findProcedure: string;
  /** Calls a procedure with the GUID (parameter 1) as its only argument. */
  call(procedure: ProcedureName): string;
  /**
   * In the service's transaction: the statement that sets the save point the procedure's failure
   * goes back to, run before {@link callInTransaction} (none where that call sets it itself).
   */
  readonly savepoint?: string;
  /** In the service's transaction: calls the procedure (GUID as parameter 1) behind a save point. */
  callInTransaction(procedure: ProcedureName): string;
  /**
   * In the service's transaction, after the procedure failed: back to its save point. The
   * transaction can go on unless this fails or answers a row `usable` = 0 (the failure doomed it).
   */
  readonly backToSavepoint: string;
  /** A GUID parameter. */
  guid(value: string): unknown;
  /** A binary parameter. */
  binary(value: Buffer): unknown;
  /** A selected binary value as a Buffer. */
  toBuffer(value: unknown): Buffer;
}

/** A digest as lower-case hex, whether the driver gave bytes or text. */
function hexDigest(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  return String(value ?? '')
    .trim()
    .toLowerCase();
}

/** The document store of a database, in the statements of its dialect. */
export function createSqlDocumentStore(
  db: Pick<Database, 'query'>,
  sql: DocumentStatements,
  /** Bound to the service's transaction: procedures run behind a save point. */
  inTransaction = false,
): DocumentStore {
  return {
    async save(file: NewStoredFile) {
      await db.query(sql.insert, [
        sql.guid(file.fileGuid),
        file.fileName,
        file.contentType ?? null,
        file.size,
        sql.binary(file.content),
      ]);
    },

    async find(fileGuid) {
      const rows = await db.query(sql.find, [sql.guid(fileGuid)]);
      const row: Row | undefined = rows[0];
      if (!row) return undefined;
      const info: StoredFileInfo = {
        fileGuid: String(row.fileGuid).toUpperCase(),
        fileName: String(row.fileName ?? ''),
        contentType: typeof row.contentType === 'string' ? row.contentType.trim() : undefined,
        size: Number(row.size),
        sha256: hexDigest(row.sha256),
      };
      return info;
    },

    async readContent(fileGuid) {
      const rows = await db.query(sql.readContent, [sql.guid(fileGuid)]);
      return rows[0] ? sql.toBuffer(rows[0].content) : undefined;
    },

    async readContentSlice(fileGuid, offset, length) {
      const rows = await db.query(sql.readContentSlice, [sql.guid(fileGuid), offset + 1, length]);
      return rows[0] ? sql.toBuffer(rows[0].content) : Buffer.alloc(0);
    },

    async findProcedure(procedure: ProcedureName) {
      const rows = await db.query(sql.findProcedure, [procedure.schema, procedure.name]);
      const row = rows[0];
      return row ? { schema: String(row.schema), name: String(row.name) } : undefined;
    },

    async callProcedure(procedure, fileGuid) {
      if (!inTransaction) {
        await db.query(sql.call(procedure), [sql.guid(fileGuid)]);
        return;
      }
      if (sql.savepoint) await db.query(sql.savepoint);
      try {
        await db.query(sql.callInTransaction(procedure), [sql.guid(fileGuid)]);
      } catch (error) {
        if (!(error instanceof DatabaseStatementError || error instanceof DatabasePermissionError))
          throw error;
        // The procedure's writes go back to the save point; the SVCDOC row and the key's record
        // commit without them. A transaction the procedure ended, or its failure doomed, cannot.
        const usable = await db.query(sql.backToSavepoint).then(
          (rows) => rows[0]?.usable === undefined || Number(rows[0].usable) === 1,
          () => false,
        );
        if (!usable) {
          throw new DocumentTransactionLostError(
            `Procedure ${procedure.schema}.${procedure.name} ended the service's transaction`,
            { cause: error },
          );
        }
        throw error;
      }
    },

    within: (tx) => createSqlDocumentStore(tx as Pick<Database, 'query'>, sql, true),
  };
}
