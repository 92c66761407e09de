import {
  attemptsLeft,
  type DeliveryUseContext,
  deliverAttempt,
  engineContext,
  type ReceiverStore,
} from '../delivery/engine.js';
import { answerTimeout } from '../delivery/lanes.js';
import { retryDelaySeconds } from '../delivery/retry-policy.js';
import type { WebhookRequest } from '../delivery/sender.js';
import {
  type ClaimedTarget,
  ClaimNotReleasedError,
  type DeliveryKey,
  type DeliveryOutcome,
  type DeliveryRecord,
  type DeliveryTarget,
  type EndpointMemory,
  type WebhookDeliveryLog,
} from './delivery-log.js';
import { observeEndpoint, signingSecrets } from './endpoint.js';
import { type DocumentReceivedEvent, webhookEventId } from './event.js';
import { signWebhookWithEach } from './signature.js';

/** What the queue should do with this copy of the event. */
export type WebhookDecision =
  /**
   * Finished (delivered, or nothing more to do): remove the message. `in_flight`: another copy of
   * the event is sending it, and this copy will not be handed out again (nothing recorded).
   */
  (
    | { readonly action: 'done'; readonly outcome: DeliveryOutcome | 'in_flight'; readonly detail?: string }
    /**
     * Keep the message and let it come back after `delaySeconds` for the next attempt; `in_flight`:
     * for a look at the event once the copy sending it now is done (nothing sent or recorded).
     */
    | {
        readonly action: 'retry';
        readonly outcome: DeliveryOutcome | 'not_recorded' | 'in_flight';
        readonly delaySeconds: number;
        readonly detail?: string;
      }
    /** The attempts are used up: move the message to the dead-letter queue now. */
    | {
        readonly action: 'dead-letter';
        readonly outcome: DeliveryOutcome | 'not_recorded';
        readonly detail?: string;
      }
    /**
     * In the fast lane, for a receiver that is failing or slow: no attempt here; hand the event
     * to the slow lane at once (lanes.ts).
     */
    | { readonly action: 'slow-lane'; readonly outcome: 'slow_lane'; readonly detail?: string }
  ) & {
    /** The attempt's number as recorded (absent when nothing was recorded). */
    readonly attempt?: number;
    /** This attempt's failure disabled the subject's endpoint (failing since then). */
    readonly endpointDisabled?: { readonly failingSince: number };
    /** This event's subject had its endpoint enabled again by a new WEBHOOK_URL. */
    readonly endpointEnabled?: boolean;
    /** The tenant database's error that ended this attempt, for the handler's report (a missing permission). */
    readonly databaseError?: unknown;
  };

/**
 * The receipt webhook's rules where the engine's two uses differ: the subject's URL is the ERP's
 * to fix, so a refused one is recorded without counting against the endpoint; 410 stops this
 * event only (CONTRACT 6); an endpoint that a failure disables keeps its event's next attempt,
 * which records it `disabled`.
 */
const RECEIPT_RULES = (resend: boolean) =>
  ({
    refusalFails: false,
    goneDisables: false,
    disablingEnds: false,
    deliveredOutcome: resend ? 'resent' : 'delivered',
  }) as const;

/** The copy of an event the queue handed over this time. */
export interface EventCopy {
  /** The queue message carrying it: attempts are counted per message (see DeliveryRecord). */
  readonly messageId: string;
  /**
   * How often the queue has handed this message out. A throttled consumer makes it larger than
   * the attempts made, so it only stands in for them when the record cannot be read.
   */
  readonly receiveCount: number;
  /** True when the queue will not hand this message out again (its receive count is at the limit). */
  readonly finalReceive: boolean;
}

export interface DeliveryContext extends DeliveryUseContext {
  readonly log: WebhookDeliveryLog;
  /** Told when an attempt could not be recorded (the decision stands). */
  readonly onRecordFailure?: (error: unknown, entry: DeliveryRecord) => void;
  /** Told when this copy's claim to send could not be released (it lapses at its time). */
  readonly onReleaseFailure?: (error: unknown) => void;
}

