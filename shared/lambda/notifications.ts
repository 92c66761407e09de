import { createEmbeddedSubscriptionStore } from '../adapters/embedded-sql/subscription-store.js';
import { createMssqlSubscriptionStore } from '../adapters/mssql/subscription-store.js';
import { createSqsNotificationQueue } from '../adapters/sqs/notification-queue.js';
import { byDialect } from '../config/databases.js';
import type { Database } from '../core/database.js';
import { ServiceError } from '../core/errors.js';
import type { NotificationQueue, SubscriptionStore } from '../core/notifications/subscriptions.js';

/** The subscriptions of a tenant database, in its dialect. */
export function subscriptionStore(db: Database): SubscriptionStore {
  return byDialect(db, { mssql: createMssqlSubscriptionStore, postgres: createEmbeddedSubscriptionStore });
}

/** The change-notifications queue (`CHANGE_NOTIFICATION_QUEUE_URL`). */
export function notificationQueue(): NotificationQueue {
  const url = process.env.CHANGE_NOTIFICATION_QUEUE_URL?.trim();
  if (!url) {
    throw new ServiceError(
      503,
      'queue_unavailable',
      'Change notifications are not set up in this deployment',
      {
        cause: new Error('CHANGE_NOTIFICATION_QUEUE_URL must be set'),
      },
    );
  }
  return createSqsNotificationQueue(url);
}
