import { createHash, timingSafeEqual } from 'node:crypto';
import { type Database, DatabaseStatementError, type Row, type SqlDialectName } from '../database.js';
import { parseQualifiedName } from '../sql-names.js';
import type { ParamObject } from './envelope.js';
import {
  type Application,
  type JournalEntry,
  type JournalState,
  type Operation,
  OperationFailedError,
  type WebApiStore,
} from './store.js';

/**
 * The Web API store over the database port: `WS_APPLICATION`, `WS_OPERATION`, `WS_JOURNAL` and
 * `WS_REPLAY_GUARD` (infra/sql/*\/030-web-api.sql). Times come from the database's clock, so
 * that every Lambda agrees on them.
 */

const JOURNAL_COLUMNS = {
  postgres: `"ID" AS "id", "APPLICATION_ID" AS "applicationId", "VLTYP" AS "vltyp", "STATE" AS "state",
    "REQUEST" AS "request", "ANSWER" AS "answer", "ROW_NAME" AS "rowName", "ATTEMPTS" AS "attempts"`,
  mssql: `ID AS id, APPLICATION_ID AS applicationId, VLTYP AS vltyp, STATE AS state,
    REQUEST AS request, ANSWER AS answer, ROW_NAME AS rowName, ATTEMPTS AS attempts`,
};

const NOW = { postgres: `(now() AT TIME ZONE 'utc')`, mssql: 'SYSUTCDATETIME()' };

type Statement =
  | 'findApplication'
  | 'claimRequest'
  | 'sweepReplayGuard'
  | 'findOperation'
  | 'openJournal'
  | 'finishJournal'
  | 'readJournal'
  | 'startAttempt'
  | 'releaseJob';