const USER_AGENT = 'erp-integration-gateway-webhook/1';

/** The headers and body of a delivery: the bare document id, the secret header and Standard Webhooks headers. */
export function webhookRequest(
  url: URL,
  eventId: string,
  documentId: number,
  secret: string | null,
  timestamp: number,
  /** Secrets besides `secret` that sign too (the previous one during a rotation's overlap). */
  alsoSignedWith: readonly string[] = [],
): WebhookRequest {
  const body = String(documentId);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
  };
  // A subject without a secret still gets its webhook, without the secret-based headers. The
  // secret header carries the current secret only; the signatures cover the overlap.
  if (secret !== null) {
    headers['x-peppol-webhook-secret'] = secret;
    headers['webhook-signature'] = signWebhookWithEach([secret, ...alsoSignedWith], eventId, timestamp, body);
  }
  return { url, headers, body };
}

/** The decision after failed attempt `attempt` of `copy`: retried on the schedule, or dead-lettered. */
function failedAttemptDecision(
  ctx: Pick<DeliveryContext, 'retrySchedule' | 'random'>,
  copy: EventCopy,
  attempt: number,
  detail: string,
  retryAfterSeconds?: number,
) {
  if (attempt >= ctx.retrySchedule.length + 1 || copy.finalReceive) {
    return { action: 'dead-letter', outcome: 'failed', detail } as const;
  }
  const delaySeconds = retryDelaySeconds(ctx.retrySchedule, attempt, retryAfterSeconds, ctx.random);
  return { action: 'retry', outcome: 'retrying', delaySeconds, detail } as const;
}

/**
 * A database failure before anything was sent: nothing can be recorded or counted, so the receive
 * count stands in for the attempts, and the event is tried again later, on the same schedule.
 */
function databaseFailure(
  ctx: Pick<DeliveryContext, 'retrySchedule' | 'random'>,
  copy: EventCopy,
  error: unknown,
): WebhookDecision {
  const detail = `database: ${(error as Error).message}`;
  const decision = failedAttemptDecision(ctx, copy, Math.max(1, copy.receiveCount), detail);
  return { ...decision, outcome: 'not_recorded', databaseError: error };
}

/**
 * How long a copy's claim to send lasts: its attempt's longest wait for an answer (its lane's, or
 * the contract's 10 s), and time to record the outcome. A claim that outlives a crashed instance
 * holds the event's other copies back this long at most.
 */
export function sendingClaimMs(lanes: DeliveryContext['lanes']): number {
  return (lanes ? (answerTimeout(lanes) ?? RECEIVER_ANSWER_MS) : RECEIVER_ANSWER_MS) + CLAIM_MARGIN_MS;
}
const RECEIVER_ANSWER_MS = 10_000;
const CLAIM_MARGIN_MS = 20_000;
/** A copy that met another's claim looks again after the claim's rest, within these bounds (s). */
const IN_FLIGHT_WAIT_SECONDS = { min: 1, max: 10 } as const;

/**
 * Another copy of the event is sending it: this one comes back once that copy's answer is due (and
 * then finds the event delivered, or sends it if that copy failed or died); on the queue's final
 * receive it ends here, as the copy sending the event has its own attempts.
 */
function inFlight(heldUntil: number | null, now: number, finalReceive: boolean): WebhookDecision {
  const detail = 'another copy of this event is being sent';
  if (finalReceive) return { action: 'done', outcome: 'in_flight', detail };
  // The holder's answer is due by its claim's time less the margin for recording it.
  const rest =
    heldUntil === null
      ? IN_FLIGHT_WAIT_SECONDS.min
      : Math.ceil((heldUntil - CLAIM_MARGIN_MS - now) / 1000) + 1;
  const delaySeconds = Math.min(IN_FLIGHT_WAIT_SECONDS.max, Math.max(IN_FLIGHT_WAIT_SECONDS.min, rest));
  return { action: 'retry', outcome: 'in_flight', delaySeconds, detail };
}

