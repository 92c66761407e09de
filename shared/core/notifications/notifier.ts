import type { ChangeFeedStore } from '../data-api/changes.js';
import { isRecorded } from '../data-api/changes.js';
import {
  attemptsLeft,
  type DeliveryDecision,
  type DeliveryUseContext,
  deliverAttempt,
  engineContext,
  type ReceiverStore,
} from '../delivery/engine.js';
import { type SpanLink, spanLinkOf } from '../tracing.js';
import {
  EVENT_ID,
  eventBody,
  type NotificationMessage,
  type NotificationOutcome,
  type NotificationQueue,
  newEventId,
  notification,
  SUBSCRIPTION_ID,
  type Subscription,
  type SubscriptionStore,
  signNotification,
  sourceLabel,
} from './subscriptions.js';

/**
 * The notifier (CONTRACT 4c). A pass checks a tenant's subscribed tables: for each, the change
 * feed's stamp (one small indexed statement: committed changes not yet stamped get the next
 * batch), then a `table.changed` for every active subscription whose source has a batch it was not
 * notified of and that has no event waiting. Because the stamp comes first, a notification is
 * queued only after the changes it is about are visible to `getChanges`; a transaction that
 * commits later is stamped by a later pass, with a later batch, and notified then.
 *
 * Passes run in a loop per tenant: each asks for the next one after the tenant's delay. A loop
 * started twice collapses (a pass that finds another ran within most of a delay ends its loop);
 * a tenant without subscriptions ends its loop, and its next subscription starts one.
 */
export interface PassContext {
  readonly tenant: string;
  /** The tenant's subscriptions (a store of {@link tenant}'s). */
  readonly store: SubscriptionStore;
  readonly feed: ChangeFeedStore;
  readonly queue: NotificationQueue;
  /** The tenant's `changeFeed`: a source no longer listed is not checked. */
  readonly recorded: readonly string[];
  /** The tenant's changeNotificationDelaySeconds in ms. */
  readonly delayMs: number;
  /** After how long an event still waiting counts as lost (longer than every attempt takes). */
  readonly staleWaitingMs: number;
  readonly now?: () => number;
  /**
   * Told of the writes a pass notifies of (CONTRACT 8a), where the pass's span is exported: the
   * traces the service's own writes left on their changes, as links of the pass's span, so that an
   * integrator's call that wrote leads to the notification that announced it. Not given: not read.
   */
  readonly linkWrites?: (links: readonly SpanLink[]) => void;
}

/** At most this many writes linked from one pass (OpenTelemetry keeps 128 links a span). */
export const MAX_WRITE_LINKS = 32;

export interface PassOutcome {
  /** False when another loop's pass ran within most of a delay: this loop ends. */
  readonly ran: boolean;
  /** Whether the loop goes on (asks for the next pass). */
  readonly again: boolean;
  /** Tables checked, and notifications queued. */
  readonly checked: number;
  readonly notified: number;
  /** Sources listed by subscriptions that could not be checked (not recorded any more). */
  readonly unchecked: readonly string[];
}

/**
 * Share of a delay within which a second pass is a second loop's: a loop's own next pass comes a
 * whole delay later (SQS holds it back at least that long), and of two loops, whatever their
 * offset, one meets the other within half a delay and ends.
 */
const SECOND_LOOP_SHARE = 0.5;

const sourceKey = (s: Subscription) => `${s.source.schema}\u0000${s.source.name}`.toLowerCase();

