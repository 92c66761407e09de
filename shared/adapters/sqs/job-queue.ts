import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { JobQueue } from '../../core/web-api/async-calls.js';
import { sqsClient } from './message-visibility.js';

/** The Web API job queue on SQS: one message per job, its body the job as JSON. */
export function createSqsJobQueue(queueUrl: string, client: SQSClient = sqsClient()): JobQueue {
  return {
    async enqueue(job) {
      await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(job) }));
    },
  };
}
