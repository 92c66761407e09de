import { parseRetrySchedule } from '../core/delivery/retry-policy.js';
import { type EndpointPolicy, hoursToMs } from '../core/webhook/endpoint.js';
import { boolFromEnv, ConfigurationError, intFromEnv } from './settings.js';

/** Production schedule (CONTRACT.md section 3): seconds to wait before attempts 2, 3, … */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5,30,120,600,1800,7200,18000,36000';

/**
 * The document-received queue's `maxReceiveCount` unless `WEBHOOK_MAX_RECEIVES` says otherwise:
 * the production schedule's 9 attempts and room for 21 receives that never reach the function.
 */
export const DEFAULT_WEBHOOK_MAX_RECEIVES = 30;

/**
 * How long an attempt in the fast lane waits for its answer (core/delivery/lanes.ts), in seconds:
 * a receiver slower than this gets its attempts in the slow lane, with the contract's 10 s.
 */
export const DEFAULT_WEBHOOK_FAST_LANE_SECONDS = 2;

/** CONTRACT.md section 6: both secrets sign for a day after a rotation. */
export const DEFAULT_WEBHOOK_SECRET_OVERLAP_HOURS = 24;
/** CONTRACT.md section 6: an endpoint failing for five days is disabled. */
export const DEFAULT_WEBHOOK_DISABLE_AFTER_HOURS = 120;
// A year: longer is a typo (and would overflow nothing, but mean "never").
const MAX_HOURS = 8760;

/** Hours from the environment; fractions allowed (tests use seconds' worth). */
export function hoursFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= 0 && value <= MAX_HOURS)) {
    throw new ConfigurationError(
      `${name} must be a number of hours from 0 to ${MAX_HOURS} (fractions allowed), got "${raw}"`,
    );
  }
  return value;
}

export interface WebhookSettings {
  /** Seconds between attempts; attempt n + 1 follows attempt n after `retrySchedule[n - 1]`. */
  readonly retrySchedule: readonly number[];
  /** The first attempt plus one per delay. */
  readonly maxAttempts: number;
  /**
   * `WEBHOOK_MAX_RECEIVES`: the queue's `maxReceiveCount`, at least `maxAttempts`. Attempts are
   * counted in WEBHOOK_DELIVERY, so receives that never reached the function (a throttled
   * consumer) use up only this margin; a message at this receive count has its last chance.
   */
  readonly maxReceives: number;
  /** Lets webhooks reach loopback and private addresses (local stack only). */
  readonly allowPrivateTargets: boolean;
  /** Time an attempt may take before it counts as failed (CONTRACT.md section 6: 10 s). */
  readonly timeoutMs: number;
  /** `WEBHOOK_FAST_LANE_SECONDS` in ms: how long an attempt in the fast lane waits for its answer. */
  readonly fastAnswerMs: number;
  /** `WEBHOOK_SECRET_OVERLAP_HOURS` and `WEBHOOK_DISABLE_AFTER_HOURS`, in ms. */
  readonly endpointPolicy: EndpointPolicy;
}

let cached: { key: string; settings: WebhookSettings } | undefined;

/**
 * The webhook settings from `WEBHOOK_RETRY_SCHEDULE` and `WEBHOOK_ALLOW_PRIVATE_TARGETS`, parsed
 * once per value of those variables (the local stack sets them before it starts its queues).
 */
export function getWebhookSettings(): WebhookSettings {
  const schedule = process.env.WEBHOOK_RETRY_SCHEDULE?.trim() || DEFAULT_WEBHOOK_RETRY_SCHEDULE;
  const key = [
    schedule,
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    process.env.WEBHOOK_MAX_RECEIVES,
    process.env.WEBHOOK_SECRET_OVERLAP_HOURS,
    process.env.WEBHOOK_DISABLE_AFTER_HOURS,
    process.env.WEBHOOK_FAST_LANE_SECONDS,
  ].join('\n');
  if (cached?.key === key) return cached.settings;
  let retrySchedule: number[];
  try {
    retrySchedule = parseRetrySchedule(schedule);
  } catch (error) {
    throw new ConfigurationError(`WEBHOOK_RETRY_SCHEDULE ${(error as Error).message}`);
  }
  const maxAttempts = retrySchedule.length + 1;
  // SQS allows maxReceiveCount up to 1000; a schedule longer than the default's room gets as much again.
  const maxReceives = intFromEnv(
    'WEBHOOK_MAX_RECEIVES',
    Math.min(1000, Math.max(DEFAULT_WEBHOOK_MAX_RECEIVES, 2 * maxAttempts)),
    1,
    1000,
  );
  if (maxReceives < maxAttempts) {
    throw new ConfigurationError(
      `WEBHOOK_MAX_RECEIVES must be at least the attempts of WEBHOOK_RETRY_SCHEDULE (${maxAttempts}), got ${maxReceives}`,
    );
  }
  const settings: WebhookSettings = Object.freeze({
    retrySchedule: Object.freeze(retrySchedule),
    maxAttempts,
    maxReceives,
    allowPrivateTargets: boolFromEnv('WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    timeoutMs: 10_000,
    fastAnswerMs: 1000 * intFromEnv('WEBHOOK_FAST_LANE_SECONDS', DEFAULT_WEBHOOK_FAST_LANE_SECONDS, 1, 10),
    endpointPolicy: Object.freeze({
      secretOverlapMs: hoursToMs(
        hoursFromEnv('WEBHOOK_SECRET_OVERLAP_HOURS', DEFAULT_WEBHOOK_SECRET_OVERLAP_HOURS),
      ),
      disableAfterMs: hoursToMs(
        hoursFromEnv('WEBHOOK_DISABLE_AFTER_HOURS', DEFAULT_WEBHOOK_DISABLE_AFTER_HOURS),
      ),
    }),
  });
  cached = { key, settings };
  return settings;
}
