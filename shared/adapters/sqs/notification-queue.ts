import type { SQSClient } from '@aws-sdk/client-sqs';
import { ServiceError } from '../../core/errors.js';
import type { NotificationQueue } from '../../core/notifications/subscriptions.js';
import { sqsClient, sqsModule } from './client.js';

/** SQS holds a message back at most 15 minutes. */
const MAX_DELAY_SECONDS = 900;

/**
 * The change-notifications queue on SQS: a subscription's event to deliver, or a pass of a
 * tenant's notifier held back for the tenant's delay (the loop that checks its subscribed tables).
 * Every message carries the tenant as `MessageGroupId` (fair queues).
 */
export function createSqsNotificationQueue(queueUrl: string, client?: SQSClient): NotificationQueue {
  async function send(body: unknown, tenant: string, delaySeconds = 0): Promise<void> {
    const { SendMessageCommand } = await sqsModule();
    try {
      await (client ?? (await sqsClient())).send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify(body),
          MessageGroupId: tenant,
          ...(delaySeconds > 0
            ? { DelaySeconds: Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.round(delaySeconds))) }
            : {}),
        }),
      );
    } catch (error) {
      throw new ServiceError(
        503,
        'queue_unavailable',
        'The notification queue is not reachable; try again later',
        { cause: error },
      );
    }
  }
  return {
    notify: (message) => send(message, message.tenant),
    pass: (tenant, delaySeconds) => send({ kind: 'pass', tenant }, tenant, delaySeconds),
  };
}
