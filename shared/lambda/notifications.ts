import { createEmbeddedSubscriptionStore } from '../adapters/embedded/subscription-store.js';
import { createMssqlSubscriptionStore } from '../adapters/mssql/subscription-store.js';
import { createSqsNotificationQueue } from '../adapters/sqs/notification-queue.js';
import { byDialect } from '../config/databases.js';
import { queueUrlIfSet } from '../config/queues.js';
import type { Database } from '../core/database.js';
import type { NotificationQueue, SubscriptionStore } from '../core/notifications/subscriptions.js';
import type { TraceContext } from '../core/trace-context.js';

/** A tenant's subscriptions in its database, in the database's dialect. */
export function subscriptionStore(db: Database, tenant: string): SubscriptionStore {
  return byDialect(db, {
    mssql: (mssql) => createMssqlSubscriptionStore(mssql, tenant),
    embedded: (embedded) => createEmbeddedSubscriptionStore(embedded, tenant),
  });
}

/**
 * The change-notifications queues (`CHANGE_NOTIFICATION_QUEUE_URL`, `NOTIFIER_PASS_QUEUE_URL`) this
 * function has; what it sends continues `trace` (a request's, a pass's) where one is given.
 */
export function notificationQueue(trace?: TraceContext): NotificationQueue {
  return createSqsNotificationQueue(
    {
      notifications: queueUrlIfSet('changeNotifications'),
      passes: queueUrlIfSet('notifierPasses'),
    },
    undefined,
    trace,
  );
}
