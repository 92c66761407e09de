/** The Web API's tables and operation procedures (infra/sql/mssql/service/030-web-api.sql) in T-SQL. */
import type { Database, DatabaseStatementError } from '../../core/database.js';
import type { WebApiStore } from '../../core/web-api/store.js';
import {
  createSqlWebApiStore,
  procedureReference,
  type WebApiStatements,
} from '../sql-common/web-api-store.js';
import { BABELFISH_UNTRANSLATED, mssqlDialect } from './dialect.js';

const JOURNAL_COLUMNS = `ID AS id, APPLICATION_ID AS applicationId, VLTYP AS vltyp, STATE AS state,
    REQUEST AS request, ANSWER AS answer, ROW_NAME AS rowName, ATTEMPTS AS attempts`;

// The update takes over an expired row under its lock; a second insert of the same key fails on
// the primary key (2627/2601) and is the refusal. Atomic under concurrency. Parameters:
// application, request digest, hold seconds; sets @accepted. No SET NOCOUNT ON: the driver keeps
// the first result set anyway, and on Babelfish a SET in a parameterised batch outlives it on the
// pooled session, where NOCOUNT then swallows the OUTPUT rows of later inserts.
const CLAIM = `DECLARE @now datetime2(3) = SYSUTCDATETIME(), @accepted bit = 0;
    UPDATE dbo.WS_REPLAY_GUARD SET EXPIRES_AT = DATEADD(second, @p3, @now)
      WHERE APPLICATION_ID = @p1 AND REQUEST_DIGEST = @p2 AND EXPIRES_AT <= @now;
    IF @@ROWCOUNT = 1
      SET @accepted = 1;
    ELSE
    BEGIN
      BEGIN TRY
        INSERT INTO dbo.WS_REPLAY_GUARD (APPLICATION_ID, REQUEST_DIGEST, EXPIRES_AT)
          VALUES (@p1, @p2, DATEADD(second, @p3, @now));
        SET @accepted = 1;
      END TRY
      BEGIN CATCH
        IF ERROR_NUMBER() NOT IN (2627, 2601) THROW;
      END CATCH
    END`;

/**
 * `statements` in one transaction with XACT_ABORT on, then `after` (outside it): a client's
 * attention (a request time-out) then rolls the transaction back instead of leaving it open on the
 * pooled connection, which nothing would ever end (sp_reset_connection does not). SQL Server
 * restores the setting when the batch ends; the T-SQL engine (Babelfish) keeps it on the session,
 * so the batch restores it itself on every way out it controls. A transaction its statements doomed
 * (a refused claim, caught inside) is rolled back, as nothing was written; any other error rolls
 * everything back and is raised again. Declares `@id int` for the statements.
 */
const inOneTransaction = (
  statements: string,
  after: string,
) => `DECLARE @id int, @xactAbortWas int = @@OPTIONS & 16384;
    SET XACT_ABORT ON;
    BEGIN TRY
      BEGIN TRANSACTION;
      ${statements}
      IF XACT_STATE() = 1 COMMIT TRANSACTION;
      ELSE IF XACT_STATE() = -1 ROLLBACK TRANSACTION;
    END TRY
    BEGIN CATCH
      IF XACT_STATE() <> 0 ROLLBACK TRANSACTION;
      IF @xactAbortWas = 0 SET XACT_ABORT OFF;
      THROW;
    END CATCH
    IF @xactAbortWas = 0 SET XACT_ABORT OFF;
    ${after}`;

