import type { SQSClient } from '@aws-sdk/client-sqs';
import type { JobQueue } from '../../core/web-api/async-calls.js';
import { sqsClient, sqsModule } from './client.js';

/** The Web API job queue on SQS: one message per job, its body the job as JSON. */
export function createSqsJobQueue(queueUrl: string, client?: SQSClient): JobQueue {
  return {
    async enqueue(job) {
      const { SendMessageCommand } = await sqsModule();
      await (client ?? (await sqsClient())).send(
        new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(job) }),
      );
    },
  };
}
