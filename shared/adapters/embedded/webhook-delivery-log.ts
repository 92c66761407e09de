/** The webhook's delivery log (`WEBHOOK_DELIVERY`, `SUBJECT`; infra/sql/embedded/040-webhook.sql) in PostgreSQL. */
import type { Database } from '../../core/database.js';
import type { WebhookDeliveryLog } from '../../core/webhook/delivery-log.js';
import { attemptParameter } from '../sql-common/attempt-log.js';
import {
  createSqlWebhookDeliveryLog,
  type DeliveryLogStatements,
} from '../sql-common/webhook-delivery-log.js';
import { embeddedAttemptInsert } from './attempt-log.js';

/** WEBHOOK_DELIVERY's own columns before an attempt's. */
const OWN = ['EVENT_ID', 'SUBJECT_ID', 'DOCUMENT_ID'];

// One row whether or not the subject exists. The delivered count is served by the unique partial
// index on delivered events, the attempts of the message by the index on subject and document
// (the event id follows from them within a tenant).
const FIND_TARGET = `SELECT
      (SELECT COUNT(*) FROM "dbo"."WEBHOOK_DELIVERY"
        WHERE "EVENT_ID" = $1 AND "TENANT" = $6 AND "OUTCOME" IN ('delivered', 'resent')
          AND ($5::int = 0 OR "MESSAGE_ID" = $4)) AS "delivered",
      (SELECT COUNT(*) FROM "dbo"."WEBHOOK_DELIVERY"
        WHERE "SUBJECT_ID" = $2 AND "DOCUMENT_ID" = $3 AND "EVENT_ID" = $1 AND "MESSAGE_ID" = $4
          AND "TENANT" = $6 AND "OUTCOME" IN ('retrying', 'failed')) AS "attemptsMade",
      "s"."ID" AS "subjectId",
      "s"."WEBHOOK_URL" AS "webhookUrl",
      "s"."SECRET_WEBHOOK" AS "secret",
      "e"."SUBJECT_ID" AS "endpointSubjectId",
      "e"."WEBHOOK_URL" AS "endpointUrl",
      "e"."SECRET" AS "endpointSecret",
      "e"."PREVIOUS_SECRET" AS "previousSecret",
      "e"."SECRET_CHANGED_AT" AS "secretChangedAt",
      "e"."FAILING_SINCE" AS "failingSince",
      "e"."DISABLED_AT" AS "disabledAt",
      "e"."ENABLED_AT" AS "enabledAt",
      "e"."SLOW_SINCE" AS "slowSince"
    FROM (SELECT 1 AS "one") AS "x"
    LEFT JOIN "dbo"."SUBJECT" AS "s" ON "s"."ID" = $2
    LEFT JOIN "dbo"."WEBHOOK_ENDPOINT" AS "e" ON "e"."TENANT" = $6 AND "e"."SUBJECT_ID" = "s"."ID"`;

