import type { SQSClient } from '@aws-sdk/client-sqs';
import { sqsClient, sqsModule } from './client.js';

/** Postpones a received message: it stays on the queue, invisible, for the given time. */
export interface MessageVisibility {
  postpone(receiptHandle: string, seconds: number): Promise<void>;
}

// SQS refuses a visibility that ends more than 12 h after the message was received; the function
// runs for at most 30 s of that, so a minute's margin keeps every request valid.
const MAX_VISIBILITY_SECONDS = 12 * 3600 - 60;

/** Message visibility on one queue through ChangeMessageVisibility (the process's client by default). */
export function createSqsMessageVisibility(queueUrl: string, client?: SQSClient): MessageVisibility {
  return {
    async postpone(receiptHandle, seconds) {
      const timeout = Math.max(0, Math.min(Math.round(seconds), MAX_VISIBILITY_SECONDS));
      const { ChangeMessageVisibilityCommand } = await sqsModule();
      await (client ?? (await sqsClient())).send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: timeout,
        }),
      );
    },
  };
}
