import { createSqsJobQueue } from '../../adapters/sqs/job-queue.js';
import { ConfigurationError } from '../../config/settings.js';
import { getWebApiJobSettings } from '../../config/web-api.js';
import type { JobQueue } from '../../core/web-api/async-calls.js';

let queue: { url: string; queue: JobQueue } | undefined;

/** The job queue of this process, on the SQS queue named by `WEB_API_JOB_QUEUE_URL`. */
export function webApiJobQueue(): JobQueue {
  const url = getWebApiJobSettings().jobQueueUrl;
  if (!url) throw new ConfigurationError('WEB_API_JOB_QUEUE_URL must be set');
  if (queue?.url !== url) queue = { url, queue: createSqsJobQueue(url) };
  return queue.queue;
}
