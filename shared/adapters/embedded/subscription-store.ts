/**
 * Change notifications' store in PostgreSQL (infra/sql/embedded/080-change-notifications.sql). The
 * adapter reads date-times to the second (as answers show them): the store reads its own with
 * to_char, to the millisecond.
 */
import type { Database } from '../../core/database.js';
import type { SubscriptionStore } from '../../core/notifications/subscriptions.js';
import { createSqlSubscriptionStore, type SubscriptionStatements } from '../sql-common/subscription-store.js';
import { embeddedAttemptInsert } from './attempt-log.js';

const COLUMNS = `"ID" AS "id", "OWNER" AS "owner", "SOURCE_SCHEMA" AS "sourceSchema",
  "SOURCE_NAME" AS "sourceName", "URL" AS "url", "SECRET" AS "secret",
  "PREVIOUS_SECRET" AS "previousSecret", to_char("SECRET_CHANGED_AT",
  'YYYY-MM-DD HH24:MI:SS.MS') AS "secretChangedAt", "STATE" AS "state", to_char("CREATED_AT",
  'YYYY-MM-DD HH24:MI:SS.MS') AS "createdAt", "SEEN_FEED" AS "seenFeed",
  "SEEN_BATCH" AS "seenBatch", "NOTIFIED_BATCH" AS "notifiedBatch", to_char("LAST_CHANGE_AT",
  'YYYY-MM-DD HH24:MI:SS.MS') AS "lastChangeAt", to_char("LAST_NOTIFIED_AT",
  'YYYY-MM-DD HH24:MI:SS.MS') AS "lastNotifiedAt", to_char("LAST_DELIVERED_AT",
  'YYYY-MM-DD HH24:MI:SS.MS') AS "lastDeliveredAt",
  "CONSECUTIVE_FAILURES" AS "consecutiveFailures", to_char("FAILING_SINCE",
  'YYYY-MM-DD HH24:MI:SS.MS') AS "failingSince", to_char("DISABLED_AT",
  'YYYY-MM-DD HH24:MI:SS.MS') AS "disabledAt", "DISABLED_REASON" AS "disabledReason",
  "WAITING_EVENT" AS "waitingEvent", to_char("WAITING_SINCE",
  'YYYY-MM-DD HH24:MI:SS.MS') AS "waitingSince", to_char("SLOW_SINCE",
  'YYYY-MM-DD HH24:MI:SS.MS') AS "slowSince"`;
// A failure disables when told to (410) or when failing since the cut-off or before.
const DISABLES = '($6 = 1 OR COALESCE("FAILING_SINCE", $3::timestamp(3)) <= $4::timestamp(3))';

