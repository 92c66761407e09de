/** What the service records about every attempt (and every decision not to attempt). */
export type DeliveryOutcome =
  /** The receiver answered 2xx. */
  | 'delivered'
  /** The attempt failed; another follows after `retryInSeconds`. */
  | 'retrying'
  /** The last attempt failed; the event goes to the dead-letter queue. */
  | 'failed'
  /** The receiver answered 410 Gone: no further attempts. */
  | 'gone'
  /** The target is not an http(s) URL or resolves to a forbidden address: never sent. */
  | 'refused'
  /** The subject has no WEBHOOK_URL: nothing to send. */
  | 'skipped'
  /** This copy of the event arrived after the event had been delivered: not sent again. */
  | 'duplicate'
  /** The subject does not exist in the tenant database. */
  | 'unknown_subject'
  /** The subject's endpoint is disabled (all attempts failed for WEBHOOK_DISABLE_AFTER_HOURS): not sent. */
  | 'disabled'
  /**
   * Delivered (2xx) by a copy the admin function sent again (`resend`, `recover`). Kept apart from
   * `delivered`, of which an event has at most one, so that a resend of a delivered event is sent.
   */
  | 'resent'
  /** Sent to the queue again by the admin's recover, which claimed the failed row with it. */
  | 'requeued';

export interface DeliveryRecord {
  readonly eventId: string;
  /**
   * The queue message that carried this copy of the event. Attempts are counted per message: a
   * copy redriven from the dead-letter queue, re-sent or sent twice is a new message and gets the
   * whole schedule, while one message that comes back after its last attempt is not sent again.
   */
  readonly messageId: string;
  readonly subjectId: number;
  readonly documentId: number;
  /**
   * 1-based: the attempts recorded for this message before it, plus one. Not the queue's receive
   * count, which also counts receives that never reached the function (a throttled consumer).
   */
  readonly attempt: number;
  /** When the attempt started, in ms since the epoch. */
  readonly attemptedAt: number;
  readonly outcome: DeliveryOutcome;
  readonly httpStatus?: number;
  /** Network error, time-out or the reason for a refusal; never a secret. */
  readonly error?: string;
  readonly durationMs?: number;
  /** For `retrying`: seconds until the next attempt. */
  readonly retryInSeconds?: number;
}

export interface WebhookSubject {
  readonly webhookUrl: string | null;
  readonly secret: string | null;
}

/**
 * What the service remembers of a subject's endpoint (table WEBHOOK_ENDPOINT): the URL and secret
 * it last saw, the secret before that for the overlap of a rotation, and whether its attempts
 * keep failing. Times in ms since the epoch.
 */
export interface EndpointMemory {
  readonly webhookUrl: string | null;
  /** The secret last used. */
  readonly secret: string | null;
  /** The secret used before the last change; signs too until the overlap ends. */
  readonly previousSecret: string | null;
  /** When the service first used `secret` after another one; null before any change. */
  readonly secretChangedAt: number | null;
  /** The first failed attempt after the last delivery; null while deliveries succeed. */
  readonly failingSince: number | null;
  /** When the endpoint was disabled; null while it is enabled. */
  readonly disabledAt: number | null;
  /** When the endpoint was first seen or last enabled again. */
  readonly enabledAt: number;
  /**
   * Since when it answers slower than the fast lane allows (its attempts go through the slow lane,
   * see lanes.ts); null while it answers in time.
   */
  readonly slowSince: number | null;
}

/** Which copy of which event an attempt is about. */
export interface DeliveryKey {
  readonly eventId: string;
  readonly subjectId: number;
  readonly documentId: number;
  /** The queue message carrying this copy (see {@link DeliveryRecord.messageId}). */
  readonly messageId: string;
  /**
   * A copy the admin function sent again: it counts as delivered only once delivered itself
   * (outcome `resent` of this message), not because an earlier copy was.
   */
  readonly resend?: boolean;
}

