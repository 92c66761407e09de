import type { SQSRecord } from 'aws-lambda';
import { createEmbeddedWebhookDeliveryLog } from '../adapters/embedded/webhook-delivery-log.js';
import { createMssqlWebhookDeliveryLog } from '../adapters/mssql/webhook-delivery-log.js';
import { createSqsDeadLetterQueue, type DeadLetterQueue } from '../adapters/sqs/dead-letter-queue.js';
import { createSqsMessageVisibility, type MessageVisibility } from '../adapters/sqs/message-visibility.js';
import { createSqsSlowLane, laneCopy } from '../adapters/sqs/slow-lane.js';
import { byDialect, openDatabase } from '../config/databases.js';
import { queueUrl } from '../config/queues.js';
import { findTenant } from '../config/tenant-registry.js';
import type { DatabaseConnection, TenantConfig } from '../config/tenants.js';
import { getWebhookSettings, type WebhookSettings } from '../config/webhook.js';
import type { Database } from '../core/database.js';
import type { DeliveryLane } from '../core/delivery/lanes.js';
import type { WebhookSender } from '../core/delivery/sender.js';
import { describeError } from '../core/log.js';
import { deliverWebhook, type WebhookDecision } from '../core/webhook/deliver.js';
import type { WebhookDeliveryLog } from '../core/webhook/delivery-log.js';
import {
  type DocumentReceivedEvent,
  InvalidDocumentEventError,
  parseDocumentReceivedEvent,
  webhookEventId,
} from '../core/webhook/event.js';
import { carryOut, type DecisionLog, type DeliveryQueues, waitsOut } from './delivery-decisions.js';
import { logFormatFromEnv, reportPermissionDenied, serviceLog } from './observability.js';
import { invocationFields, queueConsumer, type RecordInvocation } from './queue-consumer.js';
import { defaultSender } from './webhook-sender.js';

/** What the document-received consumer needs, its queues among them; tests replace any of it. */
export interface DocumentReceivedDependencies extends Omit<DeliveryQueues, 'metricQueue'> {
  /** The tenant of an event, from the registry (read again early for one it does not know). */
  readonly tenant: (id: string) => Promise<TenantConfig | undefined>;
  readonly database: (connection: DatabaseConnection) => Promise<Database>;
  readonly settings: () => WebhookSettings;
  readonly sender: (settings: WebhookSettings) => Promise<WebhookSender>;
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

const defaultDeadLetterQueue = (): DeadLetterQueue =>
  createSqsDeadLetterQueue(queueUrl('documentReceivedDeadLetter'));

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
        embedded: (embedded) => createEmbeddedWebhookDeliveryLog(embedded, tenant),
      }),
    );
    return log;
  };
  return {
    claimAndFindTarget: async (...args) => (await get()).claimAndFindTarget(...args),
    releaseSending: async (...args) => (await get()).releaseSending(...args),
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
  in_flight: 'info',
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

const RECEIPT_LOG: DecisionLog = {
  message: 'webhook',
  what: 'event',
  level: (outcome) => LEVELS[outcome] ?? 'warn',
  failures: FAILED_ATTEMPTS,
  unattempted: new Set(['in_flight']),
};

/**
 * The SQS consumer of document-received events, in both delivery lanes (core/delivery/lanes.ts):
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
    if (decision.endpointEnabled) {
      log('info', 'webhook endpoint enabled again: its WEBHOOK_URL changed', fields);
    }
    return carryOut(
      record,
      decision,
      { lane, tenant, now: (deps.now ?? Date.now)() },
      { ...deps, metricQueue: 'document-received' },
      RECEIPT_LOG,
      fields,
      decision.endpointDisabled && {
        message: 'webhook endpoint disabled',
        fields: {
          failingSince: new Date(decision.endpointDisabled.failingSince).toISOString(),
          detail:
            'every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS; later events are recorded as disabled, not sent',
        },
      },
    );
  }

  /** True when the record is finished and may be deleted. */
  async function handleRecord(
    record: SQSRecord,
    event: DocumentReceivedEvent | Error,
    invocation: RecordInvocation,
  ): Promise<boolean> {
    const receiveCount = Math.max(1, Number(record.attributes.ApproximateReceiveCount) || 1);
    const started = performance.now();
    const inLane = laneCopy(record);
    const { lane, series } = inLane;
    // `attempt` is the receive count until the delivery log tells the attempt it recorded.
    const fields: Record<string, unknown> = {
      ...invocationFields(invocation),
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
    if (await waitsOut(record, inLane, deps, (deps.now ?? Date.now)())) return false;
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
      // The POST in the trace of the event: the access point's, or the resend's (CONTRACT 8a).
      trace: invocation.trace,
      onReleaseFailure: (error) => {
        reportPermissionDenied(error, fields);
        log('warn', 'could not release the claim to send the webhook (it lapses at its time)', {
          ...fields,
          ...describeError(error),
        });
      },
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

  const parse = (record: SQSRecord): DocumentReceivedEvent | Error => {
    try {
      return parseDocumentReceivedEvent(record.body);
    } catch (error) {
      return error instanceof InvalidDocumentEventError ? error : new Error('unreadable event');
    }
  };
  return queueConsumer({
    async handle(record, invocation) {
      return (await handleRecord(record, parse(record), invocation)) ? 'done' : 'kept';
    },
    // Copies of one event in a batch one after the other, so that the second sees the first's delivery.
    inOrder(record) {
      const parsed = parse(record);
      return parsed instanceof Error ? undefined : webhookEventId(parsed);
    },
    failed(record, error, invocation) {
      // Not deleted: the message comes back after the queue's visibility time-out.
      const parsed = parse(record);
      const fields = { ...invocationFields(invocation), messageId: record.messageId };
      reportPermissionDenied(error, {
        ...fields,
        tenant: parsed instanceof Error ? undefined : parsed.tenant,
      });
      log('error', 'webhook record failed', { ...fields, ...describeError(error) });
    },
  });
}
