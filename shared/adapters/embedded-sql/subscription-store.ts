/** Change notifications' store in PostgreSQL (infra/sql/embedded/060-change-notifications.sql). */
import type { Database } from '../../core/database.js';
import type { SubscriptionStore } from '../../core/notifications/subscriptions.js';
import { createSqlSubscriptionStore, subscriptionStatements } from '../sql-common/subscription-store.js';
import { postgresDialect } from './dialect.js';

export const EMBEDDED_SUBSCRIPTION_STATEMENTS = subscriptionStatements({
  q: postgresDialect.quoteIdent,
  p: (index) => `$${index}`,
  time: (index) => `$${index}::timestamp(3)`,
  // The adapter reads date-times to the second (as answers show them); the store needs milliseconds.
  readTime: (column) => `to_char(${column}, 'YYYY-MM-DD HH24:MI:SS.MS')`,
  counted: (statement) =>
    `WITH changed AS (${statement} RETURNING 1) SELECT count(*)::int AS "changed" FROM changed`,
  lockNotifier: [
    `INSERT INTO "dbo"."SVC_NOTIFIER_STATE" ("TENANT", "LAST_PASS_AT") VALUES ($1, NULL) ON CONFLICT DO NOTHING`,
    `SELECT 1 FROM "dbo"."SVC_NOTIFIER_STATE" WHERE "TENANT" = $1 FOR UPDATE`,
  ],
});

/** The subscriptions of the embedded database. */
export function createEmbeddedSubscriptionStore(
  db: Pick<Database, 'query' | 'transaction'>,
): SubscriptionStore {
  return createSqlSubscriptionStore(db, EMBEDDED_SUBSCRIPTION_STATEMENTS);
}