export const EMBEDDED_DELIVERY_LOG_STATEMENTS: DeliveryLogStatements = {
  findTarget: FIND_TARGET,
  // The claim first, in the same statement: ON CONFLICT waits for a claim another copy is taking
  // and takes it only when it lapsed (or is this message's). The read is in the statement's
  // snapshot, taken after any delivery the claim's previous holder recorded before releasing it;
  // heldUntil is null for a claim another copy took at the same moment.
  claimAndFindTarget: `WITH "claimed" AS (
      INSERT INTO "dbo"."SVC_WEBHOOK_SENDING" AS "held" ("TENANT", "EVENT_ID", "MESSAGE_ID", "UNTIL")
      VALUES ($6, $1, $4, $8::timestamp(3))
      ON CONFLICT ("TENANT", "EVENT_ID") DO UPDATE SET "MESSAGE_ID" = EXCLUDED."MESSAGE_ID", "UNTIL" = EXCLUDED."UNTIL"
      WHERE "held"."MESSAGE_ID" = EXCLUDED."MESSAGE_ID" OR "held"."UNTIL" < $7::timestamp(3)
      RETURNING 1)
    ${FIND_TARGET.replace(
      /^SELECT/,
      `SELECT
      (SELECT count(*) FROM "claimed")::int AS "claimed",
      (SELECT to_char("UNTIL", 'YYYY-MM-DD HH24:MI:SS.MS') FROM "dbo"."SVC_WEBHOOK_SENDING"
        WHERE "TENANT" = $6 AND "EVENT_ID" = $1) AS "heldUntil",`,
    )}`,
  // The first copy of a subject's events to get here makes the row; one that races it leaves it.
  insertEndpoint: `INSERT INTO "dbo"."WEBHOOK_ENDPOINT" ("SUBJECT_ID", "WEBHOOK_URL", "SECRET", "PREVIOUS_SECRET",
      "SECRET_CHANGED_AT", "FAILING_SINCE", "DISABLED_AT", "ENABLED_AT", "SLOW_SINCE", "TENANT")
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT ("TENANT", "SUBJECT_ID") DO NOTHING`,
  updateEndpoint: `UPDATE "dbo"."WEBHOOK_ENDPOINT" SET "WEBHOOK_URL" = $2, "SECRET" = $3,
      "PREVIOUS_SECRET" = $4, "SECRET_CHANGED_AT" = $5, "FAILING_SINCE" = $6, "DISABLED_AT" = $7,
      "ENABLED_AT" = $8, "SLOW_SINCE" = $9
    WHERE "TENANT" = $10 AND "SUBJECT_ID" = $1`,
  endpointDelivered: `UPDATE "dbo"."WEBHOOK_ENDPOINT" SET "FAILING_SINCE" = NULL,
      "SLOW_SINCE" = CASE WHEN $2::timestamp(3) IS NULL THEN NULL ELSE COALESCE("SLOW_SINCE", $2::timestamp(3)) END
    WHERE "TENANT" = $3 AND "SUBJECT_ID" = $1`,
  endpointSlow: `UPDATE "dbo"."WEBHOOK_ENDPOINT" SET "SLOW_SINCE" = $2::timestamp(3)
    WHERE "TENANT" = $3 AND "SUBJECT_ID" = $1 AND "SLOW_SINCE" IS NULL`,
  // One statement, so that of failures at once exactly one sees the endpoint enabled and disables it.
  endpointFailed: `UPDATE "dbo"."WEBHOOK_ENDPOINT" SET
      "FAILING_SINCE" = COALESCE("FAILING_SINCE", $2::timestamp(3)),
      "DISABLED_AT" = CASE WHEN COALESCE("FAILING_SINCE", $2::timestamp(3)) <= $3::timestamp(3)
        THEN $2::timestamp(3) ELSE NULL END
    WHERE "TENANT" = $4 AND "SUBJECT_ID" = $1 AND "DISABLED_AT" IS NULL
    RETURNING "DISABLED_AT" AS "disabledAt"`,
  // The attempt, and in the same statement the end of its copy's claim to send: a copy that claims
  // next reads the delivery.
  insert: `WITH "released" AS (
      DELETE FROM "dbo"."SVC_WEBHOOK_SENDING" WHERE "TENANT" = $${attemptParameter(OWN.length, 'TENANT')}
        AND "EVENT_ID" = $1 AND "MESSAGE_ID" = $${attemptParameter(OWN.length, 'MESSAGE_ID')})
    ${embeddedAttemptInsert('WEBHOOK_DELIVERY', OWN)}`,
  releaseSending: `DELETE FROM "dbo"."SVC_WEBHOOK_SENDING" WHERE "TENANT" = $3 AND "EVENT_ID" = $1 AND "MESSAGE_ID" = $2`,
};

/** A tenant's delivery log on the embedded database. */
export function createEmbeddedWebhookDeliveryLog(
  db: Pick<Database, 'query'>,
  tenant: string,
): WebhookDeliveryLog {
  return createSqlWebhookDeliveryLog(db, EMBEDDED_DELIVERY_LOG_STATEMENTS, tenant);
}
