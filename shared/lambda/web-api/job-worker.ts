import type { Context, SQSRecord } from 'aws-lambda';
import { createSqsDeadLetterQueue, type DeadLetterQueue } from '../../adapters/sqs/dead-letter-queue.js';
import { openDatabase } from '../../config/databases.js';
import { queueUrl } from '../../config/queues.js';
import { findTenant } from '../../config/tenant-registry.js';
import { getWebApiJobSettings } from '../../config/web-api.js';
import { describeError, logWith } from '../../core/log.js';
import { MetricName } from '../../core/metrics.js';
import { type JobOutcome, parseWebApiJob, runJob } from '../../core/web-api/jobs.js';
import { logFormatFromEnv, serviceLog, serviceMetrics } from '../observability.js';
import { invocationFields, queueConsumer, type RecordInvocation } from '../queue-consumer.js';
import { tenantWebApiStore } from './store.js';

/** Time kept back from the Lambda's remaining time to write the journal after an operation is cut off. */
const SAFETY_MS = 5_000;

/**
 * How long the operation may run: the remaining time less {@link SAFETY_MS}, or half of it when
 * that is less (a worker with a time-out of a few seconds, as the tests' 1 s lease, still runs its
 * operation, in its transaction, rather than being out of time before it begins).
 */
const timeLimitOf = (remaining: number) => Math.max(remaining - SAFETY_MS, remaining / 2);
/** Where no Lambda context tells the remaining time (should not happen), the lease is the limit. */
const remainingMs = (context: Context | undefined, leaseSeconds: number) =>
  typeof context?.getRemainingTimeInMillis === 'function'
    ? context.getRemainingTimeInMillis()
    : leaseSeconds * 1000;

/** What one record came to, for its summary line: a job's outcome, or why it was dropped. */
type JobRecordOutcome = JobOutcome | 'not_a_job' | 'unknown_tenant' | 'error';

/** What the worker needs besides the job itself; tests replace any of it. */
export interface JobWorkerDependencies {
  readonly deadLetterQueue: () => DeadLetterQueue;
}

const defaults: JobWorkerDependencies = {
  deadLetterQueue: () => createSqsDeadLetterQueue(queueUrl('webApiJobsDeadLetter')),
};

async function processRecord(
  record: SQSRecord,
  invocation: RecordInvocation,
  fields: Record<string, unknown>,
): Promise<JobRecordOutcome> {
  const { context, signal } = invocation;
  // The job's lines in the trace of the call that queued it (CONTRACT 8a).
  const log = logWith(serviceLog(), { traceId: invocation.trace.traceId });
  const job = parseWebApiJob(record.body);
  if (!job) return 'not_a_job';
  Object.assign(fields, { tenant: job.tenant, journalId: job.journalId, callRequestId: job.requestId });
  const tenant = await findTenant(job.tenant, log);
  if (!tenant) return 'unknown_tenant';
  const settings = getWebApiJobSettings();
  const store = tenantWebApiStore(await openDatabase(tenant.database, invocation.trace), tenant);
  const receiveCount = Number(record.attributes.ApproximateReceiveCount) || 1;
  return runJob(
    {
      store,
      leaseSeconds: settings.jobLeaseSeconds,
      requestId: context?.awsRequestId ?? job.requestId,
      log,
      metrics: serviceMetrics(),
    },
    job,
    {
      receiveCount,
      maxAttempts: settings.jobMaxAttempts,
      finalReceive: receiveCount >= settings.jobMaxReceives,
      onAttempt: (attempt) => Object.assign(fields, { attempt }),
      timeLimitMs: timeLimitOf(remainingMs(context, settings.jobLeaseSeconds)),
      signal,
    },
  );
}

/**
 * The Web API worker: runs the jobs of an SQS batch side by side and reports the ones to deliver
 * again as partial batch failures (`ReportBatchItemFailures`), so that the others are not repeated.
 * A job ends in its journal (on its last attempt at the latest) and its message is then deleted:
 * 997 gives its answer, and a redrive could not run it again. A job whose journal cannot be read
 * or written goes to the dead-letter queue once its receive count reaches the attempts, moved by
 * the worker itself, since the queue's `maxReceiveCount` leaves room for receives that never
 * reached a worker (a throttled consumer). One summary line per record.
 */
export function webApiJobWorker(overrides: Partial<JobWorkerDependencies> = {}) {
  const deps: JobWorkerDependencies = { ...defaults, ...overrides };
  // A bad LOG_FORMAT fails the cold start, by name.
  logFormatFromEnv();
  return queueConsumer({
    async handle(record, invocation) {
      const started = performance.now();
      const receiveCount = Number(record.attributes.ApproximateReceiveCount) || 1;
      // `attempt` is the journal's count once the worker has taken the job.
      const fields: Record<string, unknown> = {
        ...invocationFields(invocation),
        messageId: record.messageId,
        receiveCount,
      };
      let outcome: JobRecordOutcome;
      try {
        outcome = await processRecord(record, invocation, fields);
      } catch (error) {
        serviceLog().error('job delivery failed', { ...fields, ...describeError(error) });
        outcome = 'error';
      }
      let retry = outcome === 'retry' || outcome === 'error';
      const settings = getWebApiJobSettings();
      if (outcome === 'error' && receiveCount >= settings.jobMaxAttempts) {
        // The journal could not be read or written, so its attempts cannot be counted: the
        // receive count stands in for them, and the job goes to the dead-letter queue now (the
        // queue's own redrive would wait for maxReceiveCount, which leaves room for throttling).
        try {
          const tenant = typeof fields.tenant === 'string' ? fields.tenant : undefined;
          fields.deadLetterMessageId = await deps.deadLetterQueue().send(record, tenant);
          fields.deadLetter = true;
          retry = false;
        } catch (error) {
          serviceLog().error('could not move the job to the dead-letter queue', {
            ...fields,
            ...describeError(error),
          });
        }
      }
      if (retry && receiveCount >= settings.jobMaxReceives) {
        // The queue's own redrive moves it on its next receive.
        fields.deadLetter = true;
      }
      if (fields.deadLetter) {
        serviceMetrics().count({ [MetricName.deadLettered]: 1 }, [{ queue: 'web-api-jobs' }]);
      }
      const durationMs = Math.round(performance.now() - started);
      const level = outcome === 'not_a_job' || outcome === 'unknown_tenant' ? 'error' : 'info';
      serviceLog()[level]('job', { ...fields, outcome, durationMs });
      return retry ? 'kept' : 'done';
    },
    failed(record, error, invocation) {
      serviceLog().error('job delivery failed', {
        ...invocationFields(invocation),
        messageId: record.messageId,
        ...describeError(error),
      });
    },
  });
}
