import { childSpan, type TraceContext, traceHeaders } from '../trace-context.js';
import { recording, recordSpan, spanClock } from '../tracing.js';
import { checkWebhookUrl } from '../webhook/target.js';
import {
  answeredSlowly,
  answerTimeout,
  type DeliveryLanes,
  fastLaneTimedOut,
  laneOf,
  type ReceiverHealth,
} from './lanes.js';
import { parseRetryAfter, retryDelaySeconds } from './retry-policy.js';
import type { WebhookRequest, WebhookSender } from './sender.js';

/**
 * The one delivery engine (CONTRACT 4c and 6): the ladder every attempt to POST an event climbs,
 * whatever the event. The target is checked (never a forbidden address); a receiver that is slow
 * or failing gets its attempt in the slow lane (lanes.ts); the POST waits its lane's time; any 2xx
 * delivers, 410 is gone, a redirect is not followed, anything else is retried on the schedule
 * (honouring `Retry-After`), the last failure dead-lettered, and a receiver failing for the
 * disabling time disabled. Each use (the receipt webhook, change notifications) finds its event's
 * receiver and keeps its attempts in a store of its own ({@link ReceiverStore}), in the manner of
 * Powertools' `BasePersistenceLayer`: a new rule of the ladder has this one home.
 */

/** One attempt as its use records it (the use adds the event's own key). Times in ms since the epoch. */
export interface AttemptEntry {
  /** 1-based within the attempts' series (the queue message that began it). */
  readonly attempt: number;
  readonly attemptedAt: number;
  readonly outcome: string;
  readonly httpStatus?: number;
  /** Network error, time-out or the reason for a refusal; never a secret. */
  readonly error?: string;
  readonly durationMs?: number;
  /** For a retry: seconds until the next attempt. */
  readonly retryInSeconds?: number;
}

/** A failed attempt, as counted against its receiver. */
export interface ReceiverFailure {
  /** A receiver failing since then or before is disabled. */
  readonly disableIfFailingSince: number;
  /** No further attempt of this event follows. */
  readonly finished: boolean;
  /** Disable it now, whatever its time (410, where the use says so). */
  readonly disableNow: boolean;
  /** Why it would be disabled, in words for its status. */
  readonly reason: string;
}

/** Port: a receiver's state and the attempt log of one use (each use has a store of its own). */
export interface ReceiverStore {
  record(entry: AttemptEntry): Promise<void>;
  /** A 2xx at `at`: no longer failing; slow since `slowAt` (kept if it was) or no longer slow. */
  delivered(at: number, slowAt: number | null): Promise<void>;
  /** No answer in the fast lane's time: slow since `at` unless it was. */
  slow(at: number): Promise<void>;
  /** A failed attempt at `at`: failing since then unless it was; true when this call disabled it. */
  failed(at: number, failure: ReceiverFailure): Promise<boolean>;
}

/** Where the two uses differ, each for a reason of its domain (given where each is built). */
export interface DeliveryRules {
  /** A target refused (a forbidden address, not http(s)) counts against the receiver. */
  readonly refusalFails: boolean;
  /** `410 Gone` disables the receiver at once (else it only stops this event). */
  readonly goneDisables: boolean;
  /** A failure that disables the receiver ends the event's series (else its next attempt finds it disabled). */
  readonly disablingEnds: boolean;
  /** What a 2xx records (a resend's `resent`, else `delivered`). */
  readonly deliveredOutcome: string;
}

/** The receiver of this attempt, as the use found it. */
export interface AttemptTarget {
  /** The attempt's number: those recorded in its series, plus one. */
  readonly attempt: number;
  /** As the use has it, not yet checked. */
  readonly url: string;
  readonly health: ReceiverHealth;
  /** The POST to send to the checked URL at `startedAt` (its time stamp signed). */
  request(url: URL, startedAt: number): WebhookRequest;
}

export interface DeliveryEngineContext {
  readonly sender: WebhookSender;
  /** Seconds between attempts; the last attempt is number `retrySchedule.length + 1`. */
  readonly retrySchedule: readonly number[];
  readonly allowPrivateTargets: boolean;
  /** A receiver failing this long is disabled (ms). */
  readonly disableAfterMs: number;
  /** True when the queue will not hand this copy out again: its attempt is the last. */
  readonly finalReceive: boolean;
  /**
   * The lane this copy came through (lanes.ts). Without it, every attempt is made with the
   * sender's whole time and a receiver's speed is neither looked at nor remembered.
   */
  readonly lanes?: DeliveryLanes;
  readonly now?: () => number;
  readonly random?: () => number;
  /**
   * The delivery's span (CONTRACT 8a: the work for the queued event): each POST sends
   * `traceparent` of a child of it, so that the receiver's work joins the trace that caused it.
   */
  readonly trace?: TraceContext;
  /**
   * Told when the store fails once the attempt was made (the decision stands: the POST went out).
   * Without it, the store's failure is thrown.
   */
  readonly onStoreFailure?: (error: unknown, entry: AttemptEntry) => void;
}