/**
 * Makes the next attempt to deliver a document-received event and records it in WEBHOOK_DELIVERY,
 * under this copy's claim to send the event (SVC_WEBHOOK_SENDING: another copy at the same moment
 * waits for it, CONTRACT 6), released once the attempt is recorded. The attempt's number is the
 * attempts recorded for this message plus one; the queue's receive count stands in only when the
 * record cannot be read. The last attempt is the schedule's last, or any attempt on the queue's
 * final receive, and a failed last attempt is dead-lettered. A database failure before sending
 * counts as a failed attempt, retried on the schedule; one while recording goes to
 * `onRecordFailure` and the decision stands.
 */
export async function deliverWebhook(
  event: DocumentReceivedEvent,
  copy: EventCopy,
  ctx: DeliveryContext,
): Promise<WebhookDecision> {
  const eventId = webhookEventId(event);
  const key = {
    eventId,
    messageId: copy.messageId,
    subjectId: event.subjectId,
    documentId: event.documentId,
  };
  const claimedAt = (ctx.now ?? Date.now)();
  let target: ClaimedTarget | undefined;
  // A recorded attempt ends the claim with its record (one statement); else it is given back below.
  const progress = { recorded: false };
  try {
    try {
      target = await ctx.log.claimAndFindTarget(
        { ...key, resend: event.resend === true },
        { now: claimedAt, until: claimedAt + sendingClaimMs(ctx.lanes) },
      );
    } catch (error) {
      return databaseFailure(ctx, copy, error);
    }
    if (!target.claim.claimed) return inFlight(target.claim.heldUntil, claimedAt, copy.finalReceive);
    // What the attempt throws passes on, as before the claim (the consumer keeps the record).
    return await attemptClaimed(event, key, copy, ctx, target, progress);
  } finally {
    // Held, or perhaps held (the round trip failed after the claim): given back. Not released (a
    // failure here): the claim lapses at its time, and holds other copies back until then.
    if (!progress.recorded && (!target || target.claim.claimed)) {
      await ctx.log
        .releaseSending(eventId, copy.messageId)
        .catch((error: unknown) => ctx.onReleaseFailure?.(error));
    }
  }
}

/**
 * Records an attempt, which ends its copy's claim to send the event. Recorded with its claim kept
 * (the login may not delete claims): recorded all the same, the claim not given back once more
 * (that would be refused alike; it lapses at its time), and `onReleaseFailure` says so.
 */
async function recordAttempt(
  ctx: DeliveryContext,
  record: DeliveryRecord,
  progress: { recorded: boolean },
): Promise<void> {
  try {
    await ctx.log.record(record);
  } catch (error) {
    if (!(error instanceof ClaimNotReleasedError)) throw error;
    ctx.onReleaseFailure?.(error.cause);
  }
  progress.recorded = true;
}

