/** The webhook admin's statements (infra/sql/embedded/040-webhook.sql) in PostgreSQL. */
import type { Database } from '../../core/database.js';
import type { WebhookAdminStore } from '../../core/webhook/admin.js';
import {
  createSqlWebhookAdminStore,
  type WebhookAdminStatements,
} from '../sql-common/webhook-admin-store.js';

export const EMBEDDED_WEBHOOK_ADMIN_STATEMENTS: WebhookAdminStatements = {
  findEvent: `SELECT "SUBJECT_ID" AS "subjectId", "DOCUMENT_ID" AS "documentId"
    FROM "dbo"."WEBHOOK_DELIVERY" WHERE "EVENT_ID" = $1 AND "TENANT" = $2 ORDER BY "ID" DESC LIMIT 1`,
  eventsToRecover: `SELECT "EVENT_ID" AS "eventId", "SUBJECT_ID" AS "subjectId",
      "DOCUMENT_ID" AS "documentId", "OUTCOME" AS "lastOutcome", "ATTEMPTED_AT" AS "lastAttemptAt",
      "ID" AS "rowId"
    FROM (
      SELECT "EVENT_ID", "SUBJECT_ID", "DOCUMENT_ID", "OUTCOME", "ATTEMPTED_AT", "ID",
        ROW_NUMBER() OVER (PARTITION BY "EVENT_ID" ORDER BY "ID" DESC) AS "newest"
      FROM "dbo"."WEBHOOK_DELIVERY"
      WHERE "ATTEMPTED_AT" >= $1::timestamp(3) AND "TENANT" = $4 AND ($2::int = 0 OR "SUBJECT_ID" = $2::int)
    ) AS "last"
    WHERE "newest" = 1 AND "OUTCOME" IN ('failed', 'disabled')
    ORDER BY "ID"
    LIMIT $3`,
  subjectState: `SELECT "s"."WEBHOOK_URL" AS "webhookUrl", "e"."SUBJECT_ID" AS "endpointSubjectId",
      "e"."DISABLED_AT" AS "disabledAt", "e"."ENABLED_AT" AS "enabledAt",
      "e"."FAILING_SINCE" AS "failingSince", "e"."SECRET_CHANGED_AT" AS "secretChangedAt"
    FROM "dbo"."SUBJECT" AS "s"
    LEFT JOIN "dbo"."WEBHOOK_ENDPOINT" AS "e" ON "e"."TENANT" = $2 AND "e"."SUBJECT_ID" = "s"."ID"
    WHERE "s"."ID" = $1`,
  lastAttempts: `SELECT "EVENT_ID" AS "eventId", "DOCUMENT_ID" AS "documentId",
      "ATTEMPT" AS "attempt", "ATTEMPTED_AT" AS "attemptedAt", "OUTCOME" AS "outcome",
      "HTTP_STATUS" AS "httpStatus", "ERROR" AS "error", "DURATION_MS" AS "durationMs"
    FROM "dbo"."WEBHOOK_DELIVERY" WHERE "SUBJECT_ID" = $1 AND "TENANT" = $3 ORDER BY "ID" DESC LIMIT $2`,
  claimRecovery: `INSERT INTO "dbo"."WEBHOOK_DELIVERY" ("EVENT_ID", "SUBJECT_ID", "DOCUMENT_ID", "ATTEMPT",
      "ATTEMPTED_AT", "OUTCOME", "RECOVERS_ID", "MESSAGE_ID", "TENANT")
    SELECT $1, $2::int, $3::bigint, 0, $5::timestamp(3), 'requeued', $4::bigint, $6, $7
    WHERE NOT EXISTS (SELECT 1 FROM "dbo"."WEBHOOK_DELIVERY" WHERE "RECOVERS_ID" = $4::bigint)`,
  recoveryClaimed: `SELECT "MESSAGE_ID" AS "claimedBy" FROM "dbo"."WEBHOOK_DELIVERY"
    WHERE "RECOVERS_ID" = $1::bigint AND "TENANT" = $2`,
  enable: `UPDATE "dbo"."WEBHOOK_ENDPOINT" SET "FAILING_SINCE" = NULL,
      "ENABLED_AT" = CASE WHEN "DISABLED_AT" IS NULL THEN "ENABLED_AT" ELSE $2::timestamp(3) END,
      "DISABLED_AT" = NULL
    WHERE "SUBJECT_ID" = $1 AND "TENANT" = $3`,
};

/** A tenant's webhook admin store on the embedded database. */
export function createEmbeddedWebhookAdminStore(
  db: Pick<Database, 'query'>,
  tenant: string,
): WebhookAdminStore {
  return createSqlWebhookAdminStore(db, EMBEDDED_WEBHOOK_ADMIN_STATEMENTS, tenant);
}