/** One pass of the tenant's notifier. */
export async function notifierPass(ctx: PassContext): Promise<PassOutcome> {
  const now = (ctx.now ?? Date.now)();
  if (!(await ctx.store.claimPass(now, now - SECOND_LOOP_SHARE * ctx.delayMs))) {
    return { ran: false, again: false, checked: 0, notified: 0, unchecked: [] };
  }
  const live = await ctx.store.listLive();
  if (live.length === 0 && (await ctx.store.endPasses())) {
    return { ran: true, again: false, checked: 0, notified: 0, unchecked: [] };
  }
  const bySource = new Map<string, Subscription[]>();
  for (const subscription of live) {
    const key = sourceKey(subscription);
    bySource.set(key, [...(bySource.get(key) ?? []), subscription]);
  }
  let checked = 0;
  let notified = 0;
  let linked = 0;
  const unchecked: string[] = [];
  for (const subscriptions of bySource.values()) {
    const { source } = subscriptions[0]!;
    const state = isRecorded(ctx.recorded, source)
      ? await ctx.feed.stamp({ ...source, kind: 'table', columns: [], primaryKey: [] })
      : undefined;
    if (!state) {
      unchecked.push(sourceLabel(source));
      continue;
    }
    checked++;
    const newRecording = (s: Subscription) => s.seenFeed?.toUpperCase() !== state.feedId.toUpperCase();
    if (subscriptions.some((s) => newRecording(s) || s.seenBatch < state.lastBatch)) {
      await ctx.store.observe(source, state, now);
    }
    // The earliest batch notified of now: the writes after it are the ones announced.
    let notifiedFrom: number | undefined;
    for (const subscription of subscriptions) {
      if (subscription.state !== 'active') continue;
      const notifiedUpTo = newRecording(subscription) ? -1 : subscription.notifiedBatch;
      if (notifiedUpTo >= state.lastBatch) continue;
      const waiting =
        subscription.waitingEvent !== null && (subscription.waitingSince ?? 0) >= now - ctx.staleWaitingMs;
      if (waiting) continue;
      const event = newEventId();
      if (!(await ctx.store.claim(subscription.id, event, state.lastBatch, now, now - ctx.staleWaitingMs))) {
        continue;
      }
      try {
        await ctx.queue.notify(notification(ctx.tenant, subscription.id, event, 'table.changed', now));
        notified++;
        notifiedFrom = Math.min(notifiedFrom ?? notifiedUpTo, notifiedUpTo);
      } catch (error) {
        // Nothing waits then, and the next pass notifies again.
        await ctx.store.release(subscription.id, event);
        throw error;
      }
    }
    if (ctx.linkWrites && notifiedFrom !== undefined && linked < MAX_WRITE_LINKS) {
      const writes = await ctx.feed.writers(
        source,
        { from: notifiedFrom, to: state.lastBatch },
        MAX_WRITE_LINKS - linked,
      );
      // Whatever a session put there is read as a traceparent, and only as one.
      const links = writes.flatMap((traceparent) => spanLinkOf(traceparent) ?? []);
      linked += links.length;
      if (links.length > 0) ctx.linkWrites(links);
    }
  }
  return { ran: true, again: true, checked, notified, unchecked };
}

/**
 * The backstop of a tenant's loop of passes (run hourly beside the change feed's retention): when
 * the tenant has live subscriptions and no pass ran for three delays (its loop lost, say a pass
 * that could not ask for the next one for longer than SQS kept trying), starts it again. True when
 * it did. A tenant that never had a subscription has no notifier row and costs one small read.
 */
export async function restartStalledNotifier(
  ctx: Pick<PassContext, 'tenant' | 'store' | 'queue' | 'delayMs' | 'now'>,
): Promise<boolean> {
  const now = (ctx.now ?? Date.now)();
  const last = await ctx.store.lastPassAt();
  if (last === undefined || (last !== null && last > now - 3 * ctx.delayMs)) return false;
  if ((await ctx.store.listLive()).length === 0) return false;
  await ctx.queue.pass(ctx.tenant, 0);
  return true;
}

/** An operator's `notify` (the admin function): one subscription, or every one that failed since a time. */
export type NotifyRequest =
  | { readonly tenant: string; readonly subscriptionId: string }
  | { readonly tenant: string; readonly since: number };

/**
 * Resend and recover for change notifications: a notification names no change, so recovering
 * what a receiver missed is one new `table.changed` (it pulls everything since its own sync
 * token). Sends one now to the subscription named, or to every active subscription with an attempt
 * that failed for good since `since` (dead-lettered, 410, refused); replaces an event that waits
 * (lost or stuck). Answers the subscriptions notified.
 */
export async function notifyAgain(
  ctx: Pick<PassContext, 'tenant' | 'store' | 'queue' | 'now'>,
  request: NotifyRequest,
): Promise<{ notified: string[]; skipped: { subscription: string; reason: string }[] }> {
  const now = (ctx.now ?? Date.now)();
  const ids =
    'subscriptionId' in request ? [request.subscriptionId] : await ctx.store.failedSince(request.since);
  const notified: string[] = [];
  const skipped: { subscription: string; reason: string }[] = [];
  for (const id of ids.slice(0, 1000)) {
    const subscription = await ctx.store.get(id);
    if (!subscription) {
      skipped.push({ subscription: id, reason: 'no such subscription' });
      continue;
    }
    const event = newEventId();
    if (!(await ctx.store.forceClaim(id, event, now))) {
      skipped.push({ subscription: id, reason: `it is ${subscription.state}, not active (enable it first)` });
      continue;
    }
    await ctx.queue.notify(notification(ctx.tenant, id, event, 'table.changed', now));
    notified.push(id);
  }
  return { notified, skipped };
}

/** The copy of a notification the queue handed over this time. */
export interface NotificationCopy {
  readonly messageId: string;
  /** True when the queue will not hand this message out again. */
  readonly finalReceive: boolean;
}

export interface NotificationDeliveryContext extends DeliveryUseContext {
  readonly store: SubscriptionStore;
}

/** What the queue should do with this copy of the notification: the delivery engine's decision. */
export type NotificationDecision = DeliveryDecision;

/** The secrets an event is signed with at `now`: the current one, and the previous during the overlap. */
export function notificationSecrets(subscription: Subscription, now: number, overlapMs: number): string[] {
  const overlap =
    subscription.previousSecret !== null &&
    subscription.secretChangedAt !== null &&
    now < subscription.secretChangedAt + overlapMs;
  return overlap ? [subscription.secret, subscription.previousSecret!] : [subscription.secret];
}

