/**
 * A receiver can only slow itself (CONTRACT 4c and 6). Deliveries go through two lanes, each a
 * queue of its own with its own consumers: the fast lane takes every event first and gives each
 * attempt a short time to be answered ({@link DeliveryLanes.fastAnswerMs}); a receiver that is
 * failing, or that answered (or did not answer) slower than that, gets its attempts in the slow
 * lane, with the whole time the contract allows (10 s), beside the other slow receivers only. So
 * however many receivers hang, answer slowly, redirect or send huge bodies, a fast lane's batch
 * waits at most the fast lane's time for any of them, and a healthy receiver's event never queues
 * behind theirs. A receiver goes back to the fast lane once it answers 2xx within that time again.
 */
export type DeliveryLane = 'fast' | 'slow';

export interface DeliveryLanes {
  /** The lane of the queue this copy of the event came from. */
  readonly lane: DeliveryLane;
  /** How long an attempt in the fast lane waits for its answer. */
  readonly fastAnswerMs: number;
}

/** What the service remembers of a receiver's health. Times in ms since the epoch. */
export interface ReceiverHealth {
  /** The first failed attempt after its last delivery; null while deliveries succeed. */
  readonly failingSince: number | null;
  /** Since when it answers slower than the fast lane allows; null while it answers in time. */
  readonly slowSince: number | null;
}

/** The lane a receiver's next attempt belongs in. */
export const laneOf = (health: ReceiverHealth): DeliveryLane =>
  health.failingSince !== null || health.slowSince !== null ? 'slow' : 'fast';

/** Whether an attempt of `durationMs` that the receiver answered keeps it (or makes it) slow. */
export const answeredSlowly = (lanes: Pick<DeliveryLanes, 'fastAnswerMs'>, durationMs: number) =>
  durationMs > lanes.fastAnswerMs;

/** The time an attempt in `lanes.lane` waits for its answer: the fast lane's, or the sender's own. */
export const answerTimeout = (lanes: DeliveryLanes): number | undefined =>
  lanes.lane === 'fast' ? lanes.fastAnswerMs : undefined;

/** Words for the log and the attempt's record when the fast lane hands an attempt over. */
export const fastLaneTimedOut = (lanes: Pick<DeliveryLanes, 'fastAnswerMs'>) =>
  `no answer within the fast lane's ${lanes.fastAnswerMs / 1000} s: tried again at once in the slow lane (10 s)`;

/**
 * After how many seconds the slow lane takes over a copy the consumer decided on: at once for one
 * handed over unsent, after the retry's delay for a retry decided in the fast lane; undefined when
 * the copy is done, dead-lettered or retried in the slow lane itself.
 */
export function slowLaneDelay(
  decision: { readonly action: string; readonly delaySeconds?: number },
  lane: DeliveryLane,
): number | undefined {
  if (decision.action === 'slow-lane') return 0;
  return decision.action === 'retry' && lane === 'fast' ? decision.delaySeconds : undefined;
}
