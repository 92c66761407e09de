import type { SQSRecord } from 'aws-lambda';
import { createSqsDeadLetterQueue } from '../adapters/sqs/dead-letter-queue.js';
import { createSqsMessageVisibility } from '../adapters/sqs/message-visibility.js';
import { createSqsSlowLane, laneCopy } from '../adapters/sqs/slow-lane.js';
import { openDatabase } from '../config/databases.js';
import { queueUrl } from '../config/queues.js';
import { findTenant } from '../config/tenant-registry.js';
import { getWebhookSettings } from '../config/webhook.js';
import type { WebhookSender } from '../core/delivery/sender.js';
import { describeError } from '../core/log.js';
import {
  deliverNotification,
  type NotificationDecision,
  notifierPass,
  parseNotifierMessage,
} from '../core/notifications/notifier.js';
import type { NotificationMessage } from '../core/notifications/subscriptions.js';
import { recording } from '../core/tracing.js';
import { changeFeedStore } from './change-feed.js';
import { carryOut, type DecisionLog, type DeliveryQueues, waitsOut } from './delivery-decisions.js';
import { notificationQueue, subscriptionStore } from './notifications.js';
import { logFormatFromEnv, reportPermissionDenied, serviceLog } from './observability.js';
import { invocationFields, queueConsumer, type RecordInvocation } from './queue-consumer.js';
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

const NOTIFICATION_LOG: DecisionLog = {
  message: 'notification',
  what: 'notification',
  level: (outcome) => (FAILED.has(outcome) ? 'warn' : 'info'),
  failures: FAILED,
};

/** Change notifications' queues: the notifications queue is the fast lane (core/delivery/lanes.ts). */
const NOTIFICATION_QUEUES: DeliveryQueues = {
  slowLane: () => createSqsSlowLane(queueUrl('changeNotificationsSlow')),
  deadLetterQueue: () => createSqsDeadLetterQueue(queueUrl('changeNotificationsDeadLetter')),
  visibility: (lane) =>
    createSqsMessageVisibility(queueUrl(lane === 'fast' ? 'changeNotifications' : 'changeNotificationsSlow')),
  metricQueue: 'change-notifications',
};

/**
 * The SQS consumer of change notifications' three queues (CONTRACT 4c): a `pass` message (on the
 * passes' own queue) runs one pass of its tenant's notifier and asks for the next after the
 * tenant's delay (the loop); a `notify` message is one attempt to deliver a subscription's event,
 * in the fast lane (the notifications queue) or the slow lane (delivery/lanes.ts: a receiver that
 * is failing or slow, or whose attempt in the fast lane was not answered in its time or failed, is
 * handed over), retried there by postponing the message, dead-lettered by the function after its
 * last attempt, as the receipt webhook's are.
 */
export function changeNotifierHandler(deps: ChangeNotifierDependencies = {}) {
  logFormatFromEnv();
  getWebhookSettings();
  const now = deps.now ?? Date.now;
  const sender = deps.sender ?? (() => defaultSender(getWebhookSettings()));

  async function pass(
    tenantId: string,
    fields: Record<string, unknown>,
    invocation: RecordInvocation,
  ): Promise<void> {
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
      const db = await openDatabase(tenant.database, invocation.trace);
      const outcome = await notifierPass({
        tenant: tenant.id,
        store: subscriptionStore(db, tenant.id),
        feed: changeFeedStore(db),
        // The notifications a pass finds are delivered in its trace (CONTRACT 8a).
        queue: notificationQueue(invocation.trace),
        recorded: tenant.changeFeed,
        delayMs,
        staleWaitingMs: staleWaitingMs(),
        now,
        ...(recording(invocation.trace) ? { linkWrites: invocation.link } : {}),
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
    // Without this pass's trace: each pass of the endless loop is a trace of its own.
    await notificationQueue().pass(tenant.id, Math.max(0, Math.ceil((delayMs - elapsed) / 1000)));
  }

  /** True when the record is finished and may be deleted. */
  async function notify(
    record: SQSRecord,
    message: NotificationMessage,
    fields: Record<string, unknown>,
    invocation: RecordInvocation,
  ): Promise<boolean> {
    const settings = getWebhookSettings();
    const receiveCount = Math.max(1, Number(record.attributes.ApproximateReceiveCount) || 1);
    const copy = laneCopy(record);
    const { lane, series } = copy;
    if (lane === 'slow') Object.assign(fields, { lane, series });
    if (await waitsOut(record, copy, NOTIFICATION_QUEUES, now())) return false;
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
      const db = await openDatabase(tenant.database, invocation.trace);
      decision = await deliverNotification(
        message,
        // Attempts are counted by the message that began the series, in either lane.
        { messageId: series, finalReceive: receiveCount >= settings.maxReceives },
        {
          store: subscriptionStore(db, tenant.id),
          sender: await sender(),
          retrySchedule: settings.retrySchedule,
          allowPrivateTargets: settings.allowPrivateTargets,
          endpointPolicy: settings.endpointPolicy,
          lanes: { lane, fastAnswerMs: settings.fastAnswerMs },
          now,
          trace: invocation.trace,
        },
      );
    }
    return carryOut(
      record,
      decision,
      { lane, tenant: message.tenant, now: now() },
      NOTIFICATION_QUEUES,
      NOTIFICATION_LOG,
      { ...fields, attempt: decision.attempt },
      decision.disabled
        ? { message: 'subscription disabled', fields: { outcome: decision.outcome, detail: decision.detail } }
        : undefined,
    );
  }

  const fieldsOf = (record: SQSRecord, invocation: RecordInvocation) => {
    const message = parseNotifierMessage(record.body);
    return {
      message,
      fields: {
        ...invocationFields(invocation),
        messageId: record.messageId,
        ...(message ? { tenant: message.tenant, kind: message.kind } : {}),
        ...(message?.kind === 'notify'
          ? { subscription: message.subscription, eventId: message.eventId, type: message.type }
          : {}),
      },
    };
  };
  return queueConsumer({
    async handle(record, invocation) {
      const { message, fields } = fieldsOf(record, invocation);
      if (!message) {
        serviceLog().error('change notifier: not a message of the service, dropped', fields);
        return 'done';
      }
      if (message.kind === 'pass') {
        await pass(message.tenant, fields, invocation);
        return 'done';
      }
      return (await notify(record, message, fields, invocation)) ? 'done' : 'kept';
    },
    failed(record, error, invocation) {
      const { fields } = fieldsOf(record, invocation);
      reportPermissionDenied(error, fields);
      serviceLog().error('change notifier record failed', { ...fields, ...describeError(error) });
    },
  });
}
