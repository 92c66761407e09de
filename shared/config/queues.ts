import { ConfigurationError } from './settings.js';

/**
 * The service's queues, each named by the environment variable through which serverless.yml (and
 * the local stack, infra/local/queues.ts) gives a function its URL: read in this one place.
 */
export const QUEUE_URL_VARIABLES = {
  /** Document-received events from the access point: the receipt webhook's fast lane. */
  documentReceived: 'DOCUMENT_RECEIVED_QUEUE_URL',
  /** The receipt webhook's slow lane (core/delivery/lanes.ts). */
  documentReceivedSlow: 'DOCUMENT_RECEIVED_SLOW_QUEUE_URL',
  documentReceivedDeadLetter: 'DOCUMENT_RECEIVED_DEAD_LETTER_QUEUE_URL',
  /** Change notifications' events to deliver: their fast lane. */
  changeNotifications: 'CHANGE_NOTIFICATION_QUEUE_URL',
  /** Change notifications' slow lane. */
  changeNotificationsSlow: 'CHANGE_NOTIFICATION_SLOW_QUEUE_URL',
  changeNotificationsDeadLetter: 'CHANGE_NOTIFICATION_DEAD_LETTER_QUEUE_URL',
  /** The change notifier's passes, a queue of their own so that no delivery holds them up. */
  notifierPasses: 'NOTIFIER_PASS_QUEUE_URL',
  /** getDataAsync's jobs. */
  webApiJobs: 'WEB_API_JOB_QUEUE_URL',
  webApiJobsDeadLetter: 'WEB_API_JOB_DEAD_LETTER_QUEUE_URL',
} as const;

export type QueueName = keyof typeof QUEUE_URL_VARIABLES;

/** The URL of `queue`, or a ConfigurationError naming the variable that should give it. */
export function queueUrl(queue: QueueName): string {
  const variable = QUEUE_URL_VARIABLES[queue];
  const url = process.env[variable]?.trim();
  if (!url) throw new ConfigurationError(`${variable} must be set`);
  return url;
}

/** The URL of `queue` where the deployment gives this function one. */
export const queueUrlIfSet = (queue: QueueName): string | undefined =>
  process.env[QUEUE_URL_VARIABLES[queue]]?.trim() || undefined;

/** Whether the deployment gives this function `queue` at all. */
export const hasQueue = (queue: QueueName): boolean => queueUrlIfSet(queue) !== undefined;
