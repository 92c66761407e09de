import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { createSqsDeadLetterQueue } from '../adapters/sqs/dead-letter-queue.js';
import { createSqsMessageVisibility } from '../adapters/sqs/message-visibility.js';
import { createSqsSlowLane, laneCopy } from '../adapters/sqs/slow-lane.js';
import { openDatabase } from '../config/databases.js';
import { queueUrl } from '../config/queues.js';
import { findTenant } from '../config/tenant-registry.js';
import { getWebhookSettings } from '../config/webhook.js';
import { describeError } from '../core/log.js';
import { MetricName } from '../core/metrics.js';
import {
  deliverNotification,
  type NotificationDecision,
  notifierPass,
  parseNotifierMessage,
} from '../core/notifications/notifier.js';
import type { NotificationMessage } from '../core/notifications/subscriptions.js';
import type { WebhookSender } from '../core/webhook/deliver.js';
import { slowLaneDelay } from '../core/webhook/lanes.js';
import { changeFeedStore } from './change-feed.js';
import { notificationQueue, subscriptionStore } from './notifications.js';
import { logFormatFromEnv, reportPermissionDenied, serviceLog, serviceMetrics } from './observability.js';
import { defaultSender } from './webhook-sender.js';

/** What the consumer needs besides the registry and the databases; tests replace it. */
export interface ChangeNotifierDependencies {
  readonly sender?: () => Promise<WebhookSender>;
  readonly now?: () => number;
}

/**
 * After how long an event still marked waiting is taken as lost (its message gone without its
 * outcome recorded): longer than all its attempts can take, plus an hour.
 */
function staleWaitingMs(): number {
  const schedule = getWebhookSettings().retrySchedule;
  return (schedule.reduce((sum, seconds) => sum + seconds, 0) * 1.1 + 3600) * 1000;
}

const FAILED = new Set(['retrying', 'failed', 'gone', 'refused']);

/**
 * The SQS consumer of change notifications' three queues (CONTRACT 4c): a `pass` message (on the
 * passes' own queue) runs one pass of its tenant's notifier and asks for the next after the
 * tenant's delay (the loop); a `notify` message is one attempt to deliver a subscription's event,
 * in the fast lane (the notifications queue) or the slow lane (webhook/lanes.ts: a receiver that
 * is failing or slow, or whose attempt in the fast lane was not answered in its time or failed, is
 * handed over), retried there by postponing the message, dead-lettered by the function after its
 * last attempt, as the receipt webhook's are.
 */