const STATEMENTS: Record<SqlDialectName, Record<Statement, string>> = {
  postgres: {
    findApplication: `SELECT "ID" AS "id", "API_KEY" AS "apiKey", "API_HASH" AS "apiHash", "AKTIVNI" AS "active"
      FROM dbo."WS_APPLICATION" WHERE "API_KEY" = $1`,
    // A live row of the same request wins; an expired one is taken over. Atomic under concurrency.
    claimRequest: `INSERT INTO dbo."WS_REPLAY_GUARD" ("APPLICATION_ID", "REQUEST_DIGEST", "EXPIRES_AT")
      VALUES ($1, $2, ${NOW.postgres} + make_interval(secs => $3))
      ON CONFLICT ("APPLICATION_ID", "REQUEST_DIGEST") DO UPDATE SET "EXPIRES_AT" = EXCLUDED."EXPIRES_AT"
        WHERE dbo."WS_REPLAY_GUARD"."EXPIRES_AT" <= ${NOW.postgres}
      RETURNING 1 AS "accepted"`,
    sweepReplayGuard: `DELETE FROM dbo."WS_REPLAY_GUARD" WHERE "EXPIRES_AT" < ${NOW.postgres}`,
    findOperation: `SELECT "VLTYP" AS "vltyp", "PROCEDURE_NAME" AS "procedure", "ROW_NAME" AS "rowName"
      FROM dbo."WS_OPERATION" WHERE "VLTYP" = $1 AND "AKTIVNI" = 1`,
    openJournal: `INSERT INTO dbo."WS_JOURNAL" ("APPLICATION_ID", "VLTYP", "CALL_MODE", "REQUEST", "REQUEST_ID")
      VALUES ($1, $2, $3, $4, $5) RETURNING "ID" AS "id"`,
    finishJournal: `UPDATE dbo."WS_JOURNAL"
      SET "STATE" = $2, "ANSWER" = $3, "VL_RESULT" = $4, "ROW_NAME" = $5, "FINISHED_AT" = ${NOW.postgres},
          "LEASE_UNTIL" = NULL
      WHERE "ID" = $1 AND "STATE" = 'running' RETURNING "ID" AS "id"`,
    readJournal: `SELECT ${JOURNAL_COLUMNS.postgres},
        EXTRACT(EPOCH FROM (${NOW.postgres} - "CREATED_AT")) AS "ageSeconds"
      FROM dbo."WS_JOURNAL" WHERE "ID" = $1`,
    startAttempt: `UPDATE dbo."WS_JOURNAL"
      SET "ATTEMPTS" = "ATTEMPTS" + 1, "LEASE_UNTIL" = ${NOW.postgres} + make_interval(secs => $2)
      WHERE "ID" = $1 AND "STATE" = 'running' AND ("LEASE_UNTIL" IS NULL OR "LEASE_UNTIL" <= ${NOW.postgres})
      RETURNING ${JOURNAL_COLUMNS.postgres}, EXTRACT(EPOCH FROM (${NOW.postgres} - "CREATED_AT")) AS "ageSeconds"`,
    releaseJob: `UPDATE dbo."WS_JOURNAL" SET "LEASE_UNTIL" = NULL WHERE "ID" = $1 AND "STATE" = 'running'`,
  },
  mssql: {
    findApplication: `SELECT ID AS id, API_KEY AS apiKey, API_HASH AS apiHash, AKTIVNI AS active
      FROM dbo.WS_APPLICATION WHERE API_KEY = @p1`,
    // The update takes over an expired row under its lock; a second insert of the same key fails
    // on the primary key (2627/2601) and is the refusal. Atomic under concurrency.
    claimRequest: `SET NOCOUNT ON;
      DECLARE @now datetime2(3) = SYSUTCDATETIME();
      UPDATE dbo.WS_REPLAY_GUARD SET EXPIRES_AT = DATEADD(second, @p3, @now)
        WHERE APPLICATION_ID = @p1 AND REQUEST_DIGEST = @p2 AND EXPIRES_AT <= @now;
      IF @@ROWCOUNT = 1
        SELECT 1 AS accepted;
      ELSE
      BEGIN
        BEGIN TRY
          INSERT INTO dbo.WS_REPLAY_GUARD (APPLICATION_ID, REQUEST_DIGEST, EXPIRES_AT)
            VALUES (@p1, @p2, DATEADD(second, @p3, @now));
          SELECT 1 AS accepted;
        END TRY
        BEGIN CATCH
          IF ERROR_NUMBER() IN (2627, 2601) SELECT 0 AS accepted;
          ELSE THROW;
        END CATCH
      END`,
    sweepReplayGuard: `DELETE TOP (1000) FROM dbo.WS_REPLAY_GUARD WHERE EXPIRES_AT < SYSUTCDATETIME()`,
    findOperation: `SELECT VLTYP AS vltyp, PROCEDURE_NAME AS [procedure], ROW_NAME AS rowName
      FROM dbo.WS_OPERATION WHERE VLTYP = @p1 AND AKTIVNI = 1`,
    openJournal: `INSERT INTO dbo.WS_JOURNAL (APPLICATION_ID, VLTYP, CALL_MODE, REQUEST, REQUEST_ID)
      OUTPUT inserted.ID AS id VALUES (@p1, @p2, @p3, @p4, @p5)`,
    finishJournal: `UPDATE dbo.WS_JOURNAL
      SET STATE = @p2, ANSWER = @p3, VL_RESULT = @p4, ROW_NAME = @p5, FINISHED_AT = SYSUTCDATETIME(),
          LEASE_UNTIL = NULL
      OUTPUT inserted.ID AS id
      WHERE ID = @p1 AND STATE = N'running'`,
    readJournal: `SELECT ${JOURNAL_COLUMNS.mssql},
        DATEDIFF_BIG(millisecond, CREATED_AT, SYSUTCDATETIME()) / 1000.0 AS ageSeconds
      FROM dbo.WS_JOURNAL WHERE ID = @p1`,
    startAttempt: `UPDATE dbo.WS_JOURNAL
      SET ATTEMPTS = ATTEMPTS + 1, LEASE_UNTIL = DATEADD(second, @p2, SYSUTCDATETIME())
      OUTPUT inserted.ID AS id, inserted.APPLICATION_ID AS applicationId, inserted.VLTYP AS vltyp,
        inserted.STATE AS state, inserted.REQUEST AS request, inserted.ANSWER AS answer,
        inserted.ROW_NAME AS rowName, inserted.ATTEMPTS AS attempts,
        DATEDIFF_BIG(millisecond, inserted.CREATED_AT, SYSUTCDATETIME()) / 1000.0 AS ageSeconds
      WHERE ID = @p1 AND STATE = N'running' AND (LEASE_UNTIL IS NULL OR LEASE_UNTIL <= SYSUTCDATETIME())`,
    releaseJob: `UPDATE dbo.WS_JOURNAL SET LEASE_UNTIL = NULL WHERE ID = @p1 AND STATE = N'running'`,
  },
};

/** Expired replay rows are swept on every this many claims of a process. */
const SWEEP_EVERY = 100;

