import { DatabasePermissionError, DatabaseUnavailableError } from '../database.js';
import { describeError, type Log, silentLog } from '../log.js';
import { MetricName, noMetrics, type ServiceMetrics } from '../metrics.js';
import { reportPermissionDenied } from '../permission-denied.js';
import type { WebApiJob } from './async-calls.js';
import { commitCall, JournalEndedError } from './calls.js';
import { WebApiErrorCode, type WebApiRequest } from './envelope.js';
import { executeOperation, failedOutcome, operationFailedOutcome } from './operations.js';
import { type JournalOutcome, type Operation, OperationFailedError, type WebApiStore } from './store.js';

/** One delivery of a job by the queue. */
export interface JobDelivery {
  /**
   * How often the queue has handed the message out (SQS `ApproximateReceiveCount`). Not the
   * attempt's number: receives that never reached a worker (a throttled consumer) count too. The
   * attempts are counted in the journal (`WS_JOURNAL.ATTEMPTS`).
   */
  readonly receiveCount: number;
  /** Attempts a job gets; the last one ends a job that keeps failing outside the database. */
  readonly maxAttempts: number;
  /**
   * True when the queue will not hand the message out again (its receive count is at
   * `maxReceiveCount`): this attempt is the last, whatever the journal counts.
   */
  readonly finalReceive: boolean;
  /** Told the attempt's number once the worker has taken the job. */
  readonly onAttempt?: (attempt: number) => void;
  /** How long the operation may run before the worker itself would be stopped, in ms. */
  readonly timeLimitMs: number;
  /**
   * Aborted when the worker's invocation is killed from outside: its operation is cancelled and
   * it writes nothing more, as a worker that died; the job's lease lapses and a later delivery
   * takes it over.
   */
  readonly signal?: AbortSignal;
}

export interface JobContext {
  readonly store: WebApiStore;
  /** How long a worker holds a job it started (at least its own time-out). */
  readonly leaseSeconds: number;
  readonly requestId: string;
  readonly log?: Log;
  /** Counts each delivery's outcome (`WebApiJobs` by `outcome`). */
  readonly metrics?: ServiceMetrics;
}

/**
 * What one delivery came to: `finished`/`failed` (the operation's answer is journaled),
 * `time_limit` (it outran the worker), `abandoned` (ended as failed after its last attempt failed
 * outside the database, or found with every attempt made and not ended: its workers stopped),
 * `retry`, `held` (another worker runs it) or `ended` (already over: a duplicate delivery).
 */
export type JobOutcome = 'finished' | 'failed' | 'time_limit' | 'abandoned' | 'retry' | 'held' | 'ended';

/** Reads a job message; undefined when it is not one (such a message can never succeed). */
export function parseWebApiJob(body: string): WebApiJob | undefined {
  try {
    const value = JSON.parse(body) as Partial<WebApiJob>;
    if (typeof value.tenant !== 'string' || !Number.isSafeInteger(value.journalId) || value.journalId! < 1) {
      return undefined;
    }
    return { tenant: value.tenant, journalId: value.journalId!, requestId: String(value.requestId ?? '') };
  } catch {
    return undefined;
  }
}

class TimeLimitExceeded extends Error {
  override readonly name = 'TimeLimitExceeded';
}

class WorkerKilled extends Error {
  override readonly name = 'WorkerKilled';
}

/**
 * Runs `run` until `ms` have passed or `killed` is aborted; then cancels it (in the database,
 * through the signal) and throws.
 */
async function withinTimeLimit<T>(
  run: (signal: AbortSignal) => Promise<T>,
  ms: number,
  killed?: AbortSignal,
): Promise<T> {
  const cancellation = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onKilled: (() => void) | undefined;
  const limit = new Promise<never>((_resolve, reject) => {
    const stop = (error: Error) => {
      cancellation.abort();
      reject(error);
    };
    timer = setTimeout(() => stop(new TimeLimitExceeded()), Math.max(0, ms));
    onKilled = () => stop(new WorkerKilled());
    if (killed?.aborted) onKilled();
    else killed?.addEventListener('abort', onKilled, { once: true });
  });
  const work = run(cancellation.signal);
  // The operation may still fail after the limit (its cancellation, say): not an unhandled rejection.
  work.catch(() => undefined);
  try {
    return await Promise.race([work, limit]);
  } finally {
    clearTimeout(timer);
    if (onKilled) killed?.removeEventListener('abort', onKilled);
  }
}

/**
 * Runs one delivery of a job and writes its answer and state into the journal. Idempotent: a job
 * that has ended is not run again, and a job another worker holds is left to it. Attempts are
 * counted in the journal as workers take the job, so a delivery that never reached a worker uses
 * none. A failure outside the operation (database unreachable, a bug) asks for another delivery,
 * except on the last attempt, which ends the job as failed so that 997 answers its error; so does
 * a delivery that finds every attempt made and the job still running. A job that outruns the
 * worker's time limit ends as failed at once, because another attempt would only outrun it again.
 */
export async function runJob(ctx: JobContext, job: WebApiJob, delivery: JobDelivery): Promise<JobOutcome> {
  const outcome = await deliverJob(ctx, job, delivery);
  (ctx.metrics ?? noMetrics).count({ [MetricName.jobs]: 1 }, [{ outcome }]);
  return outcome;
}

