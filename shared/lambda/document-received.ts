import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { createEmbeddedWebhookDeliveryLog } from '../adapters/embedded-sql/webhook-delivery-log.js';
import { createMssqlWebhookDeliveryLog } from '../adapters/mssql/webhook-delivery-log.js';
import { createSqsDeadLetterQueue, type DeadLetterQueue } from '../adapters/sqs/dead-letter-queue.js';
import { createSqsMessageVisibility, type MessageVisibility } from '../adapters/sqs/message-visibility.js';
import { createSqsSlowLane, laneCopy, type SlowLane } from '../adapters/sqs/slow-lane.js';
import { byDialect, openDatabase } from '../config/databases.js';
import { queueUrl } from '../config/queues.js';
import { ConfigurationError } from '../config/settings.js';
import { findTenant } from '../config/tenant-registry.js';
import type { DatabaseConnection, TenantConfig } from '../config/tenants.js';
import { getWebhookSettings, type WebhookSettings } from '../config/webhook.js';
import type { Database } from '../core/database.js';
import { describeError } from '../core/log.js';
import { MetricName } from '../core/metrics.js';
import { deliverWebhook, type WebhookDecision, type WebhookSender } from '../core/webhook/deliver.js';
import type { WebhookDeliveryLog } from '../core/webhook/delivery-log.js';
import {
  type DocumentReceivedEvent,
  InvalidDocumentEventError,
  parseDocumentReceivedEvent,
  webhookEventId,
} from '../core/webhook/event.js';
import { type DeliveryLane, slowLaneDelay } from '../core/webhook/lanes.js';
import { logFormatFromEnv, reportPermissionDenied, serviceLog, serviceMetrics } from './observability.js';
import { defaultSender } from './webhook-sender.js';

/** What the document-received consumer needs; tests replace any of it. */
export interface DocumentReceivedDependencies {
  /** The tenant of an event, from the registry (read again early for one it does not know). */
  readonly tenant: (id: string) => Promise<TenantConfig | undefined>;
  readonly database: (connection: DatabaseConnection) => Promise<Database>;
  readonly settings: () => WebhookSettings;
  readonly sender: (settings: WebhookSettings) => Promise<WebhookSender>;
  /** The queue of a lane, for postponing a message received from it. */
  readonly visibility: (lane: DeliveryLane) => MessageVisibility;
  /** Where the fast lane hands an event over (core/webhook/lanes.ts). */
  readonly slowLane: () => SlowLane;
  readonly deadLetterQueue: (settings: WebhookSettings) => DeadLetterQueue;
  readonly now?: () => number;
  readonly random?: () => number;
}

type LogLevel = 'info' | 'warn' | 'error';

const log = (level: LogLevel, message: string, fields: Record<string, unknown>) =>
  serviceLog()[level](message, fields);

/** Outcomes of an attempt that reached (or tried to reach) the target and did not deliver. */
const FAILED_ATTEMPTS = new Set(['retrying', 'failed', 'gone']);

const defaultVisibility = (lane: DeliveryLane): MessageVisibility =>
  createSqsMessageVisibility(queueUrl(lane === 'fast' ? 'documentReceived' : 'documentReceivedSlow'));

function defaultDeadLetterQueue(settings: WebhookSettings): DeadLetterQueue {
  if (!settings.deadLetterQueueUrl) {
    throw new ConfigurationError('DOCUMENT_RECEIVED_DEAD_LETTER_QUEUE_URL must be set');
  }
  return createSqsDeadLetterQueue(settings.deadLetterQueueUrl);
}

const defaults: DocumentReceivedDependencies = {
  tenant: (id) => findTenant(id, serviceLog()),
  database: openDatabase,
  settings: getWebhookSettings,
  sender: defaultSender,
  visibility: defaultVisibility,
  slowLane: () => createSqsSlowLane(queueUrl('documentReceivedSlow')),
  deadLetterQueue: defaultDeadLetterQueue,
};

/**
 * The tenant's delivery log in its database opened on first use, so that opening failures count as
 * database failures.
 */
function lazyDeliveryLog(open: () => Promise<Database>, tenant: string): WebhookDeliveryLog {
  let log: Promise<WebhookDeliveryLog> | undefined;
  const get = () => {
    log ??= open().then((db) =>
      byDialect(db, {
        mssql: (mssql) => createMssqlWebhookDeliveryLog(mssql, tenant),
        postgres: (embedded) => createEmbeddedWebhookDeliveryLog(embedded, tenant),
      }),
    );
    return log;
  };
  return {
    findTarget: async (key) => (await get()).findTarget(key),
    record: async (entry) => (await get()).record(entry),
    rememberEndpoint: async (...args) => (await get()).rememberEndpoint(...args),
    endpointDelivered: async (...args) => (await get()).endpointDelivered(...args),
    endpointSlow: async (...args) => (await get()).endpointSlow(...args),
    endpointFailed: async (...args) => (await get()).endpointFailed(...args),
  };
}