/** {@link deliverWebhook}'s attempt, once this copy holds the claim to send the event. */
async function attemptClaimed(
  event: DocumentReceivedEvent,
  key: Omit<DeliveryKey, 'resend'>,
  copy: EventCopy,
  ctx: DeliveryContext,
  target: DeliveryTarget,
  /** Set once the attempt is recorded (which ends the claim). */
  progress: { recorded: boolean },
): Promise<WebhookDecision> {
  const now = ctx.now ?? Date.now;
  const { eventId } = key;
  const resend = event.resend === true;
  const failedAttempt = (attempt: number, detail: string, retryAfterSeconds?: number) =>
    failedAttemptDecision(ctx, copy, attempt, detail, retryAfterSeconds);
  const maxAttempts = ctx.retrySchedule.length + 1;

  if (!attemptsLeft(target.attemptsMade, ctx.retrySchedule)) {
    // Its last attempt was made and recorded, but the message came back (its move to the
    // dead-letter queue failed): it goes there now, unsent.
    return {
      action: 'dead-letter',
      outcome: 'not_recorded',
      detail: `every attempt was made (${target.attemptsMade} of ${maxAttempts})`,
    };
  }
  const attempt = target.attemptsMade + 1;
  const startedAt = now();
  const base = { ...key, attempt, attemptedAt: startedAt };

  async function finish(
    decision: WebhookDecision,
    entry: Omit<DeliveryRecord, keyof typeof base | 'outcome'> = {},
  ): Promise<WebhookDecision> {
    const record: DeliveryRecord = { ...base, ...entry, outcome: decision.outcome as DeliveryOutcome };
    try {
      await recordAttempt(ctx, record, progress);
    } catch (error) {
      ctx.onRecordFailure?.(error, record);
    }
    return { ...decision, attempt };
  }

  if (target.alreadyDelivered) {
    return finish({ action: 'done', outcome: 'duplicate' }, { error: 'already delivered' });
  }
  const { subject } = target;
  if (!subject) {
    return finish({ action: 'done', outcome: 'unknown_subject' }, { error: 'the subject does not exist' });
  }
  // What the service remembers of the endpoint follows the subject's settings first: a rotated
  // secret starts its overlap, a new WEBHOOK_URL enables a disabled endpoint.
  const observed = observeEndpoint(target.endpoint, subject, startedAt);
  let endpoint: EndpointMemory = target.endpoint ?? observed.memory;
  try {
    if (observed.changed) await ctx.log.rememberEndpoint(event.subjectId, observed.memory, target.endpoint);
    endpoint = observed.memory;
  } catch (error) {
    // Not remembered: signed as before the change, and tried again with the next attempt.
    const detail = `database: ${(error as Error).message}`;
    const decision = { ...failedAttempt(attempt, detail), databaseError: error };
    return finish(decision, {
      error: 'the endpoint state could not be stored',
      retryInSeconds: decision.action === 'retry' ? decision.delaySeconds : undefined,
    });
  }
  const enabled = observed.enabledByUrlChange ? { endpointEnabled: true } : {};
  if (endpoint.disabledAt !== null) {
    return finish(
      { action: 'done', outcome: 'disabled', detail: 'the endpoint is disabled' },
      { error: 'the endpoint is disabled (its attempts kept failing)' },
    );
  }
  if (subject.webhookUrl === null) {
    return finish({ action: 'done', outcome: 'skipped' }, { error: 'the subject has no WEBHOOK_URL' });
  }

  const [secret = null, ...alsoSignedWith] = signingSecrets(
    endpoint,
    startedAt,
    ctx.endpointPolicy.secretOverlapMs,
  );
  // The endpoint's part of the engine's store: what WEBHOOK_DELIVERY and WEBHOOK_ENDPOINT keep.
  const store: ReceiverStore = {
    record: (entry) =>
      recordAttempt(ctx, { ...key, ...entry, outcome: entry.outcome as DeliveryOutcome }, progress),
    async delivered(_at, slowAt) {
      // Written only when it changes something: most deliveries cost no statement here.
      if (endpoint.failingSince !== null || slowAt !== endpoint.slowSince) {
        await ctx.log.endpointDelivered(event.subjectId, slowAt);
      }
    },
    slow: (at) => ctx.log.endpointSlow(event.subjectId, at),
    failed: (at, failure) => ctx.log.endpointFailed(event.subjectId, at, failure.disableIfFailingSince),
  };
  const decision = await deliverAttempt(
    {
      attempt,
      url: subject.webhookUrl,
      health: endpoint,
      request: (url, at) =>
        webhookRequest(url, eventId, event.documentId, secret, Math.floor(at / 1000), alsoSignedWith),
    },
    store,
    engineContext(ctx, copy.finalReceive, (error, entry) =>
      ctx.onRecordFailure?.(error, { ...key, ...entry, outcome: entry.outcome as DeliveryOutcome }),
    ),
    RECEIPT_RULES(resend),
  );
  const { disabled, ...rest } = decision;
  return {
    ...(rest as WebhookDecision),
    ...enabled,
    ...(disabled ? { endpointDisabled: { failingSince: endpoint.failingSince ?? now() } } : {}),
  };
}