const USER_AGENT = 'erp-integration-gateway-webhook/1';

/**
 * Change notifications' rules where the engine's two uses differ: a subscription's URL is its
 * integrator's, so a refused one counts against it; 410 disables the subscription (its receiver
 * is gone for good: CONTRACT 4c's status says so); a failure that disables it ends its event.
 */
const NOTIFICATION_RULES = {
  refusalFails: true,
  goneDisables: true,
  disablingEnds: true,
  deliveredOutcome: 'delivered',
} as const;

/**
 * Makes the next attempt to deliver one event of a subscription and records it in
 * SVC_NOTIFICATION_DELIVERY, as the receipt webhook's attempts are (CONTRACT 6): any 2xx within
 * the time-out delivers; anything else is retried on the schedule, the last failure dead-lettered;
 * 410 disables the subscription at once, and a subscription failing for the disabling time is
 * disabled. A deleted or disabled subscription's event is recorded and not sent.
 */
export async function deliverNotification(
  message: NotificationMessage,
  copy: NotificationCopy,
  ctx: NotificationDeliveryContext,
): Promise<NotificationDecision> {
  const now = ctx.now ?? Date.now;
  const [subscription, attemptsMade] = await Promise.all([
    ctx.store.get(message.subscription),
    ctx.store.attemptsMade(copy.messageId),
  ]);
  const attempt = attemptsMade + 1;
  const startedAt = now();
  const base = {
    subscriptionId: message.subscription,
    eventId: message.eventId,
    eventType: message.type,
    attempt,
    attemptedAt: startedAt,
    messageId: copy.messageId,
  };
  const record = async (
    decision: NotificationDecision,
    entry: { httpStatus?: number; error?: string; durationMs?: number } = {},
  ) => {
    await ctx.store.record({
      ...base,
      ...entry,
      outcome: decision.outcome as NotificationOutcome,
    });
    return decision;
  };
  if (!attemptsLeft(attemptsMade, ctx.retrySchedule)) {
    // Its last attempt was recorded but the message came back (its move to the dead-letter queue failed).
    return {
      action: 'dead-letter',
      outcome: 'failed',
      attempt: attemptsMade,
      detail: 'every attempt was made',
    };
  }
  if (!subscription) {
    return record({ action: 'done', outcome: 'deleted', attempt, detail: 'the subscription was deleted' });
  }
  if (subscription.state === 'disabled') {
    return record(
      { action: 'done', outcome: 'disabled', attempt, detail: 'the subscription is disabled' },
      { error: 'the subscription is disabled' },
    );
  }

  const timestamp = (at: number) => Math.floor(at / 1000);
  const body = eventBody(message.type, message.tenant, subscription, message.at);
  // The subscription's part of the engine's store: SVC_SUBSCRIPTION and SVC_NOTIFICATION_DELIVERY.
  const store: ReceiverStore = {
    record: (entry) => ctx.store.record({ ...base, ...entry, outcome: entry.outcome as NotificationOutcome }),
    delivered: (at, slowAt) =>
      ctx.store.delivered(subscription.id, message.eventId, message.type === 'subscription.ping', at, slowAt),
    slow: (at) => ctx.store.markSlow(subscription.id, at),
    failed: (at, failure) => ctx.store.failed(subscription.id, message.eventId, at, failure),
  };
  return deliverAttempt(
    {
      attempt,
      url: subscription.url,
      health: subscription,
      request: (url, at) => ({
        url,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'webhook-id': message.eventId,
          'webhook-timestamp': String(timestamp(at)),
          'webhook-signature': notificationSecrets(subscription, at, ctx.endpointPolicy.secretOverlapMs)
            .map((secret) => signNotification(secret, message.eventId, timestamp(at), body))
            .join(' '),
        },
        body,
      }),
    },
    store,
    engineContext(ctx, copy.finalReceive),
    NOTIFICATION_RULES,
  );
}

/** A notification message from the queue, or undefined when the body is not one. */
export function parseNotifierMessage(
  body: string,
): NotificationMessage | { readonly kind: 'pass'; readonly tenant: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!value || typeof value !== 'object') return undefined;
  const m = value as Record<string, unknown>;
  if (typeof m.tenant !== 'string' || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(m.tenant)) return undefined;
  if (m.kind === 'pass') return { kind: 'pass', tenant: m.tenant };
  if (
    m.kind === 'notify' &&
    typeof m.subscription === 'string' &&
    SUBSCRIPTION_ID.test(m.subscription) &&
    typeof m.eventId === 'string' &&
    EVENT_ID.test(m.eventId) &&
    (m.type === 'table.changed' || m.type === 'subscription.ping') &&
    typeof m.at === 'number' &&
    Number.isSafeInteger(m.at)
  ) {
    return notification(m.tenant, m.subscription, m.eventId, m.type, m.at);
  }
  return undefined;
}