/** What each use of the engine is given, and passes on to it (with its own store). */
export interface DeliveryUseContext
  extends Pick<
    DeliveryEngineContext,
    'sender' | 'retrySchedule' | 'allowPrivateTargets' | 'lanes' | 'now' | 'random' | 'trace'
  > {
  /** Rotation overlap and disabling (WEBHOOK_SECRET_OVERLAP_HOURS, WEBHOOK_DISABLE_AFTER_HOURS), in ms. */
  readonly endpointPolicy: { readonly secretOverlapMs: number; readonly disableAfterMs: number };
}

/** The engine's context for one copy of an event of a use. */
export const engineContext = (
  use: DeliveryUseContext,
  finalReceive: boolean,
  onStoreFailure?: DeliveryEngineContext['onStoreFailure'],
): DeliveryEngineContext => ({
  sender: use.sender,
  retrySchedule: use.retrySchedule,
  allowPrivateTargets: use.allowPrivateTargets,
  disableAfterMs: use.endpointPolicy.disableAfterMs,
  finalReceive,
  lanes: use.lanes,
  now: use.now,
  random: use.random,
  trace: use.trace,
  onStoreFailure,
});

/** What the queue should do with this copy of the event. */
export type DeliveryDecision = {
  readonly outcome: string;
  readonly attempt: number;
  readonly detail?: string;
  /** This attempt's failure disabled the receiver. */
  readonly disabled?: boolean;
} & (
  | { readonly action: 'done' }
  /** Keep it and let it come back after `delaySeconds` for the next attempt. */
  | { readonly action: 'retry'; readonly delaySeconds: number }
  | { readonly action: 'dead-letter' }
  /** In the fast lane, for a receiver that is slow or failing: no attempt here; to the slow lane at once. */
  | { readonly action: 'slow-lane' }
);

/** Whether a series with `attemptsMade` recorded has an attempt left on the schedule. */
export const attemptsLeft = (attemptsMade: number, retrySchedule: readonly number[]) =>
  attemptsMade < retrySchedule.length + 1;