export const MSSQL_WEB_API_STATEMENTS: WebApiStatements = {
  findApplication: `SELECT ID AS id, API_KEY AS apiKey, API_HASH AS apiHash, AKTIVNI AS active
    FROM dbo.WS_APPLICATION WHERE API_KEY = @p1`,
  claimRequest: `${CLAIM}
    SELECT CAST(@accepted AS int) AS accepted;`,
  sweepReplayGuard: `DELETE TOP (1000) FROM dbo.WS_REPLAY_GUARD WHERE EXPIRES_AT < SYSUTCDATETIME()`,
  findOperation: `SELECT VLTYP AS vltyp, PROCEDURE_NAME AS [procedure], ROW_NAME AS rowName
    FROM dbo.WS_OPERATION WHERE VLTYP = @p1 AND AKTIVNI = 1`,
  // One batch, one round trip, one transaction: the journal row only when the claim was accepted
  // (else no rows), and no claim left behind when the journal row cannot be written, so that the
  // client's retry of the same signed request is taken rather than refused as a replay. One commit
  // is also one log flush instead of two. SCOPE_IDENTITY, not OUTPUT: the T-SQL engine (Babelfish)
  // drops OUTPUT rows in such a batch.
  claimAndOpenJournal: inOneTransaction(
    `${CLAIM}
      IF @accepted = 1
      BEGIN
        INSERT INTO dbo.WS_JOURNAL (APPLICATION_ID, VLTYP, CALL_MODE, REQUEST, REQUEST_ID)
          VALUES (@p1, @p4, @p5, @p6, @p7);
        SET @id = CAST(SCOPE_IDENTITY() AS int);
        INSERT INTO dbo.SVC_JOURNAL (JOURNAL_ID, TENANT, TRACE_ID) VALUES (@id, @p8, @p9);
      END`,
    'IF @id IS NOT NULL SELECT @id AS id;',
  ),
  // The journal row and whose call it is.
  openJournal: inOneTransaction(
    `INSERT INTO dbo.WS_JOURNAL (APPLICATION_ID, VLTYP, CALL_MODE, REQUEST, REQUEST_ID)
        VALUES (@p1, @p2, @p3, @p4, @p5);
      SET @id = CAST(SCOPE_IDENTITY() AS int);
      INSERT INTO dbo.SVC_JOURNAL (JOURNAL_ID, TENANT, TRACE_ID) VALUES (@id, @p6, @p7);`,
    'SELECT @id AS id;',
  ),
  finishJournal: `UPDATE dbo.WS_JOURNAL
    SET STATE = @p2, ANSWER = @p3, VL_RESULT = @p4, ROW_NAME = @p5, FINISHED_AT = SYSUTCDATETIME(),
        LEASE_UNTIL = NULL
    OUTPUT inserted.ID AS id
    WHERE ID = @p1 AND STATE = N'running'`,
  finishAttempt: `UPDATE dbo.WS_JOURNAL
    SET STATE = @p2, ANSWER = @p3, VL_RESULT = @p4, ROW_NAME = @p5, FINISHED_AT = SYSUTCDATETIME(),
        LEASE_UNTIL = NULL
    OUTPUT inserted.ID AS id
    WHERE ID = @p1 AND STATE = N'running' AND ATTEMPTS = @p6`,
  readJournal: `SELECT ${JOURNAL_COLUMNS},
      DATEDIFF_BIG(millisecond, CREATED_AT, SYSUTCDATETIME()) / 1000.0 AS ageSeconds,
      CASE WHEN LEASE_UNTIL > SYSUTCDATETIME() THEN 1 ELSE 0 END AS leaseHeld
    FROM dbo.WS_JOURNAL LEFT JOIN dbo.SVC_JOURNAL ON JOURNAL_ID = ID
    WHERE ID = @p1 AND (TENANT = @p2 OR JOURNAL_ID IS NULL)`,
  startAttempt: `UPDATE dbo.WS_JOURNAL
    SET ATTEMPTS = ATTEMPTS + 1, LEASE_UNTIL = DATEADD(second, @p2, SYSUTCDATETIME())
    OUTPUT inserted.ID AS id, inserted.APPLICATION_ID AS applicationId, inserted.VLTYP AS vltyp,
      inserted.STATE AS state, inserted.REQUEST AS request, inserted.ANSWER AS answer,
      inserted.ROW_NAME AS rowName, inserted.ATTEMPTS AS attempts,
      DATEDIFF_BIG(millisecond, inserted.CREATED_AT, SYSUTCDATETIME()) / 1000.0 AS ageSeconds
    WHERE ID = @p1 AND STATE = N'running' AND (LEASE_UNTIL IS NULL OR LEASE_UNTIL <= SYSUTCDATETIME())
      AND ATTEMPTS < @p3`,
  releaseJob: `UPDATE dbo.WS_JOURNAL SET LEASE_UNTIL = NULL
    WHERE ID = @p1 AND STATE = N'running' AND ATTEMPTS = @p2`,
  callOperation: (operation) =>
    `EXEC ${procedureReference(mssqlDialect.quoteIdent, operation.procedure)} @params = @p1`,
  // The save point in the call's own batch: one round trip, as outside a transaction.
  callInTransaction: (operation) =>
    `SAVE TRANSACTION svc_operation;
    EXEC ${procedureReference(mssqlDialect.quoteIdent, operation.procedure)} @params = @p1`,
  // A failure that doomed the transaction (XACT_ABORT, a severe error) cannot go back to it.
  backToSavepoint: `IF XACT_STATE() = 1 ROLLBACK TRANSACTION svc_operation;
    SELECT CASE WHEN XACT_STATE() = 1 THEN 1 ELSE 0 END AS usable`,
  // 266: the transaction count after EXECUTE differs from before (the procedure's ROLLBACK or COMMIT).
  endedTransaction: (error: DatabaseStatementError) => Number(error.dbCode) === 266,
  // THROW/RAISERROR with a user message number: the procedure's own words. The T-SQL engine's
  // number for a PostgreSQL error it passes through untranslated lies in that range too, but its
  // text is the engine's ("unsupported Unicode escape sequence"), never the procedure's.
  raisedByProcedure: (error: DatabaseStatementError) => {
    const number = Number(error.dbCode);
    return number >= 50000 && number !== BABELFISH_UNTRANSLATED;
  },
};

/** A tenant's Web API store on its SQL Server database. */
export function createMssqlWebApiStore(
  db: Pick<Database, 'query'> & Partial<Pick<Database, 'transaction'>>,
  tenant: string,
): WebApiStore {
  return createSqlWebApiStore(db, MSSQL_WEB_API_STATEMENTS, tenant);
}
