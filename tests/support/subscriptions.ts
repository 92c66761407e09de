import {
  newEventId,
  newSecret,
  newSubscriptionId,
  type Subscription,
} from '../../shared/core/notifications/subscriptions.js';

/**
 * A subscription row as the routes make it (pending, its ping waiting), for tests and benches that
 * write the store directly: of SUBJECT unless `overrides` says otherwise.
 */
export function subscriptionRow(overrides: Partial<Subscription> = {}): Subscription {
  const now = Date.now();
  return {
    id: newSubscriptionId(),
    owner: 'basic:test',
    source: { schema: 'dbo', name: 'SUBJECT' },
    url: 'https://receiver.invalid/',
    secret: newSecret(),
    previousSecret: null,
    secretChangedAt: null,
    state: 'pending',
    createdAt: now,
    seenFeed: 'X',
    seenBatch: 0,
    notifiedBatch: 0,
    lastChangeAt: null,
    lastNotifiedAt: null,
    lastDeliveredAt: null,
    consecutiveFailures: 0,
    failingSince: null,
    disabledAt: null,
    disabledReason: null,
    waitingEvent: newEventId(),
    waitingSince: now,
    slowSince: null,
    ...overrides,
  };
}
