/** The keys' records of CONTRACT 5a (infra/sql/embedded/090-idempotency.sql) on the embedded database. */
import type { Database } from '../../core/database.js';
import type { IdempotencyStore } from '../../core/idempotency.js';
import { processWide } from '../../core/process-wide.js';
import { createSqlIdempotencyStore, type IdempotencyStatements } from '../sql-common/idempotency-store.js';

const RECORD_COLUMNS = `"FINGERPRINT" AS fingerprint, "HTTP_STATUS" AS status, "CONTENT_TYPE" AS "contentType",
    "HEADERS" AS headers, "BODY" AS body, "OBJECT_KEY" AS "objectKey", "JOURNAL_ID" AS "journalId"`;

const NOW = `(now() AT TIME ZONE 'utc')`;

export const EMBEDDED_IDEMPOTENCY_STATEMENTS: IdempotencyStatements = {
  find: `SELECT ${RECORD_COLUMNS} FROM dbo."SVC_IDEMPOTENCY"
    WHERE "KEY_DIGEST" = $1 AND "EXPIRES_AT" > ${NOW}`,
  // The key is held, so the only row there can be is an expired one: replaced.
  record: `INSERT INTO dbo."SVC_IDEMPOTENCY" ("KEY_DIGEST", "TENANT", "FINGERPRINT", "HTTP_STATUS", "CONTENT_TYPE",
      "HEADERS", "BODY", "OBJECT_KEY", "JOURNAL_ID", "EXPIRES_AT")
    VALUES ($1, $2, $3, $4, $5, $6, decode($7, 'base64'), $8, $9, ${NOW} + make_interval(hours => $10::int))
    ON CONFLICT ("KEY_DIGEST") DO UPDATE SET "TENANT" = EXCLUDED."TENANT", "FINGERPRINT" = EXCLUDED."FINGERPRINT",
      "HTTP_STATUS" = EXCLUDED."HTTP_STATUS", "CONTENT_TYPE" = EXCLUDED."CONTENT_TYPE", "HEADERS" = EXCLUDED."HEADERS",
      "BODY" = EXCLUDED."BODY", "OBJECT_KEY" = EXCLUDED."OBJECT_KEY", "JOURNAL_ID" = EXCLUDED."JOURNAL_ID",
      "CREATED_AT" = ${NOW}, "EXPIRES_AT" = EXCLUDED."EXPIRES_AT"`,
  forget: `DELETE FROM dbo."SVC_IDEMPOTENCY" WHERE "KEY_DIGEST" = $1`,
  // As text, decoded by the statement: a statement with a bytes parameter is parsed and planned on
  // every run (prepared-statements.ts), a keyed call's most costly statement.
  bodyParameter: (body) => body.toString('base64'),
};

/** The keys held by calls of this process: the one process that reaches the embedded database. */
const heldInProcess = processWide('embedded-idempotency-keys', () => new Set<string>());

/** A tenant's keys' records on the embedded database. */
export function createEmbeddedIdempotencyStore(db: Database, tenant: string): IdempotencyStore {
  return createSqlIdempotencyStore(db, EMBEDDED_IDEMPOTENCY_STATEMENTS, { heldInProcess }, tenant);
}
