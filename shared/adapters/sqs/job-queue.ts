import type { SQSClient } from '@aws-sdk/client-sqs';
import type { JobQueue } from '../../core/web-api/async-calls.js';
import { sendTenantMessage } from './tenant-message.js';

/**
 * The Web API job queue on SQS: one message per job, its body the job as JSON, its
 * `MessageGroupId` the tenant, so that SQS fair queues keep one tenant's burst of jobs from
 * delaying the others'.
 */
export function createSqsJobQueue(queueUrl: string, client?: SQSClient): JobQueue {
  return {
    async enqueue(job, trace) {
      await sendTenantMessage(
        { queueUrl, body: JSON.stringify(job), tenant: job.tenant, trace },
        'The job queue is not reachable; try again later',
        client,
      );
    },
  };
}