export const EMBEDDED_SUBSCRIPTION_STATEMENTS: SubscriptionStatements = {
  lockNotifier: [
    `INSERT INTO "dbo"."SVC_NOTIFIER_STATE" ("TENANT", "LAST_PASS_AT") VALUES ($1, NULL) ON CONFLICT DO NOTHING`,
    `SELECT 1 FROM "dbo"."SVC_NOTIFIER_STATE" WHERE "TENANT" = $1 FOR UPDATE`,
  ],
  count: `SELECT COUNT(*) AS "n" FROM "dbo"."SVC_SUBSCRIPTION" WHERE "TENANT" = $1`,
  insert: `INSERT INTO "dbo"."SVC_SUBSCRIPTION" ("ID", "OWNER", "SOURCE_SCHEMA", "SOURCE_NAME", "URL",
    "SECRET", "STATE", "CREATED_AT", "SEEN_FEED", "SEEN_BATCH", "NOTIFIED_BATCH",
    "CONSECUTIVE_FAILURES", "WAITING_EVENT", "WAITING_SINCE", "TENANT")
    VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7::timestamp(3), $8, $9, $9, 0,
    $10, $7::timestamp(3), $11)`,
  lastPassAt: `SELECT to_char("LAST_PASS_AT", 'YYYY-MM-DD HH24:MI:SS.MS') AS "lastPassAt" FROM "dbo"."SVC_NOTIFIER_STATE" WHERE "TENANT" = $1`,
  list: `SELECT ${COLUMNS} FROM "dbo"."SVC_SUBSCRIPTION" WHERE "TENANT" = $2 AND "OWNER" = $1 ORDER BY "CREATED_AT", "ID"`,
  get: `SELECT ${COLUMNS} FROM "dbo"."SVC_SUBSCRIPTION" WHERE "ID" = $1 AND "TENANT" = $2`,
  getOwned: `SELECT ${COLUMNS} FROM "dbo"."SVC_SUBSCRIPTION" WHERE "ID" = $1 AND "OWNER" = $2 AND "TENANT" = $3`,
  listLive: `SELECT ${COLUMNS} FROM "dbo"."SVC_SUBSCRIPTION" WHERE "TENANT" = $1 AND "STATE" <> 'disabled'`,
  remove: `WITH changed AS (DELETE FROM "dbo"."SVC_SUBSCRIPTION" WHERE "ID" = $1 AND "OWNER" = $2 AND "TENANT" = $3 RETURNING 1) SELECT count(*)::int AS "changed" FROM changed`,
  rotate: `UPDATE "dbo"."SVC_SUBSCRIPTION" SET "PREVIOUS_SECRET" = "SECRET", "SECRET" = $3,
    "SECRET_CHANGED_AT" = $4::timestamp(3) WHERE "ID" = $1 AND "OWNER" = $2 AND "TENANT" = $5`,
  enable: `UPDATE "dbo"."SVC_SUBSCRIPTION" SET "STATE" = 'pending', "DISABLED_AT" = NULL, "DISABLED_REASON" = NULL,
    "FAILING_SINCE" = NULL, "CONSECUTIVE_FAILURES" = 0, "WAITING_EVENT" = $3,
    "WAITING_SINCE" = $4::timestamp(3)
    WHERE "ID" = $1 AND "OWNER" = $2 AND "TENANT" = $5
    AND ("STATE" = 'disabled' OR ("STATE" = 'pending' AND "WAITING_EVENT" IS NULL))`,
  claimPass: `WITH changed AS (UPDATE "dbo"."SVC_NOTIFIER_STATE" SET "LAST_PASS_AT" = $2::timestamp(3)
    WHERE "TENANT" = $1 AND ("LAST_PASS_AT" IS NULL OR "LAST_PASS_AT" <= $3::timestamp(3)) RETURNING 1) SELECT count(*)::int AS "changed" FROM changed`,
  liveCount: `SELECT COUNT(*) AS "n" FROM "dbo"."SVC_SUBSCRIPTION" WHERE "TENANT" = $1 AND "STATE" <> 'disabled'`,
  endPasses: `UPDATE "dbo"."SVC_NOTIFIER_STATE" SET "LAST_PASS_AT" = NULL WHERE "TENANT" = $1`,
  observe: `UPDATE "dbo"."SVC_SUBSCRIPTION" SET
    "NOTIFIED_BATCH" = CASE WHEN "SEEN_FEED" = $3 THEN "NOTIFIED_BATCH" ELSE -1 END,
    "SEEN_FEED" = $3, "SEEN_BATCH" = $4, "LAST_CHANGE_AT" = $5::timestamp(3)
    WHERE "TENANT" = $6 AND "SOURCE_SCHEMA" = $1 AND "SOURCE_NAME" = $2
    AND ("SEEN_FEED" IS NULL OR "SEEN_FEED" <> $3 OR "SEEN_BATCH" < $4)`,
  claim: `WITH changed AS (UPDATE "dbo"."SVC_SUBSCRIPTION" SET "WAITING_EVENT" = $2, "WAITING_SINCE" = $4::timestamp(3),
    "NOTIFIED_BATCH" = $3, "LAST_NOTIFIED_AT" = $4::timestamp(3)
    WHERE "ID" = $1 AND "TENANT" = $6 AND "STATE" = 'active' AND "NOTIFIED_BATCH" < $3
    AND ("WAITING_EVENT" IS NULL OR "WAITING_SINCE" < $5::timestamp(3)) RETURNING 1) SELECT count(*)::int AS "changed" FROM changed`,
  release: `UPDATE "dbo"."SVC_SUBSCRIPTION" SET "WAITING_EVENT" = NULL, "WAITING_SINCE" = NULL, "NOTIFIED_BATCH" = -1
    WHERE "ID" = $1 AND "WAITING_EVENT" = $2 AND "TENANT" = $3`,
  forceClaim: `WITH changed AS (UPDATE "dbo"."SVC_SUBSCRIPTION" SET "WAITING_EVENT" = $2, "WAITING_SINCE" = $3::timestamp(3),
    "LAST_NOTIFIED_AT" = $3::timestamp(3)
    WHERE "ID" = $1 AND "TENANT" = $4 AND "STATE" = 'active' RETURNING 1) SELECT count(*)::int AS "changed" FROM changed`,
  failedSince: `SELECT DISTINCT "SUBSCRIPTION_ID" AS "id" FROM "dbo"."SVC_NOTIFICATION_DELIVERY"
    WHERE "TENANT" = $2 AND "ATTEMPTED_AT" >= $1::timestamp(3) AND "OUTCOME" IN ('failed', 'gone', 'refused')`,
  attemptsMade: `SELECT COUNT(*) AS "n" FROM "dbo"."SVC_NOTIFICATION_DELIVERY"
    WHERE "MESSAGE_ID" = $1 AND "TENANT" = $2 AND "OUTCOME" IN ('retrying', 'failed')`,
  record: embeddedAttemptInsert('SVC_NOTIFICATION_DELIVERY', ['SUBSCRIPTION_ID', 'EVENT_ID', 'EVENT_TYPE']),
  delivered: `UPDATE "dbo"."SVC_SUBSCRIPTION" SET "LAST_DELIVERED_AT" = $4::timestamp(3), "CONSECUTIVE_FAILURES" = 0,
    "FAILING_SINCE" = NULL,
    "SLOW_SINCE" = CASE WHEN $5::timestamp(3) IS NULL THEN NULL ELSE COALESCE("SLOW_SINCE", $5::timestamp(3)) END,
    "STATE" = CASE WHEN "STATE" = 'pending' AND $3 = 1 THEN 'active' ELSE "STATE" END,
    "WAITING_SINCE" = CASE WHEN "WAITING_EVENT" = $2 THEN NULL ELSE "WAITING_SINCE" END,
    "WAITING_EVENT" = CASE WHEN "WAITING_EVENT" = $2 THEN NULL ELSE "WAITING_EVENT" END
    WHERE "ID" = $1 AND "TENANT" = $6 AND "STATE" <> 'disabled'`,
  markSlow: `UPDATE "dbo"."SVC_SUBSCRIPTION" SET "SLOW_SINCE" = $2::timestamp(3)
    WHERE "ID" = $1 AND "TENANT" = $3 AND "SLOW_SINCE" IS NULL`,
  failed: `WITH changed AS (UPDATE "dbo"."SVC_SUBSCRIPTION" SET "CONSECUTIVE_FAILURES" = "CONSECUTIVE_FAILURES" + 1,
    "FAILING_SINCE" = COALESCE("FAILING_SINCE", $3::timestamp(3)),
    "STATE" = CASE WHEN ${DISABLES} THEN 'disabled' ELSE "STATE" END,
    "DISABLED_AT" = CASE WHEN ${DISABLES} THEN $3::timestamp(3) ELSE "DISABLED_AT" END,
    "DISABLED_REASON" = CASE WHEN ${DISABLES} THEN $7 ELSE "DISABLED_REASON" END,
    "WAITING_SINCE" = CASE WHEN "WAITING_EVENT" = $2 AND ($5 = 1 OR ${DISABLES})
    THEN NULL ELSE "WAITING_SINCE" END,
    "WAITING_EVENT" = CASE WHEN "WAITING_EVENT" = $2 AND ($5 = 1 OR ${DISABLES})
    THEN NULL ELSE "WAITING_EVENT" END
    WHERE "ID" = $1 AND "TENANT" = $8 AND "STATE" <> 'disabled' RETURNING 1) SELECT count(*)::int AS "changed" FROM changed`,
  disabledAt: `SELECT to_char("DISABLED_AT", 'YYYY-MM-DD HH24:MI:SS.MS') AS "disabledAt" FROM "dbo"."SVC_SUBSCRIPTION" WHERE "ID" = $1 AND "TENANT" = $2`,
};

/** The subscriptions of one tenant in the embedded database. */
export function createEmbeddedSubscriptionStore(
  db: Pick<Database, 'query' | 'transaction'>,
  tenant: string,
): SubscriptionStore {
  return createSqlSubscriptionStore(db, EMBEDDED_SUBSCRIPTION_STATEMENTS, tenant);
}