export function changeNotifierHandler(deps: ChangeNotifierDependencies = {}) {
  logFormatFromEnv();
  getWebhookSettings();
  const now = deps.now ?? Date.now;
  const sender = deps.sender ?? (() => defaultSender(getWebhookSettings()));

  async function pass(tenantId: string, fields: Record<string, unknown>): Promise<void> {
    const tenant = await findTenant(tenantId, serviceLog());
    if (!tenant) {
      // A tenant removed from the registry: its loop ends.
      serviceLog().warn('change notifier: unknown tenant, its passes end', fields);
      return;
    }
    const delayMs = tenant.changeNotificationDelaySeconds * 1000;
    const started = now();
    let again = true;
    try {
      const db = await openDatabase(tenant.database);
      const outcome = await notifierPass({
        tenant: tenant.id,
        store: subscriptionStore(db, tenant.id),
        feed: changeFeedStore(db),
        queue: notificationQueue(),
        recorded: tenant.changeFeed,
        delayMs,
        staleWaitingMs: staleWaitingMs(),
        now,
      });
      again = outcome.again;
      const level = outcome.unchecked.length > 0 ? 'warn' : 'debug';
      serviceLog()[level]('change notifier pass', {
        ...fields,
        ...outcome,
        durationMs: now() - started,
      });
    } catch (error) {
      // The loop goes on: the next pass tries again.
      reportPermissionDenied(error, fields);
      serviceLog().error('change notifier pass failed', { ...fields, ...describeError(error) });
    }
    if (!again) return;
    const elapsed = now() - started;
    // A failure to ask for the next pass fails this record: SQS brings it back and the loop goes on.
    // Whole seconds (SQS's), rounded up: a pass asked for early would find this one too recent.
    await notificationQueue().pass(tenant.id, Math.max(0, Math.ceil((delayMs - elapsed) / 1000)));
  }

  /** True when the record is finished and may be deleted. */
  async function notify(
    record: SQSRecord,
    message: NotificationMessage,
    fields: Record<string, unknown>,
  ): Promise<boolean> {
    const settings = getWebhookSettings();
    const receiveCount = Math.max(1, Number(record.attributes.ApproximateReceiveCount) || 1);
    const { lane, series, dueAt } = laneCopy(record);
    const laneQueue = lane === 'fast' ? 'changeNotifications' : 'changeNotificationsSlow';
    if (lane === 'slow') Object.assign(fields, { lane, series });
    if (dueAt !== undefined && dueAt > now() + 1000) {
      // Handed over with a delay longer than SQS holds a message back: it waits out the rest here.
      await createSqsMessageVisibility(queueUrl(laneQueue)).postpone(
        record.receiptHandle,
        (dueAt - now()) / 1000,
      );
      return false;
    }
    const tenant = await findTenant(message.tenant, serviceLog());
    let decision: NotificationDecision;
    if (!tenant) {
      decision = {
        action: 'dead-letter',
        outcome: 'failed',
        attempt: receiveCount,
        detail: 'unknown tenant',
      };
    } else {
      const db = await openDatabase(tenant.database);
      decision = await deliverNotification(
        message,
        // Attempts are counted by the message that began the series, in either lane.
        { messageId: series, finalReceive: receiveCount >= settings.maxReceives },
        {
          store: subscriptionStore(db, tenant.id),
          sender: await sender(),
          policy: {
            retrySchedule: settings.retrySchedule,
            allowPrivateTargets: settings.allowPrivateTargets,
            secretOverlapMs: settings.endpointPolicy.secretOverlapMs,
            disableAfterMs: settings.endpointPolicy.disableAfterMs,
          },
          lanes: { lane, fastAnswerMs: settings.fastAnswerMs },
          now,
        },
      );
    }
    const logFields = {
      ...fields,
      attempt: decision.attempt,
      outcome: decision.outcome,
      detail: decision.detail,
    };
    serviceMetrics().count(
      {
        [MetricName.webhookAttempts]: 1,
        [MetricName.webhookFailures]: FAILED.has(decision.outcome) ? 1 : 0,
      },
      [{}, { outcome: decision.outcome }],
    );
    if (decision.disabled) {
      serviceMetrics().count({ [MetricName.webhookEndpointDisabled]: 1 }, [{}]);
      serviceLog().warn('subscription disabled', logFields);
    }
    if (decision.action === 'done') {
      serviceLog()[FAILED.has(decision.outcome) ? 'warn' : 'info']('notification', logFields);
      return true;
    }
    // The fast lane never waits for a receiver that is slow or failing: its next attempt (now, or
    // after the retry's delay) is the slow lane's.
    const handOver = slowLaneDelay(decision, lane);
    if (handOver !== undefined) {
      try {
        await createSqsSlowLane(queueUrl('changeNotificationsSlow')).hand(
          record,
          message.tenant,
          handOver,
          now(),
        );
        const level = decision.action === 'slow-lane' ? 'info' : 'warn';
        serviceLog()[level]('notification', { ...logFields, lane: 'slow', retryInSeconds: handOver });
        return true;
      } catch (error) {
        // Kept in the fast lane: it comes back after its delay (or the queue's visibility time-out).
        serviceLog().error('could not hand the notification to the slow lane', {
          ...logFields,
          ...describeError(error),
        });
      }
    }
    if (decision.action === 'dead-letter') {
      try {
        await createSqsDeadLetterQueue(queueUrl('changeNotificationsDeadLetter')).send(
          record,
          message.tenant,
        );
        serviceMetrics().count({ [MetricName.deadLettered]: 1 }, [{ queue: 'change-notifications' }]);
        serviceLog().error('notification', { ...logFields, deadLetter: true });
        return true;
      } catch (error) {
        serviceLog().error('could not move the message to the dead-letter queue', {
          ...logFields,
          ...describeError(error),
        });
        return false;
      }
    }
    const delaySeconds = decision.action === 'retry' ? decision.delaySeconds : 0;
    serviceLog().warn('notification', { ...logFields, retryInSeconds: delaySeconds });
    try {
      await createSqsMessageVisibility(queueUrl(laneQueue)).postpone(record.receiptHandle, delaySeconds);
    } catch (error) {
      serviceLog().error('could not set the message visibility', { ...logFields, ...describeError(error) });
    }
    return false;
  }

  let coldStart = true;
  return async function changeNotifier(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
    const invocation = { requestId: context?.awsRequestId, function: context?.functionName, coldStart };
    coldStart = false;
    const failures: string[] = [];
    await Promise.all(
      event.Records.map(async (record) => {
        const message = parseNotifierMessage(record.body);
        const fields = {
          ...invocation,
          messageId: record.messageId,
          ...(message ? { tenant: message.tenant, kind: message.kind } : {}),
          ...(message?.kind === 'notify'
            ? { subscription: message.subscription, eventId: message.eventId, type: message.type }
            : {}),
        };
        try {
          if (!message) {
            serviceLog().error('change notifier: not a message of the service, dropped', fields);
            return;
          }
          if (message.kind === 'pass') return await pass(message.tenant, fields);
          if (!(await notify(record, message, fields))) failures.push(record.messageId);
        } catch (error) {
          reportPermissionDenied(error, fields);
          serviceLog().error('change notifier record failed', { ...fields, ...describeError(error) });
          failures.push(record.messageId);
        }
      }),
    );
    return { batchItemFailures: failures.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
