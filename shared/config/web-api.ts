import type { WebApiPolicy } from '../core/web-api/calls.js';
import { ConfigurationError, intFromEnv } from './settings.js';
import type { TenantConfig } from './tenants.js';

/** Process-wide settings of the Web API (time limits, the asynchronous path), from the environment. */
export interface WebApiJobSettings {
  /** `COMMAND_TIMEOUT_ASYNC` (seconds): when set, it replaces every tenant's `CommandTimeoutAsync`. */
  readonly commandTimeoutAsyncOverride: number | undefined;
  /** `WEB_API_JOB_MAX_ATTEMPTS`: attempts a job gets (counted in WS_JOURNAL); the last ends a failing job. */
  readonly jobMaxAttempts: number;
  /**
   * `WEB_API_JOB_MAX_RECEIVES`: the job queue's maxReceiveCount, at least the attempts; the rest is
   * room for receives that never reached the worker (a throttled consumer).
   */
  readonly jobMaxReceives: number;
  /** `WEB_API_JOB_LEASE_SECONDS`: how long a worker holds a job; the worker's time-out. */
  readonly jobLeaseSeconds: number;
  /** `WEB_API_JOB_STALE_SECONDS`: a job running longer than this has lost its worker (997 ends it). */
  readonly jobStaleSeconds: number;
  /** `WEB_API_SYNC_TIME_LIMIT` (seconds, 1–28, default 25): how long getData gives an operation before 161. */
  readonly syncTimeLimitSeconds: number;
  /**
   * `WEB_API_CACHE_SECONDS`: how long a warm process remembers a tenant's applications and
   * operations (0: not at all); a deactivated key or operation stops working within this time.
   */
  readonly lookupCacheSeconds: number;
}

const NAMES = [
  'COMMAND_TIMEOUT_ASYNC',
  'WEB_API_JOB_MAX_ATTEMPTS',
  'WEB_API_JOB_MAX_RECEIVES',
  'WEB_API_JOB_LEASE_SECONDS',
  'WEB_API_JOB_STALE_SECONDS',
  'WEB_API_SYNC_TIME_LIMIT',
  'WEB_API_CACHE_SECONDS',
];

let cached: { key: string; settings: WebApiJobSettings } | undefined;

/** The settings, parsed once per value of their variables (the local stack sets them before it starts). */
export function getWebApiJobSettings(): WebApiJobSettings {
  const key = NAMES.map((name) => process.env[name] ?? '').join('\n');
  if (cached?.key === key) return cached.settings;
  const override = process.env.COMMAND_TIMEOUT_ASYNC?.trim()
    ? intFromEnv('COMMAND_TIMEOUT_ASYNC', 20, 1, 28)
    : undefined;
  const jobLeaseSeconds = intFromEnv('WEB_API_JOB_LEASE_SECONDS', 90, 1, 900);
  const jobMaxAttempts = intFromEnv('WEB_API_JOB_MAX_ATTEMPTS', 3, 1, 100);
  const jobMaxReceives = intFromEnv('WEB_API_JOB_MAX_RECEIVES', 10, 1, 1000);
  if (jobMaxReceives < jobMaxAttempts) {
    throw new ConfigurationError(
      `WEB_API_JOB_MAX_RECEIVES must be at least WEB_API_JOB_MAX_ATTEMPTS (${jobMaxAttempts}), got ${jobMaxReceives}`,
    );
  }
  const jobStaleSeconds = intFromEnv('WEB_API_JOB_STALE_SECONDS', 7200, 1, 14 * 24 * 3600);
  if (jobStaleSeconds <= jobLeaseSeconds) {
    throw new ConfigurationError('WEB_API_JOB_STALE_SECONDS must be longer than WEB_API_JOB_LEASE_SECONDS');
  }
  const settings: WebApiJobSettings = Object.freeze({
    commandTimeoutAsyncOverride: override,
    jobMaxAttempts,
    jobMaxReceives,
    jobLeaseSeconds,
    jobStaleSeconds,
    // Below the HTTP API's 30 s, with room to cancel, journal and answer.
    syncTimeLimitSeconds: intFromEnv('WEB_API_SYNC_TIME_LIMIT', 25, 1, 28),
    lookupCacheSeconds: intFromEnv('WEB_API_CACHE_SECONDS', 30, 0, 300),
  });
  cached = { key, settings };
  return settings;
}

/** The Web API policy of a tenant: its `webApi` settings (CONTRACT.md section 2) and the process's. */
export function webApiPolicy(tenant: TenantConfig): WebApiPolicy {
  const settings = tenant.webApi;
  const jobs = getWebApiJobSettings();
  return Object.freeze({
    requestMaxSecValidity: settings.RequestMaxSecValidity,
    checkReplayRequest: settings.CheckReplayRequest,
    replayRequestTime: settings.ReplayRequestTime,
    commandTimeoutAsyncSeconds: jobs.commandTimeoutAsyncOverride ?? settings.CommandTimeoutAsync,
    jobStaleSeconds: jobs.jobStaleSeconds,
    syncTimeLimitSeconds: jobs.syncTimeLimitSeconds,
  });
}
