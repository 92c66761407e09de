/** The webhook's delivery log (`WEBHOOK_DELIVERY`, `SUBJECT`; infra/sql/embedded/040-webhook.sql) in PostgreSQL. */
import type { Database } from '../../core/database.js';
import type { WebhookDeliveryLog } from '../../core/webhook/delivery-log.js';
import {
  createSqlWebhookDeliveryLog,
  type DeliveryLogStatements,
} from '../sql-common/webhook-delivery-log.js';

export const EMBEDDED_DELIVERY_LOG_STATEMENTS: DeliveryLogStatements = {
  // One row whether or not the subject exists. The delivered count is served by the unique partial
  // index on delivered events, the attempts of the message by the index on subject and document
  // (the event id follows from them within a tenant).
  findTarget: `SELECT
      (SELECT COUNT(*) FROM "dbo"."WEBHOOK_DELIVERY"
        WHERE "EVENT_ID" = $1 AND "OUTCOME" = 'delivered') AS "delivered",
      (SELECT COUNT(*) FROM "dbo"."WEBHOOK_DELIVERY"
        WHERE "SUBJECT_ID" = $2 AND "DOCUMENT_ID" = $3 AND "EVENT_ID" = $1 AND "MESSAGE_ID" = $4
          AND "OUTCOME" IN ('retrying', 'failed')) AS "attemptsMade",
      "s"."ID" AS "subjectId",
      "s"."WEBHOOK_URL" AS "webhookUrl",
      "s"."SECRET_WEBHOOK" AS "secret"
    FROM (SELECT 1 AS "one") AS "x"
    LEFT JOIN "dbo"."SUBJECT" AS "s" ON "s"."ID" = $2`,
  insert: `INSERT INTO "dbo"."WEBHOOK_DELIVERY" ("EVENT_ID", "SUBJECT_ID", "DOCUMENT_ID", "ATTEMPT",
      "ATTEMPTED_AT", "OUTCOME", "HTTP_STATUS", "ERROR", "DURATION_MS", "RETRY_IN_SECONDS", "MESSAGE_ID")
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
};

/** The delivery log on the embedded database. */
export function createEmbeddedWebhookDeliveryLog(db: Pick<Database, 'query'>): WebhookDeliveryLog {
  return createSqlWebhookDeliveryLog(db, EMBEDDED_DELIVERY_LOG_STATEMENTS);
}
