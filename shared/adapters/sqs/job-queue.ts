import type { SQSClient } from '@aws-sdk/client-sqs';
import { ServiceError } from '../../core/errors.js';
import type { JobQueue } from '../../core/web-api/async-calls.js';
import { sqsClient, sqsModule } from './client.js';

/**
 * The Web API job queue on SQS: one message per job, its body the job as JSON, its
 * `MessageGroupId` the tenant, so that SQS fair queues keep one tenant's burst of jobs from
 * delaying the others'.
 */
export function createSqsJobQueue(queueUrl: string, client?: SQSClient): JobQueue {
  return {
    async enqueue(job) {
      const { SendMessageCommand } = await sqsModule();
      try {
        await (client ?? (await sqsClient())).send(
          new SendMessageCommand({
            QueueUrl: queueUrl,
            MessageBody: JSON.stringify(job),
            MessageGroupId: job.tenant,
          }),
        );
      } catch (error) {
        // SQS unreachable or refusing: the caller is told to try again (503), as for a database.
        throw new ServiceError(503, 'queue_unavailable', 'The job queue is not reachable; try again later', {
          cause: error,
        });
      }
    },
  };
}
