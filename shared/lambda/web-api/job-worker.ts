import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { openDatabase } from '../../config/databases.js';
import { loadTenantRegistry } from '../../config/tenants.js';
import { getWebApiJobSettings } from '../../config/web-api.js';
import { describeError } from '../../core/log.js';
import { MetricName } from '../../core/metrics.js';
import { type JobOutcome, parseWebApiJob, runJob } from '../../core/web-api/jobs.js';
import { logFormatFromEnv, serviceLog, serviceMetrics } from '../observability.js';
import { tenantWebApiStore } from './store.js';

/** Time kept back from the Lambda's remaining time to write the journal after an operation is cut off. */
const SAFETY_MS = 5_000;
/** Where no Lambda context tells the remaining time (should not happen), the lease is the limit. */
const remainingMs = (context: Context | undefined, leaseSeconds: number) =>
  typeof context?.getRemainingTimeInMillis === 'function'
    ? context.getRemainingTimeInMillis()
    : leaseSeconds * 1000;

/** What one record came to, for its summary line: a job's outcome, or why it was dropped. */
type RecordOutcome = JobOutcome | 'not_a_job' | 'unknown_tenant' | 'error';

async function processRecord(
  record: SQSRecord,
  context: Context,
  fields: Record<string, unknown>,
  signal: AbortSignal | undefined,
): Promise<RecordOutcome> {
  const job = parseWebApiJob(record.body);
  if (!job) return 'not_a_job';
  Object.assign(fields, { tenant: job.tenant, journalId: job.journalId, callRequestId: job.requestId });
  const tenant = (await loadTenantRegistry()).get(job.tenant);
  if (!tenant) return 'unknown_tenant';
  const settings = getWebApiJobSettings();
  const store = tenantWebApiStore(await openDatabase(tenant.database));
  return runJob(
    {
      store,
      leaseSeconds: settings.jobLeaseSeconds,
      requestId: context.awsRequestId ?? job.requestId,
      log: serviceLog(),
      metrics: serviceMetrics(),
    },
    job,
    {
      attempt: Number(record.attributes.ApproximateReceiveCount) || 1,
      maxAttempts: settings.jobMaxReceives,
      timeLimitMs: remainingMs(context, settings.jobLeaseSeconds) - SAFETY_MS,
      signal,
    },
  );
}

/**
 * The Web API worker: runs the jobs of an SQS batch side by side and reports the ones to deliver
 * again as partial batch failures (`ReportBatchItemFailures`), so that the others are not repeated.
 * One summary line per record; a record that fails its last delivery is counted as dead-lettered.
 */
export function webApiJobWorker() {
  // A bad LOG_FORMAT fails the cold start, by name.
  logFormatFromEnv();
  let coldStart = true;
  return async function runJobs(
    event: SQSEvent,
    context: Context,
    // Lambda's runtime passes a callback here (no `signal`); the local stack's poller passes the
    // invocation's abort signal, which a fault test aborts to kill the worker.
    invocation?: { readonly signal?: AbortSignal },
  ): Promise<SQSBatchResponse> {
    const signal = invocation?.signal instanceof AbortSignal ? invocation.signal : undefined;
    const cold = coldStart;
    coldStart = false;
    const outcomes = await Promise.all(
      event.Records.map(async (record): Promise<RecordOutcome> => {
        const started = performance.now();
        const attempt = Number(record.attributes.ApproximateReceiveCount) || 1;
        const fields: Record<string, unknown> = {
          requestId: context?.awsRequestId,
          messageId: record.messageId,
          function: context?.functionName,
          attempt,
          coldStart: cold,
        };
        let outcome: RecordOutcome;
        try {
          outcome = await processRecord(record, context, fields, signal);
        } catch (error) {
          serviceLog().error('job delivery failed', { ...fields, ...describeError(error) });
          outcome = 'error';
        }
        const again = outcome === 'retry' || outcome === 'error';
        const durationMs = Math.round(performance.now() - started);
        const level = outcome === 'not_a_job' || outcome === 'unknown_tenant' ? 'error' : 'info';
        serviceLog()[level]('job', { ...fields, outcome, durationMs });
        if (again && attempt >= getWebApiJobSettings().jobMaxReceives) {
          serviceMetrics().count({ [MetricName.deadLettered]: 1 }, [{ queue: 'web-api-jobs' }]);
        }
        return outcome;
      }),
    );
    return {
      batchItemFailures: event.Records.filter(
        (_record, index) => outcomes[index] === 'retry' || outcomes[index] === 'error',
      ).map((record) => ({ itemIdentifier: record.messageId })),
    };
  };
}