/** What an attempt starts from. */
export interface DeliveryTarget {
  /** True when an earlier copy of the event was delivered. */
  readonly alreadyDelivered: boolean;
  /** Attempts recorded for this message so far (outcomes `retrying` and `failed`). */
  readonly attemptsMade: number;
  /** The subject's webhook settings; undefined when the subject does not exist. */
  readonly subject: WebhookSubject | undefined;
  /** What the service remembers of the subject's endpoint; undefined before its first event. */
  readonly endpoint?: EndpointMemory;
}

/**
 * The claim to send a copy asks for with its target, in the same round trip (CONTRACT 6: of two
 * copies at once, one sends): SVC_WEBHOOK_SENDING's row of the event becomes the copy's message's
 * until `until` (ms) unless another message's lasts past `now`; the copy's own is renewed. Taken
 * before the delivery is read, so that a copy that waited for another's claim finds that copy's
 * delivery recorded.
 */
export interface ClaimToSend {
  readonly now: number;
  readonly until: number;
}

/** A target, and whether this copy holds the claim to send to it (else the target is not for use). */
export type ClaimedTarget = DeliveryTarget & { readonly claim: SendingClaim };

/** Whether this copy may send its event now (CONTRACT 6: two copies at once send it once). */
export type SendingClaim =
  | { readonly claimed: true }
  /** Another copy holds a live claim, until `heldUntil` (null: unknown, it was just taken). */
  | { readonly claimed: false; readonly heldUntil: number | null };

/**
 * {@link WebhookDeliveryLog.record} recorded the attempt, but could not end its copy's claim to send
 * the event with it (the login may not delete claims): the claim lapses at its time, and another
 * copy waits until then. Not a failure to record.
 */
export class ClaimNotReleasedError extends Error {
  override readonly name = 'ClaimNotReleasedError';
  constructor(override readonly cause: unknown) {
    super('The attempt was recorded; its claim to send the event could not be ended', { cause });
  }
}

/** The webhook's view of a tenant database: subjects in, attempts out. */
export interface WebhookDeliveryLog {
  /** Ends message `messageId`'s claim of event `eventId` (its attempt is recorded). */
  releaseSending(eventId: string, messageId: string): Promise<void>;
  /**
   * The subject's webhook settings, whether the event was delivered already and how many attempts
   * this message has had, in one round trip.
   */
  findTarget(key: DeliveryKey): Promise<DeliveryTarget>;
  /** This copy's claim to send ({@link ClaimToSend}), then {@link findTarget}'s read, in one round trip. */
  claimAndFindTarget(key: DeliveryKey, claim: ClaimToSend): Promise<ClaimedTarget>;
  /**
   * Records an attempt, and ends its message's claim to send the event (its attempt is over);
   * {@link ClaimNotReleasedError} when only the first happened.
   */
  record(entry: DeliveryRecord): Promise<void>;
  /**
   * Stores what the service now remembers of the subject's endpoint (`before` is what
   * findTarget gave: undefined makes the first row, kept as it is if another copy made it first).
   */
  rememberEndpoint(
    subjectId: number,
    memory: EndpointMemory,
    before: EndpointMemory | undefined,
  ): Promise<void>;
  /**
   * A delivery succeeded: the endpoint is no longer failing; slow since `slowAt` (kept if it was
   * slow already) when it answered slower than the fast lane allows, else no longer slow.
   */
  endpointDelivered(subjectId: number, slowAt: number | null): Promise<void>;
  /** An attempt in the fast lane got no answer in time: the endpoint is slow since `at` unless it was. */
  endpointSlow(subjectId: number, at: number): Promise<void>;
  /**
   * An attempt failed at `at`: the endpoint is failing since then unless it already was; when it
   * has been failing since `disableIfFailingSince` or earlier it is disabled. True when this call
   * disabled it (so that exactly one attempt says so).
   */
  endpointFailed(subjectId: number, at: number, disableIfFailingSince: number): Promise<boolean>;
}
