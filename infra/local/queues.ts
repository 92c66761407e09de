import { getWebApiJobSettings } from '../../shared/config/web-api.js';
import { getWebhookSettings } from '../../shared/config/webhook.js';

/** A queue of serverless.yml with its dead-letter queue and the SQS-triggered function it feeds. */
export interface LocalQueue {
  /** Queue name on the emulator. */
  readonly name: string;
  /** Environment variable through which the handlers learn the queue URL. */
  readonly urlEnv: string;
  readonly visibilityTimeoutSeconds: number;
  /** Deliveries before the message moves to `<name>-dlq`. */
  readonly maxReceiveCount: number;
  /** Environment variable for the dead-letter queue URL, where a handler needs it. */
  readonly dlqUrlEnv?: string;
  /** The queue whose dead-letter queue this one's redrive uses (default: a `<name>-dlq` of its own). */
  readonly deadLettersTo?: string;
  /** The consuming function: `handler` of serverless.yml; `concurrency` batches at once (default 1). */
  readonly consumer: {
    readonly function: string;
    readonly handler: string;
    readonly batchSize: number;
    readonly concurrency?: number;
    /** The function's time-out in serverless.yml: what its invocations are told remains. */
    readonly timeoutSeconds: number;
  };
}

/** Document-received events from the access point (CONTRACT.md section 6). */
export const DOCUMENT_RECEIVED_QUEUE = 'document-received';

/** getDataAsync's jobs (CONTRACT.md section 5). */
export const WEB_API_JOB_QUEUE = 'web-api-jobs';

/** Change notifications' events, their fast lane (CONTRACT.md section 4c; core/delivery/lanes.ts). */
export const CHANGE_NOTIFICATION_QUEUE = 'change-notifications';

/** The slow lanes of the receipt webhook and of change notifications (core/delivery/lanes.ts). */
export const DOCUMENT_RECEIVED_SLOW_QUEUE = 'document-received-slow';
export const CHANGE_NOTIFICATION_SLOW_QUEUE = 'change-notifications-slow';

/** The change notifier's passes, on a queue of their own (no delivery holds them up). */
export const NOTIFIER_PASS_QUEUE = 'change-notifier-passes';

/** Every queue of the service. Issues that add a queue add it here and in serverless.yml. */
export const localQueues: readonly LocalQueue[] = [
  {
    name: DOCUMENT_RECEIVED_QUEUE,
    urlEnv: 'DOCUMENT_RECEIVED_QUEUE_URL',
    visibilityTimeoutSeconds: 30,
    // As in serverless.yml: more receives than the schedule's attempts (WEBHOOK_MAX_RECEIVES), so
    // that receives which never reached the function use none; the function dead-letters itself.
    get maxReceiveCount() {
      return getWebhookSettings().maxReceives;
    },
    dlqUrlEnv: 'DOCUMENT_RECEIVED_DEAD_LETTER_QUEUE_URL',
    consumer: {
      function: 'deliverWebhook',
      handler: 'functions/webhook/deliverWebhook.handler',
      batchSize: 10,
      // Lambda's least maximumConcurrency (serverless.yml's webhookConcurrency is 5): a batch whose
      // receivers are not yet known to be slow waits the fast lane's 2 s, and the next batch
      // must not wait behind it.
      concurrency: 2,
      timeoutSeconds: 30,
    },
  },
  {
    // As in serverless.yml: the receipt webhook's slow lane, fed by the function itself, which
    // retries and dead-letters its events as in the fast lane; its redrive, the backstop, goes to
    // the document-received dead-letter queue.
    name: DOCUMENT_RECEIVED_SLOW_QUEUE,
    urlEnv: 'DOCUMENT_RECEIVED_SLOW_QUEUE_URL',
    visibilityTimeoutSeconds: 30,
    get maxReceiveCount() {
      return getWebhookSettings().maxReceives;
    },
    deadLettersTo: DOCUMENT_RECEIVED_QUEUE,
    consumer: {
      function: 'deliverWebhook',
      handler: 'functions/webhook/deliverWebhook.handler',
      batchSize: 10,
      concurrency: 2,
      timeoutSeconds: 30,
    },
  },
  {
    // As in serverless.yml: the notifier's passes, held back the tenant's delay, on their own.
    name: NOTIFIER_PASS_QUEUE,
    urlEnv: 'NOTIFIER_PASS_QUEUE_URL',
    visibilityTimeoutSeconds: 30,
    get maxReceiveCount() {
      return getWebhookSettings().maxReceives;
    },
    deadLettersTo: CHANGE_NOTIFICATION_QUEUE,
    consumer: {
      function: 'changeNotifier',
      handler: 'functions/notifications/changeNotifier.handler',
      batchSize: 10,
      timeoutSeconds: 30,
    },
  },
  {
    // As in serverless.yml: change notifications' slow lane.
    name: CHANGE_NOTIFICATION_SLOW_QUEUE,
    urlEnv: 'CHANGE_NOTIFICATION_SLOW_QUEUE_URL',
    visibilityTimeoutSeconds: 30,
    get maxReceiveCount() {
      return getWebhookSettings().maxReceives;
    },
    deadLettersTo: CHANGE_NOTIFICATION_QUEUE,
    consumer: {
      function: 'changeNotifier',
      handler: 'functions/notifications/changeNotifier.handler',
      batchSize: 10,
      concurrency: 2,
      timeoutSeconds: 30,
    },
  },
  {
    // As in serverless.yml: the subscriptions' events, their fast lane (retried in the slow lane
    // and dead-lettered as the receipt webhook's).
    name: CHANGE_NOTIFICATION_QUEUE,
    urlEnv: 'CHANGE_NOTIFICATION_QUEUE_URL',
    visibilityTimeoutSeconds: 30,
    get maxReceiveCount() {
      return getWebhookSettings().maxReceives;
    },
    dlqUrlEnv: 'CHANGE_NOTIFICATION_DEAD_LETTER_QUEUE_URL',
    consumer: {
      function: 'changeNotifier',
      handler: 'functions/notifications/changeNotifier.handler',
      batchSize: 10,
      // As the receipt webhook's fast lane.
      concurrency: 2,
      timeoutSeconds: 30,
    },
  },
  {
    // Web API jobs of getDataAsync (CONTRACT.md section 5); as in serverless.yml, the visibility is
    // 6× the worker's time-out (its lease), maxReceiveCount leaves room beyond the attempts (counted
    // in WS_JOURNAL), and the worker dead-letters the jobs it gives up itself.
    name: WEB_API_JOB_QUEUE,
    urlEnv: 'WEB_API_JOB_QUEUE_URL',
    get visibilityTimeoutSeconds() {
      return 6 * getWebApiJobSettings().jobLeaseSeconds;
    },
    get maxReceiveCount() {
      return getWebApiJobSettings().jobMaxReceives;
    },
    dlqUrlEnv: 'WEB_API_JOB_DEAD_LETTER_QUEUE_URL',
    consumer: {
      function: 'webJobWorker',
      handler: 'functions/web-api/jobWorker.handler',
      batchSize: 5,
      concurrency: 3,
      // As in serverless.yml, where one parameter is both the worker's time-out and its lease.
      get timeoutSeconds() {
        return getWebApiJobSettings().jobLeaseSeconds;
      },
    },
  },
];