/** Splits and checks `schema.NAME`: names come from a trusted table, but still never reach SQL unchecked. */
export function procedureReference(db: Pick<Database, 'dialect'>, procedure: string): string {
  const parsed = parseQualifiedName(procedure.trim());
  if (!parsed) {
    throw new Error(`WS_OPERATION.PROCEDURE_NAME "${procedure.slice(0, 140)}" is not NAME or schema.NAME`);
  }
  return `${db.dialect.quoteIdent(parsed.schema ?? 'dbo')}.${db.dialect.quoteIdent(parsed.name)}`;
}

/** Whether a failed statement carries a message the procedure raised on purpose (safe to show the caller). */
function raisedByProcedure(dialect: SqlDialectName, error: DatabaseStatementError): boolean {
  // PostgreSQL: RAISE EXCEPTION without an SQLSTATE; SQL Server: THROW/RAISERROR with a user message number.
  return dialect === 'postgres' ? error.dbCode === 'P0001' : Number(error.dbCode) >= 50000;
}

function sameKey(a: string, b: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}

function toJournalEntry(row: Row): JournalEntry {
  return {
    id: Number(row.id),
    applicationId: Number(row.applicationId),
    vltyp: Number(row.vltyp),
    state: String(row.state) as JournalState,
    request: String(row.request),
    answer: row.answer === null || row.answer === undefined ? undefined : String(row.answer),
    rowName: row.rowName === null || row.rowName === undefined ? undefined : String(row.rowName),
    attempts: Number(row.attempts),
    ageSeconds: Number(row.ageSeconds),
  };
}

let claims = 0;

/** The Web API store on a tenant database (SQL Server or the embedded PostgreSQL). */
export function createSqlWebApiStore(db: Database): WebApiStore {
  const dialect = db.dialect.name;
  const sql = STATEMENTS[dialect];

  return {
    async findApplication(apiKey) {
      const row = (await db.query(sql.findApplication, [apiKey]))[0];
      // SQL Server compares case-insensitively; the key itself must match exactly.
      if (!row || !sameKey(String(row.apiKey), apiKey)) return undefined;
      return {
        id: Number(row.id),
        apiHash: String(row.apiHash),
        active: Number(row.active) === 1,
      } satisfies Application;
    },

    async claimRequest(applicationId, requestDigest, holdSeconds) {
      const rows = await db.query(sql.claimRequest, [applicationId, requestDigest, holdSeconds]);
      const accepted = rows.length > 0 && Number(rows[0]!.accepted) === 1;
      if (accepted && claims++ % SWEEP_EVERY === 0) {
        // Housekeeping only: a failed sweep must not fail the call.
        await db.query(sql.sweepReplayGuard).catch(() => undefined);
      }
      return accepted;
    },

    async findOperation(vltyp) {
      const row = (await db.query(sql.findOperation, [vltyp]))[0];
      if (!row) return undefined;
      return { vltyp: Number(row.vltyp), procedure: String(row.procedure), rowName: String(row.rowName) };
    },

    async callOperation(operation: Operation, params: readonly ParamObject[]) {
      const target = procedureReference(db, operation.procedure);
      const statement =
        dialect === 'postgres' ? `SELECT * FROM ${target}($1::jsonb)` : `EXEC ${target} @params = @p1`;
      try {
        return await db.query(statement, [JSON.stringify(params)]);
      } catch (error) {
        if (!(error instanceof DatabaseStatementError)) throw error;
        const own = raisedByProcedure(dialect, error) ? error.message.slice(0, 1000) : undefined;
        throw new OperationFailedError(`Operation ${operation.vltyp} failed: ${error.message}`, own, {
          cause: error,
        });
      }
    },

    async openJournal(opening) {
      const rows = await db.query(sql.openJournal, [
        opening.applicationId,
        opening.vltyp,
        opening.mode,
        opening.request,
        opening.requestId.slice(0, 100),
      ]);
      return Number(rows[0]!.id);
    },

    async finishJournal(id, outcome) {
      const rows = await db.query(sql.finishJournal, [
        id,
        outcome.state,
        outcome.answer,
        outcome.vlResult,
        outcome.rowName ?? null,
      ]);
      return rows.length > 0;
    },

    async readJournal(id) {
      const row = (await db.query(sql.readJournal, [id]))[0];
      return row ? toJournalEntry(row) : undefined;
    },

    async startAttempt(id, leaseSeconds) {
      const row = (await db.query(sql.startAttempt, [id, leaseSeconds]))[0];
      return row ? toJournalEntry(row) : undefined;
    },

    async releaseJob(id) {
      await db.query(sql.releaseJob, [id]);
    },
  };
}