/** The engine: one attempt to deliver to `target`, recorded in `store`. */
export async function deliverAttempt(
  target: AttemptTarget,
  store: ReceiverStore,
  ctx: DeliveryEngineContext,
  rules: DeliveryRules,
): Promise<DeliveryDecision> {
  const now = ctx.now ?? Date.now;
  const { attempt } = target;
  const last = attempt >= ctx.retrySchedule.length + 1 || ctx.finalReceive;
  const startedAt = now();

  /** A store call once the attempt is under way: its failure goes to onStoreFailure where given. */
  async function stored<T>(entry: AttemptEntry, call: () => Promise<T>, otherwise: T): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (!ctx.onStoreFailure) throw error;
      ctx.onStoreFailure(error, entry);
      return otherwise;
    }
  }
  async function finish(
    decision: DeliveryDecision,
    entry: Omit<AttemptEntry, 'attempt' | 'attemptedAt' | 'outcome'> = {},
  ): Promise<DeliveryDecision> {
    const recorded: AttemptEntry = {
      attempt,
      attemptedAt: startedAt,
      ...entry,
      outcome: decision.outcome,
      ...(decision.action === 'retry' ? { retryInSeconds: decision.delaySeconds } : {}),
    };
    await stored(recorded, () => store.record(recorded), undefined);
    return decision;
  }
  /** A failed attempt: counted against the receiver (where the use counts it), retried, dead-lettered or ended. */
  async function failure(
    kind: 'retrying' | 'gone' | 'refused',
    detail: string,
    entry: Omit<AttemptEntry, 'attempt' | 'attemptedAt' | 'outcome'>,
    retryAfterSeconds?: number,
  ): Promise<DeliveryDecision> {
    const retries = kind === 'retrying' && !last;
    let disabled = false;
    if (kind !== 'refused' || rules.refusalFails) {
      const at = now();
      const reason =
        kind === 'gone'
          ? 'the receiver answered 410 Gone'
          : `every attempt failed for ${failingTime(ctx.disableAfterMs)} (last: ${detail})`;
      const counted = { attempt, attemptedAt: startedAt, outcome: kind, ...entry };
      disabled = await stored(
        counted,
        () =>
          store.failed(at, {
            disableIfFailingSince: at - ctx.disableAfterMs,
            finished: !retries,
            disableNow: kind === 'gone' && rules.goneDisables,
            reason,
          }),
        false,
      );
    }
    const ends = disabled && rules.disablingEnds;
    const base = { attempt, detail, ...(disabled ? { disabled } : {}) };
    if (kind !== 'retrying') return finish({ ...base, action: 'done', outcome: kind }, entry);
    if (!retries || ends) {
      return finish({ ...base, action: ends ? 'done' : 'dead-letter', outcome: 'failed' }, entry);
    }
    const delaySeconds = retryDelaySeconds(ctx.retrySchedule, attempt, retryAfterSeconds, ctx.random);
    return finish({ ...base, action: 'retry', outcome: 'retrying', delaySeconds }, entry);
  }

  const checked = checkWebhookUrl(target.url, ctx.allowPrivateTargets);
  if (!checked.ok) return failure('refused', checked.reason, { error: checked.reason });
  const { lanes } = ctx;
  if (lanes?.lane === 'fast' && laneOf(target.health) === 'slow') {
    // Nothing recorded: no attempt was made. Its number is the one it will have.
    return {
      action: 'slow-lane',
      outcome: 'slow_lane',
      attempt,
      detail: target.health.failingSince !== null ? 'the receiver is failing' : 'the receiver answers slowly',
    };
  }
  const timeoutMs = lanes && answerTimeout(lanes);
  const request = target.request(checked.url, startedAt);
  // The POST's client span: its ids are the `traceparent` the receiver gets.
  const post = ctx.trace && childSpan(ctx.trace);
  const postStart = recording(post) ? spanClock() : 0;
  const result = await ctx.sender.send(
    post ? { ...request, headers: { ...request.headers, ...traceHeaders(post) } } : request,
    timeoutMs === undefined ? undefined : { timeoutMs },
  );
  if (post && postStart) {
    recordSpan({
      name: 'POST',
      kind: 'client',
      context: post,
      startTime: postStart,
      endTime: spanClock(),
      // The receiver's host, never its URL: a path or a query may hold a token of the receiver's.
      attributes: {
        'http.request.method': 'POST',
        'server.address': request.url.hostname,
        ...(result.kind === 'response' ? { 'http.response.status_code': result.status } : {}),
      },
      failed: result.kind !== 'response' || result.status >= 300,
    });
  }
  const { durationMs } = result;
  if (result.kind === 'refused') {
    return failure('refused', result.reason, { error: result.reason, durationMs });
  }
  if (result.kind === 'error' && result.timedOut && lanes?.lane === 'fast' && !last) {
    // Not (yet) a failure: the contract gives a receiver 10 s. The next attempt, at once, has them.
    const detail = fastLaneTimedOut(lanes);
    const entry = { error: detail, durationMs };
    await stored(
      { attempt, attemptedAt: startedAt, outcome: 'retrying', ...entry },
      () => store.slow(now()),
      undefined,
    );
    return finish({ action: 'retry', outcome: 'retrying', attempt, delaySeconds: 0, detail }, entry);
  }
  if (result.kind === 'error') return failure('retrying', result.error, { error: result.error, durationMs });
  const httpStatus = result.status;
  if (httpStatus >= 200 && httpStatus < 300) {
    // Its speed decides its next attempts' lane: slow since now, as it was, or fast again.
    const slowAt = lanes
      ? answeredSlowly(lanes, durationMs)
        ? (target.health.slowSince ?? startedAt)
        : null
      : target.health.slowSince;
    const entry = { httpStatus, durationMs };
    await stored(
      { attempt, attemptedAt: startedAt, outcome: rules.deliveredOutcome, ...entry },
      () => store.delivered(now(), slowAt),
      undefined,
    );
    return finish({ action: 'done', outcome: rules.deliveredOutcome, attempt }, entry);
  }
  if (httpStatus === 410) return failure('gone', 'HTTP 410', { httpStatus, durationMs });
  // Redirects are not followed: a receiver that moved must have its URL updated.
  const redirect = httpStatus >= 300 && httpStatus < 400;
  return failure(
    'retrying',
    `HTTP ${httpStatus}`,
    { httpStatus, durationMs, ...(redirect ? { error: 'redirect not followed' } : {}) },
    parseRetryAfter(result.retryAfter, now()),
  );
}

/**
 * How long a receiver failed before it was disabled, in words: hours to a tenth from one hour (the production
 * settings, 120 h), or minutes or seconds for the fraction of an hour a test sets (never "0 hours").
 */
export function failingTime(ms: number): string {
  if (ms >= 3_600_000) return `${Math.round(ms / 360_000) / 10} hours`;
  if (ms >= 60_000) return `${Math.round(ms / 6_000) / 10} minutes`;
  return `${Math.round(ms / 100) / 10} seconds`;
}
