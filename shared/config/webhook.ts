import { parseRetrySchedule } from '../core/webhook/retry-policy.js';
import { boolFromEnv, ConfigurationError } from './settings.js';

/** Production schedule (CONTRACT.md section 3): seconds to wait before attempts 2, 3, … */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5,30,120,600,1800,7200,18000,36000';

export interface WebhookSettings {
  /** Seconds between attempts; attempt n + 1 follows attempt n after `retrySchedule[n - 1]`. */
  readonly retrySchedule: readonly number[];
  /** The first attempt plus one per delay: the queue's `maxReceiveCount` must equal this. */
  readonly maxAttempts: number;
  /** Lets webhooks reach loopback and private addresses (local stack only). */
  readonly allowPrivateTargets: boolean;
  /** Time an attempt may take before it counts as failed (CONTRACT.md section 6: 10 s). */
  readonly timeoutMs: number;
}

let cached: { key: string; settings: WebhookSettings } | undefined;

/**
 * The webhook settings from `WEBHOOK_RETRY_SCHEDULE` and `WEBHOOK_ALLOW_PRIVATE_TARGETS`, parsed
 * once per value of those variables (the local stack sets them before it starts its queues).
 */
export function getWebhookSettings(): WebhookSettings {
  const schedule = process.env.WEBHOOK_RETRY_SCHEDULE?.trim() || DEFAULT_WEBHOOK_RETRY_SCHEDULE;
  const key = `${schedule}\n${process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? ''}`;
  if (cached?.key === key) return cached.settings;
  let retrySchedule: number[];
  try {
    retrySchedule = parseRetrySchedule(schedule);
  } catch (error) {
    throw new ConfigurationError(`WEBHOOK_RETRY_SCHEDULE ${(error as Error).message}`);
  }
  const settings: WebhookSettings = Object.freeze({
    retrySchedule: Object.freeze(retrySchedule),
    maxAttempts: retrySchedule.length + 1,
    allowPrivateTargets: boolFromEnv('WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    timeoutMs: 10_000,
  });
  cached = { key, settings };
  return settings;
}
