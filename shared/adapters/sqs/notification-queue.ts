import type { SQSClient } from '@aws-sdk/client-sqs';
import { ServiceError } from '../../core/errors.js';
import type { NotificationQueue } from '../../core/notifications/subscriptions.js';
import type { TraceContext } from '../../core/trace-context.js';
import { sendTenantMessage } from './tenant-message.js';

/**
 * The queues of change notifications: events to deliver (their fast lane), and the notifier's
 * passes. A function is given those it sends to; sending to one it lacks is a 503.
 */
export interface NotificationQueueUrls {
  readonly notifications: string | undefined;
  readonly passes: string | undefined;
}

/**
 * Change notifications on SQS: a subscription's event to deliver goes to the notifications queue
 * (the fast lane, delivery/lanes.ts), a pass of a tenant's notifier, held back for the tenant's
 * delay (the loop that checks its subscribed tables), to a queue of its own, so that no delivery
 * ever holds a pass up. Every message carries the tenant as `MessageGroupId` (fair queues).
 */
export function createSqsNotificationQueue(
  urls: NotificationQueueUrls,
  client?: SQSClient,
  /** The sender's span (CONTRACT 8a): every message continues it. */
  trace?: TraceContext,
): NotificationQueue {
  async function send(queueUrl: string | undefined, body: unknown, tenant: string, delaySeconds = 0) {
    if (!queueUrl) {
      throw new ServiceError(
        503,
        'queue_unavailable',
        'Change notifications are not set up in this deployment',
      );
    }
    await sendTenantMessage(
      { queueUrl, body: JSON.stringify(body), tenant, delaySeconds, trace },
      'The notification queue is not reachable; try again later',
      client,
    );
  }
  return {
    notify: (message) => send(urls.notifications, message, message.tenant),
    pass: (tenant, delaySeconds) => send(urls.passes, { kind: 'pass', tenant }, tenant, delaySeconds),
  };
}