async function deliverJob(ctx: JobContext, job: WebApiJob, delivery: JobDelivery): Promise<JobOutcome> {
  const log = ctx.log ?? silentLog;
  if (delivery.signal?.aborted) return 'retry';
  const entry = await ctx.store.startAttempt(job.journalId, ctx.leaseSeconds, delivery.maxAttempts);
  if (!entry) {
    const current = await ctx.store.readJournal(job.journalId);
    if (current?.state !== 'running') return 'ended';
    // Another worker holds it: it finishes it, or its lease lapses and a later delivery takes over.
    if (current.leaseHeld) return delivery.finalReceive ? 'held' : 'retry';
    // The lease lapsed between the two statements: the next delivery takes it.
    if (current.attempts < delivery.maxAttempts) return 'retry';
    // Every attempt was made and none ended the job (their workers stopped): it ends here, unrun.
    log.error('job found with every attempt made; it is given up', {
      requestId: ctx.requestId,
      tenant: job.tenant,
      journalId: current.id,
      attempts: current.attempts,
    });
    const ended = await ctx.store.finishJournal(
      current.id,
      failedOutcome(
        current.id,
        WebApiErrorCode.jobAbandoned,
        `The job could not be completed after ${current.attempts} attempts`,
      ),
    );
    return ended ? 'abandoned' : 'ended';
  }
  const attempt = entry.attempts;
  delivery.onAttempt?.(attempt);
  const last = attempt >= delivery.maxAttempts || delivery.finalReceive;
  const fields = {
    requestId: ctx.requestId,
    tenant: job.tenant,
    journalId: entry.id,
    attempt,
  };
  let outcome: JournalOutcome;
  let reported: JobOutcome | undefined;
  let operation: Operation | undefined;
  try {
    const request = JSON.parse(entry.request) as WebApiRequest;
    operation = await ctx.store.findOperation(entry.vltyp);
    if (!operation) {
      outcome = failedOutcome(entry.id, WebApiErrorCode.unknownVltyp, `Unknown vltyp ${entry.vltyp}`);
    } else {
      // The procedure and the journal's final answer commit together, fenced by this attempt: a
      // worker whose job a successor took over (its lease lapsed) finishes nothing, and its
      // procedure's writes roll back with it (CONTRACT 5a).
      const found = operation;
      const answer = await withinTimeLimit(
        (signal) =>
          commitCall(
            ctx.store,
            entry.id,
            (tx) => executeOperation(tx, found, request, entry.id, { requestId: ctx.requestId, log }, signal),
            (tx, ended) => tx.finishAttempt(entry.id, attempt, ended),
          ),
        delivery.timeLimitMs,
        delivery.signal,
      );
      return answer.result?.answer.vlResult === 1 ? 'finished' : 'failed';
    }
  } catch (error) {
    if (delivery.signal?.aborted) {
      log.warn('job worker killed; the job is left to its lease', fields);
      return 'retry';
    }
    if (error instanceof JournalEndedError) {
      log.warn(
        "job finished by a later attempt or ended meanwhile; this attempt's work is rolled back",
        fields,
      );
      return 'ended';
    }
    if (error instanceof OperationFailedError && error.transactionLost && operation) {
      // Its transaction is gone: the job ends failed on its own.
      outcome = operationFailedOutcome(entry.id, operation, error, { requestId: ctx.requestId, log });
    } else if (error instanceof DatabasePermissionError) {
      // Not mended by trying again: the job ends now, saying what to grant.
      reportPermissionDenied(error, fields, log, ctx.metrics ?? noMetrics);
      reported = 'abandoned';
      outcome = failedOutcome(entry.id, WebApiErrorCode.databasePermissionDenied, error.message);
    } else if (error instanceof TimeLimitExceeded) {
      log.warn('job outran the worker', fields);
      reported = 'time_limit';
      outcome = failedOutcome(
        entry.id,
        WebApiErrorCode.jobAbandoned,
        `The operation did not finish within the worker's time limit (${Math.round(delivery.timeLimitMs / 1000)} s)`,
      );
    } else if (!last) {
      log.warn('job attempt failed; it will be delivered again', { ...fields, ...describeError(error) });
      await ctx.store.releaseJob(entry.id, attempt).catch(() => undefined);
      return 'retry';
    } else {
      log.error('job failed on its last attempt', { ...fields, ...describeError(error) });
      reported = 'abandoned';
      outcome =
        error instanceof DatabaseUnavailableError
          ? failedOutcome(
              entry.id,
              WebApiErrorCode.databaseUnavailable,
              'The database was not reachable; the job was given up',
            )
          : failedOutcome(
              entry.id,
              WebApiErrorCode.jobAbandoned,
              `The job could not be completed after ${attempt} attempts`,
            );
    }
  }
  // A dead worker writes nothing.
  if (delivery.signal?.aborted) return 'retry';
  // The job ends without its operation's effects (none ran, or they rolled back). Should this fail
  // too, the message goes back to the queue and its next delivery finds the attempts used up (or
  // the queue's redrive takes it); 997 ends it once stale at the latest. Only while this attempt
  // is the job's latest: a successor that took the job over after this worker's lease lapsed
  // finishes it, and this worker's answer is dropped.
  if (!(await ctx.store.finishAttempt(entry.id, attempt, outcome))) {
    log.warn("job finished by a later attempt or ended meanwhile; this attempt's answer is dropped", fields);
    return 'ended';
  }
  return reported ?? (outcome.state === 'finished' ? 'finished' : 'failed');
}
