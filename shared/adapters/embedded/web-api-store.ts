/** The Web API's tables and operation procedures (infra/sql/embedded/030-web-api.sql) in PostgreSQL. */
import type { Database, DatabaseStatementError } from '../../core/database.js';
import type { WebApiStore } from '../../core/web-api/store.js';
import {
  createSqlWebApiStore,
  procedureReference,
  type WebApiStatements,
} from '../sql-common/web-api-store.js';
import { embeddedDialect } from './dialect.js';

const JOURNAL_COLUMNS = `"ID" AS "id", "APPLICATION_ID" AS "applicationId", "VLTYP" AS "vltyp", "STATE" AS "state",
    "REQUEST" AS "request", "ANSWER" AS "answer", "ROW_NAME" AS "rowName", "ATTEMPTS" AS "attempts"`;

const NOW = `(now() AT TIME ZONE 'utc')`;

// A live row of the same request wins; an expired one is taken over. Atomic under concurrency.
// Parameters: application, request digest, hold seconds.
const CLAIM = `INSERT INTO dbo."WS_REPLAY_GUARD" ("APPLICATION_ID", "REQUEST_DIGEST", "EXPIRES_AT")
    VALUES ($1, $2, ${NOW} + make_interval(secs => $3))
    ON CONFLICT ("APPLICATION_ID", "REQUEST_DIGEST") DO UPDATE SET "EXPIRES_AT" = EXCLUDED."EXPIRES_AT"
      WHERE dbo."WS_REPLAY_GUARD"."EXPIRES_AT" <= ${NOW}`;

export const EMBEDDED_WEB_API_STATEMENTS: WebApiStatements = {
  findApplication: `SELECT "ID" AS "id", "API_KEY" AS "apiKey", "API_HASH" AS "apiHash", "AKTIVNI" AS "active"
    FROM dbo."WS_APPLICATION" WHERE "API_KEY" = $1`,
  claimRequest: `${CLAIM} RETURNING 1 AS "accepted"`,
  sweepReplayGuard: `DELETE FROM dbo."WS_REPLAY_GUARD" WHERE "EXPIRES_AT" < ${NOW}`,
  findOperation: `SELECT "VLTYP" AS "vltyp", "PROCEDURE_NAME" AS "procedure", "ROW_NAME" AS "rowName"
    FROM dbo."WS_OPERATION" WHERE "VLTYP" = $1 AND "AKTIVNI" = 1`,
  // The journal row and whose call it is, one statement.
  openJournal: `WITH "journal" AS (
      INSERT INTO dbo."WS_JOURNAL" ("APPLICATION_ID", "VLTYP", "CALL_MODE", "REQUEST", "REQUEST_ID")
      VALUES ($1, $2, $3, $4, $5) RETURNING "ID")
    INSERT INTO dbo."SVC_JOURNAL" ("JOURNAL_ID", "TENANT", "TRACE_ID") SELECT "ID", $6, $7 FROM "journal"
    RETURNING "JOURNAL_ID"::int AS "id"`,
  // The journal row is inserted only from the claim's own row: no claim, no journal, one statement.
  claimAndOpenJournal: `WITH "claim" AS (${CLAIM} RETURNING "APPLICATION_ID"),
    "journal" AS (
      INSERT INTO dbo."WS_JOURNAL" ("APPLICATION_ID", "VLTYP", "CALL_MODE", "REQUEST", "REQUEST_ID")
      SELECT "APPLICATION_ID", $4::int, $5::varchar, $6::text, $7::varchar FROM "claim"
      RETURNING "ID")
    INSERT INTO dbo."SVC_JOURNAL" ("JOURNAL_ID", "TENANT", "TRACE_ID") SELECT "ID", $8, $9 FROM "journal"
    RETURNING "JOURNAL_ID"::int AS "id"`,
  finishJournal: `UPDATE dbo."WS_JOURNAL"
    SET "STATE" = $2, "ANSWER" = $3, "VL_RESULT" = $4, "ROW_NAME" = $5, "FINISHED_AT" = ${NOW},
        "LEASE_UNTIL" = NULL
    WHERE "ID" = $1 AND "STATE" = 'running' RETURNING "ID" AS "id"`,
  finishAttempt: `UPDATE dbo."WS_JOURNAL"
    SET "STATE" = $2, "ANSWER" = $3, "VL_RESULT" = $4, "ROW_NAME" = $5, "FINISHED_AT" = ${NOW},
        "LEASE_UNTIL" = NULL
    WHERE "ID" = $1 AND "STATE" = 'running' AND "ATTEMPTS" = $6 RETURNING "ID" AS "id"`,
  readJournal: `SELECT ${JOURNAL_COLUMNS},
      EXTRACT(EPOCH FROM (${NOW} - "CREATED_AT")) AS "ageSeconds",
      COALESCE("LEASE_UNTIL" > ${NOW}, false) AS "leaseHeld"
    FROM dbo."WS_JOURNAL" LEFT JOIN dbo."SVC_JOURNAL" ON "JOURNAL_ID" = "ID"
    WHERE "ID" = $1 AND ("TENANT" = $2 OR "JOURNAL_ID" IS NULL)`,
  startAttempt: `UPDATE dbo."WS_JOURNAL"
    SET "ATTEMPTS" = "ATTEMPTS" + 1, "LEASE_UNTIL" = ${NOW} + make_interval(secs => $2)
    WHERE "ID" = $1 AND "STATE" = 'running' AND ("LEASE_UNTIL" IS NULL OR "LEASE_UNTIL" <= ${NOW})
      AND "ATTEMPTS" < $3
    RETURNING ${JOURNAL_COLUMNS}, EXTRACT(EPOCH FROM (${NOW} - "CREATED_AT")) AS "ageSeconds"`,
  releaseJob: `UPDATE dbo."WS_JOURNAL" SET "LEASE_UNTIL" = NULL
    WHERE "ID" = $1 AND "STATE" = 'running' AND "ATTEMPTS" = $2`,
  callOperation: (operation) =>
    `SELECT * FROM ${procedureReference(embeddedDialect.quoteIdent, operation.procedure)}($1::jsonb)`,
  savepoint: 'SAVEPOINT svc_operation',
  callInTransaction: (operation) =>
    `SELECT * FROM ${procedureReference(embeddedDialect.quoteIdent, operation.procedure)}($1::jsonb)`,
  backToSavepoint: 'ROLLBACK TO SAVEPOINT svc_operation',
  // 2D000 "invalid transaction termination": a function's COMMIT or ROLLBACK (PostgreSQL lets no
  // function end the transaction it runs in; what comes closest to a procedure that does).
  endedTransaction: (error: DatabaseStatementError) => error.dbCode === '2D000',
  // RAISE EXCEPTION without an SQLSTATE: the procedure's own words.
  raisedByProcedure: (error: DatabaseStatementError) => error.dbCode === 'P0001',
};

/** A tenant's Web API store on the embedded database. */
export function createEmbeddedWebApiStore(
  db: Pick<Database, 'query'> & Partial<Pick<Database, 'transaction'>>,
  tenant: string,
): WebApiStore {
  return createSqlWebApiStore(db, EMBEDDED_WEB_API_STATEMENTS, tenant);
}