const LEVELS: Record<string, LogLevel> = {
  delivered: 'info',
  skipped: 'info',
  duplicate: 'info',
  retrying: 'warn',
  gone: 'warn',
  refused: 'warn',
  unknown_subject: 'warn',
  failed: 'error',
  not_recorded: 'error',
  disabled: 'info',
  resent: 'info',
  slow_lane: 'info',
};

/**
 * The SQS consumer of document-received events, in both delivery lanes (core/webhook/lanes.ts):
 * the document-received queue is the fast lane, where every event comes first; an event whose
 * receiver is failing or slow, or whose attempt there was not answered in the fast lane's time or
 * failed, is handed to the slow lane's queue. Each record is delivered (or not) by the core; in
 * the slow lane a record to retry stays on the queue with its visibility set to the next delay,
 * so SQS itself brings it back; its attempts are counted in WEBHOOK_DELIVERY (by the message that
 * began its series, across both lanes), not by its receive count, which receives that never
 * reached the function (throttling) inflate. After the last attempt the function moves it to the
 * dead-letter queue itself (the queue's `maxReceiveCount` leaves room for such receives, so its
 * redrive would come too late). Copies of one event in a batch are handled one after the other,
 * so the second sees the first's delivery.
 */
export function documentReceivedHandler(overrides: Partial<DocumentReceivedDependencies> = {}) {
  const deps: DocumentReceivedDependencies = { ...defaults, ...overrides };
  // A bad WEBHOOK_RETRY_SCHEDULE, WEBHOOK_ALLOW_PRIVATE_TARGETS or LOG_FORMAT fails the cold start, by name.
  deps.settings();
  logFormatFromEnv();

  /** True when the record is finished and may be deleted. */
  async function apply(
    record: SQSRecord,
    decision: WebhookDecision,
    recordFields: Record<string, unknown>,
    started: number,
    tenant: string | undefined,
    lane: DeliveryLane,
  ): Promise<boolean> {
    const fields = {
      ...recordFields,
      ...(decision.attempt === undefined ? {} : { attempt: decision.attempt }),
      durationMs: Math.round(performance.now() - started),
    };
    reportPermissionDenied(decision.databaseError, fields);
    serviceMetrics().count(
      {
        [MetricName.webhookAttempts]: 1,
        [MetricName.webhookFailures]: FAILED_ATTEMPTS.has(decision.outcome) ? 1 : 0,
      },
      [{}, { outcome: decision.outcome }],
    );
    if (decision.endpointDisabled) {
      // Once per disabling: the one attempt whose failure disabled it says so.
      serviceMetrics().count({ [MetricName.webhookEndpointDisabled]: 1 }, [{}]);
      log('warn', 'webhook endpoint disabled', {
        ...fields,
        failingSince: new Date(decision.endpointDisabled.failingSince).toISOString(),
        detail:
          'every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS; later events are recorded as disabled, not sent',
      });
    }
    if (decision.endpointEnabled) {
      log('info', 'webhook endpoint enabled again: its WEBHOOK_URL changed', fields);
    }
    if (decision.action === 'done') {
      log(LEVELS[decision.outcome] ?? 'info', 'webhook', {
        ...fields,
        outcome: decision.outcome,
        detail: decision.detail,
      });
      return true;
    }
    // The fast lane never waits for a receiver that is slow or failing: its next attempt (now, or
    // after the retry's delay) is the slow lane's.
    const handOver = slowLaneDelay(decision, lane);
    if (handOver !== undefined && tenant !== undefined) {
      const level = decision.action === 'slow-lane' ? 'info' : (LEVELS[decision.outcome] ?? 'warn');
      try {
        await deps.slowLane().hand(record, tenant, handOver, (deps.now ?? Date.now)());
        log(level, 'webhook', {
          ...fields,
          outcome: decision.outcome,
          detail: decision.detail,
          lane: 'slow',
          retryInSeconds: handOver,
        });
        return true;
      } catch (error) {
        // Kept in the fast lane: it comes back after its delay (or the queue's visibility time-out).
        log('error', 'could not hand the event to the slow lane', { ...fields, ...describeError(error) });
      }
    }
    if (decision.action === 'dead-letter') {
      let deadLetterMessageId: string | undefined;
      let moved = false;
      try {
        deadLetterMessageId = await deps.deadLetterQueue(deps.settings()).send(record, tenant);
        moved = true;
        serviceMetrics().count({ [MetricName.deadLettered]: 1 }, [{ queue: 'document-received' }]);
      } catch (error) {
        // Kept and made visible again: its next receive finds the attempts used up and tries
        // again, and at maxReceiveCount the queue's own redrive moves it.
        log('error', 'could not move the message to the dead-letter queue', {
          ...fields,
          ...describeError(error),
        });
      }
      log('error', 'webhook', {
        ...fields,
        outcome: decision.outcome,
        detail: decision.detail,
        deadLetter: moved,
        ...(moved ? { deadLetterMessageId } : {}),
      });
      if (moved) return true;
    } else if (decision.action === 'retry') {
      log(LEVELS[decision.outcome] ?? 'warn', 'webhook', {
        ...fields,
        outcome: decision.outcome,
        detail: decision.detail,
        retryInSeconds: decision.delaySeconds,
      });
    }
    const delaySeconds = decision.action === 'retry' ? decision.delaySeconds : 0;
    try {
      await deps.visibility(lane).postpone(record.receiptHandle, delaySeconds);
    } catch (error) {
      // The message still comes back, after the queue's own visibility time-out.
      log('error', 'could not set the message visibility', { ...fields, ...describeError(error) });
    }
    return false;
  }

  /** True when the record is finished and may be deleted. */
  async function handleRecord(
    record: SQSRecord,
    event: DocumentReceivedEvent | Error,
    invocation: Record<string, unknown>,
  ): Promise<boolean> {
    const receiveCount = Math.max(1, Number(record.attributes.ApproximateReceiveCount) || 1);
    const started = performance.now();
    const { lane, series, dueAt } = laneCopy(record);
    // `attempt` is the receive count until the delivery log tells the attempt it recorded.
    const fields: Record<string, unknown> = {
      ...invocation,
      messageId: record.messageId,
      attempt: receiveCount,
      receiveCount,
      ...(lane === 'slow' ? { lane, series } : {}),
    };
    if (event instanceof Error) {
      return apply(
        record,
        { action: 'dead-letter', outcome: 'not_recorded', detail: event.message },
        fields,
        started,
        // Not readable, so no tenant: the group it came with, if any.
        record.attributes.MessageGroupId,
        lane,
      );
    }
    const now = (deps.now ?? Date.now)();
    if (dueAt !== undefined && dueAt > now + 1000) {
      // Handed over with a delay longer than SQS holds a message back: it waits out the rest here.
      await deps.visibility(lane).postpone(record.receiptHandle, (dueAt - now) / 1000);
      return false;
    }
    Object.assign(fields, {
      tenant: event.tenant,
      subjectId: event.subjectId,
      documentId: event.documentId,
      eventId: webhookEventId(event),
    });
    const tenant = await deps.tenant(event.tenant);
    if (!tenant) {
      // Nothing to record it in; the dead-letter queue keeps it for a redrive once the tenant exists.
      return apply(
        record,
        { action: 'dead-letter', outcome: 'not_recorded', detail: 'unknown tenant' },
        fields,
        started,
        event.tenant,
        lane,
      );
    }
    const settings = deps.settings();
    const copy = {
      // Attempts are counted by the message that began the series, in either lane.
      messageId: series,
      receiveCount,
      finalReceive: receiveCount >= settings.maxReceives,
    };
    const decision = await deliverWebhook(event, copy, {
      log: lazyDeliveryLog(() => deps.database(tenant.database), tenant.id),
      sender: await deps.sender(settings),
      retrySchedule: settings.retrySchedule,
      allowPrivateTargets: settings.allowPrivateTargets,
      endpointPolicy: settings.endpointPolicy,
      lanes: { lane, fastAnswerMs: settings.fastAnswerMs },
      now: deps.now,
      random: deps.random,
      onRecordFailure: (error, entry) => {
        reportPermissionDenied(error, fields);
        log('error', 'could not record the webhook attempt', {
          ...fields,
          outcome: entry.outcome,
          ...describeError(error),
        });
      },
    });
    return apply(record, decision, fields, started, event.tenant, lane);
  }

  let coldStart = true;
  return async function deliverDocumentWebhooks(
    event: SQSEvent,
    context?: Context,
  ): Promise<SQSBatchResponse> {
    const invocation = {
      requestId: context?.awsRequestId,
      function: context?.functionName,
      coldStart,
    };
    coldStart = false;
    const groups = new Map<string, { record: SQSRecord; event: DocumentReceivedEvent | Error }[]>();
    for (const record of event.Records) {
      let parsed: DocumentReceivedEvent | Error;
      try {
        parsed = parseDocumentReceivedEvent(record.body);
      } catch (error) {
        parsed = error instanceof InvalidDocumentEventError ? error : new Error('unreadable event');
      }
      const key = parsed instanceof Error ? `message:${record.messageId}` : webhookEventId(parsed);
      const group = groups.get(key) ?? [];
      group.push({ record, event: parsed });
      groups.set(key, group);
    }
    const failures: string[] = [];
    await Promise.all(
      [...groups.values()].map(async (group) => {
        for (const { record, event: parsed } of group) {
          let finished = false;
          try {
            finished = await handleRecord(record, parsed, invocation);
          } catch (error) {
            // Not deleted: the message comes back after the queue's visibility time-out.
            reportPermissionDenied(error, {
              ...invocation,
              messageId: record.messageId,
              tenant: parsed instanceof Error ? undefined : parsed.tenant,
            });
            log('error', 'webhook record failed', {
              ...invocation,
              messageId: record.messageId,
              ...describeError(error),
            });
          }
          if (!finished) failures.push(record.messageId);
        }
      }),
    );
    return { batchItemFailures: failures.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
