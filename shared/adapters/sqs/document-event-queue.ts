import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DocumentEventQueue } from '../../core/webhook/admin.js';
import { documentReceivedMessage } from '../../core/webhook/event.js';
import { sqsClient, sqsModule } from './client.js';

/**
 * The document-received queue, for events the admin function sends again: the same message the
 * access point writes (plus `resend`), the tenant as its `MessageGroupId` (fair queues).
 */
export function createSqsDocumentEventQueue(queueUrl: string, client?: SQSClient): DocumentEventQueue {
  return {
    async send(event) {
      const { SendMessageCommand } = await sqsModule();
      const sent = await (client ?? (await sqsClient())).send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: documentReceivedMessage(event),
          MessageGroupId: event.tenant,
        }),
      );
      return sent.MessageId;
    },
  };
}
