/** Longest wait between two attempts, whatever the schedule or `Retry-After` asks (SQS visibility limit). */
export const MAX_RETRY_DELAY_SECONDS = 12 * 3600;

/** Share of a scheduled delay by which it is randomly lengthened or shortened. */
export const RETRY_JITTER = 0.1;

// More delays than this is a typo, not a schedule (and SQS allows maxReceiveCount ≤ 1000).
const MAX_SCHEDULE_LENGTH = 50;

/**
 * Parses `5,30,120`: the seconds to wait before the second, third, … attempt. Throws an Error
 * saying what is wrong (the caller prefixes the setting's name).
 */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(',').map((part) => part.trim());
  if (parts.length > MAX_SCHEDULE_LENGTH) {
    throw new Error(`must list at most ${MAX_SCHEDULE_LENGTH} delays, got ${parts.length}`);
  }
  return parts.map((part) => {
    const seconds = /^\d+$/.test(part) ? Number(part) : Number.NaN;
    if (!Number.isInteger(seconds) || seconds > MAX_RETRY_DELAY_SECONDS) {
      throw new Error(
        `must be comma-separated whole seconds from 0 to ${MAX_RETRY_DELAY_SECONDS}, got "${text}"`,
      );
    }
    return seconds;
  });
}

/**
 * Seconds from a `Retry-After` header (delay-seconds or an HTTP date), at most 12 h; undefined
 * when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  let seconds: number;
  if (/^\d+$/.test(text)) {
    seconds = Number(text);
  } else {
    // HTTP dates (IMF-fixdate and the two obsolete forms) all start with the day's name.
    const at = /^[A-Za-z]{3}/.test(text) ? Date.parse(text) : Number.NaN;
    if (Number.isNaN(at)) return undefined;
    seconds = Math.max(0, Math.ceil((at - nowMs) / 1000));
  }
  return Math.min(seconds, MAX_RETRY_DELAY_SECONDS);
}

/**
 * Seconds to wait after failed attempt `attempt` (1-based): the schedule's delay with ±10 %
 * jitter, or longer when the receiver's `Retry-After` asks for more, never over 12 h.
 */
export function retryDelaySeconds(
  schedule: readonly number[],
  attempt: number,
  retryAfterSeconds: number | undefined,
  random: () => number = Math.random,
): number {
  const scheduled = schedule[Math.min(attempt, schedule.length) - 1] ?? 0;
  const jittered = Math.round(scheduled * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random()));
  return Math.min(Math.max(jittered, retryAfterSeconds ?? 0), MAX_RETRY_DELAY_SECONDS);
}
