import { createSqsJobQueue } from '../../adapters/sqs/job-queue.js';
import { queueUrl } from '../../config/queues.js';
import type { JobQueue } from '../../core/web-api/async-calls.js';

let queue: { url: string; queue: JobQueue } | undefined;

/** The job queue of this process, on the SQS queue named by `WEB_API_JOB_QUEUE_URL`. */
export function webApiJobQueue(): JobQueue {
  const url = queueUrl('webApiJobs');
  if (queue?.url !== url) queue = { url, queue: createSqsJobQueue(url) };
  return queue.queue;
}
