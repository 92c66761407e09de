import { ChangeMessageVisibilityCommand, SQSClient } from '@aws-sdk/client-sqs';

/** Postpones a received message: it stays on the queue, invisible, for the given time. */
export interface MessageVisibility {
  postpone(receiptHandle: string, seconds: number): Promise<void>;
}

// SQS refuses a visibility that ends more than 12 h after the message was received; the function
// runs for at most 30 s of that, so a minute's margin keeps every request valid.
const MAX_VISIBILITY_SECONDS = 12 * 3600 - 60;

let shared: { endpoint: string | undefined; client: SQSClient } | undefined;

/** The SQS client of this process (endpoint from `AWS_ENDPOINT_URL` where set, e.g. the local emulator). */
export function sqsClient(): SQSClient {
  const endpoint = process.env.AWS_ENDPOINT_URL;
  if (shared && shared.endpoint === endpoint) return shared.client;
  shared?.client.destroy();
  // An explicit endpoint also stops the SDK from taking the queue URL's host as the endpoint
  // (the emulator's queue URLs do not parse as URLs and only earn a warning).
  shared = { endpoint, client: new SQSClient(endpoint ? { endpoint } : {}) };
  return shared.client;
}

/** Message visibility on one queue through ChangeMessageVisibility. */
export function createSqsMessageVisibility(
  queueUrl: string,
  client: SQSClient = sqsClient(),
): MessageVisibility {
  return {
    async postpone(receiptHandle, seconds) {
      const timeout = Math.max(0, Math.min(Math.round(seconds), MAX_VISIBILITY_SECONDS));
      await client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: timeout,
        }),
      );
    },
  };
}
