import { webApiJobWorker } from '../../shared/lambda/web-api/job-worker.js';

/** SQS Web API job queue → runs the operation, writes WS_JOURNAL (partial batch failures). */
export const handler = webApiJobWorker();
