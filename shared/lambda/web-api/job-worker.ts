import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { openDatabase } from '../../config/databases.js';
import { loadTenantRegistry } from '../../config/tenants.js';
import { getWebApiJobSettings } from '../../config/web-api.js';
import { type JobOutcome, parseWebApiJob, runJob } from '../../core/web-api/jobs.js';
import { tenantWebApiStore } from './store.js';

/** Time kept back from the Lambda's remaining time to write the journal after an operation is cut off. */
const SAFETY_MS = 5_000;
/** Where no Lambda context tells the remaining time (should not happen), the lease is the limit. */
const remainingMs = (context: Context | undefined, leaseSeconds: number) =>
  typeof context?.getRemainingTimeInMillis === 'function'
    ? context.getRemainingTimeInMillis()
    : leaseSeconds * 1000;

function log(level: 'warn' | 'error', message: string, fields: Record<string, unknown>): void {
  const line = JSON.stringify({ level, message, ...fields });
  if (level === 'error') console.error(line);
  else console.warn(line);
}

async function processRecord(record: SQSRecord, context: Context): Promise<JobOutcome> {
  const job = parseWebApiJob(record.body);
  if (!job) {
    log('error', 'not a Web API job; dropped', { messageId: record.messageId });
    return 'done';
  }
  const tenant = (await loadTenantRegistry()).get(job.tenant);
  if (!tenant) {
    log('error', 'job of an unknown tenant; dropped', { messageId: record.messageId, tenant: job.tenant });
    return 'done';
  }
  const settings = getWebApiJobSettings();
  const store = tenantWebApiStore(await openDatabase(tenant.database));
  return runJob(
    { store, leaseSeconds: settings.jobLeaseSeconds, requestId: context.awsRequestId ?? job.requestId },
    job,
    {
      attempt: Number(record.attributes.ApproximateReceiveCount) || 1,
      maxAttempts: settings.jobMaxReceives,
      timeLimitMs: remainingMs(context, settings.jobLeaseSeconds) - SAFETY_MS,
    },
  );
}

/**
 * The Web API worker: runs the jobs of an SQS batch side by side and reports the ones to deliver
 * again as partial batch failures (`ReportBatchItemFailures`), so that the others are not repeated.
 */
export function webApiJobWorker() {
  return async function runJobs(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
    const outcomes = await Promise.all(
      event.Records.map((record) =>
        processRecord(record, context).catch((error: unknown): JobOutcome => {
          log('error', 'job delivery failed', {
            messageId: record.messageId,
            error: (error as Error).message,
          });
          return 'retry';
        }),
      ),
    );
    return {
      batchItemFailures: event.Records.filter((_record, index) => outcomes[index] === 'retry').map(
        (record) => ({
          itemIdentifier: record.messageId,
        }),
      ),
    };
  };
}
