import type { SQSRecord } from 'aws-lambda';
import type { DeadLetterQueue } from '../adapters/sqs/dead-letter-queue.js';
import type { MessageVisibility } from '../adapters/sqs/message-visibility.js';
import type { SlowLane } from '../adapters/sqs/slow-lane.js';
import { type DeliveryLane, slowLaneDelay } from '../core/delivery/lanes.js';
import { describeError } from '../core/log.js';
import { MetricName } from '../core/metrics.js';
import { serviceLog, serviceMetrics } from './observability.js';

export type LogLevel = 'info' | 'warn' | 'error';

/** The queues a delivery's decision is carried out on. */
export interface DeliveryQueues {
  /** Where the fast lane hands an event over (core/delivery/lanes.ts). */
  readonly slowLane: () => SlowLane;
  readonly deadLetterQueue: () => DeadLetterQueue;
  /** The queue of a lane, for postponing a message received from it. */
  readonly visibility: (lane: DeliveryLane) => MessageVisibility;
  /** The queue's name in the `DeadLettered` metric. */
  readonly metricQueue: string;
}

/** How a use of the delivery engine logs its decisions. */
export interface DecisionLog {
  /** The message of its lines: `webhook`, `notification`. */
  readonly message: string;
  /** What it calls what it delivers, in a line about a failed hand-over: `event`, `notification`. */
  readonly what: string;
  /** The level of a line about an outcome. */
  readonly level: (outcome: string) => LogLevel;
  /** The outcomes that count as failed attempts (`WebhookFailures`). */
  readonly failures: ReadonlySet<string>;
  /** The outcomes of a copy that made no attempt (another copy was sending): not `WebhookAttempts`. */
  readonly unattempted?: ReadonlySet<string>;
}

/** A decision of the delivery engine (core/delivery/engine.ts), or of a use before it. */
export interface QueueDecision {
  readonly action: 'done' | 'retry' | 'dead-letter' | 'slow-lane';
  readonly outcome: string;
  readonly detail?: string;
  readonly delaySeconds?: number;
}

/** This attempt's failure disabled its receiver: the use's one warning about it. */
export interface Disabling {
  readonly message: string;
  readonly fields?: Record<string, unknown>;
}

/**
 * A copy handed over with a delay longer than SQS holds a message back waits out the rest on its
 * lane's queue (no attempt): true when it was postponed so.
 */
export async function waitsOut(
  record: SQSRecord,
  copy: { readonly lane: DeliveryLane; readonly dueAt?: number },
  queues: Pick<DeliveryQueues, 'visibility'>,
  now: number,
): Promise<boolean> {
  if (copy.dueAt === undefined || copy.dueAt <= now + 1000) return false;
  await queues.visibility(copy.lane).postpone(record.receiptHandle, (copy.dueAt - now) / 1000);
  return true;
}

/**
 * Carries a delivery's decision out on its queues, the same for every use: done is deleted; in
 * the fast lane a retry, or a receiver that is slow or failing, goes to the slow lane; the last
 * failure to the dead-letter queue (sent there by the function itself, the queue's own redrive
 * being the backstop); a retry in the slow lane stays on its queue, its visibility set to the
 * delay. True when the record is finished and may be deleted.
 */
export async function carryOut(
  record: SQSRecord,
  decision: QueueDecision,
  where: { readonly lane: DeliveryLane; readonly tenant: string | undefined; readonly now: number },
  queues: DeliveryQueues,
  log: DecisionLog,
  fields: Record<string, unknown>,
  disabling?: Disabling,
): Promise<boolean> {
  serviceMetrics().count(
    {
      [MetricName.webhookAttempts]: log.unattempted?.has(decision.outcome) ? 0 : 1,
      [MetricName.webhookFailures]: log.failures.has(decision.outcome) ? 1 : 0,
    },
    [{}, { outcome: decision.outcome }],
  );
  if (disabling) {
    // Once per disabling: the one attempt whose failure disabled it says so.
    serviceMetrics().count({ [MetricName.webhookEndpointDisabled]: 1 }, [{}]);
    serviceLog().warn(disabling.message, { ...fields, ...disabling.fields });
  }
  const line = { ...fields, outcome: decision.outcome, detail: decision.detail };
  if (decision.action === 'done') {
    serviceLog()[log.level(decision.outcome)](log.message, line);
    return true;
  }
  // The fast lane never waits for a receiver that is slow or failing: its next attempt (now, or
  // after the retry's delay) is the slow lane's.
  const handOver = slowLaneDelay(decision, where.lane);
  if (handOver !== undefined && where.tenant !== undefined) {
    try {
      await queues.slowLane().hand(record, where.tenant, handOver, where.now);
      const level = decision.action === 'slow-lane' ? 'info' : log.level(decision.outcome);
      serviceLog()[level](log.message, { ...line, lane: 'slow', retryInSeconds: handOver });
      return true;
    } catch (error) {
      // Kept in the fast lane: it comes back after its delay (or the queue's visibility time-out).
      serviceLog().error(`could not hand the ${log.what} to the slow lane`, {
        ...line,
        ...describeError(error),
      });
    }
  }
  if (decision.action === 'dead-letter') {
    let deadLetterMessageId: string | undefined;
    let moved = false;
    try {
      deadLetterMessageId = await queues.deadLetterQueue().send(record, where.tenant);
      moved = true;
      serviceMetrics().count({ [MetricName.deadLettered]: 1 }, [{ queue: queues.metricQueue }]);
    } catch (error) {
      // Kept and made visible again: its next receive finds the attempts used up and tries
      // again, and at maxReceiveCount the queue's own redrive moves it.
      serviceLog().error('could not move the message to the dead-letter queue', {
        ...line,
        ...describeError(error),
      });
    }
    serviceLog().error(log.message, {
      ...line,
      deadLetter: moved,
      ...(moved ? { deadLetterMessageId } : {}),
    });
    if (moved) return true;
  } else if (decision.action === 'retry') {
    serviceLog()[log.level(decision.outcome)](log.message, {
      ...line,
      retryInSeconds: decision.delaySeconds,
    });
  }
  try {
    await queues.visibility(where.lane).postpone(record.receiptHandle, decision.delaySeconds ?? 0);
  } catch (error) {
    // The message still comes back, after the queue's own visibility time-out.
    serviceLog().error('could not set the message visibility', { ...line, ...describeError(error) });
  }
  return false;
}
