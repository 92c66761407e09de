import { expect, it } from 'vitest';
import type { WebhookRequest, WebhookSender, WebhookSendResult } from '../../shared/core/delivery/sender.js';
import {
  deliverNotification,
  type NotificationDeliveryContext,
} from '../../shared/core/notifications/notifier.js';
import {
  newEventId,
  notification,
  type SubscriptionStore,
} from '../../shared/core/notifications/subscriptions.js';
import { subscriptionRow } from './subscriptions.js';

/** A receiver that answers from a script, and the time each request was given. */
class ScriptedSender implements WebhookSender {
  readonly timeouts: (number | undefined)[] = [];
  constructor(readonly script: WebhookSendResult[]) {}
  async send(_request: WebhookRequest, options?: { timeoutMs?: number }) {
    this.timeouts.push(options?.timeoutMs);
    return this.script.shift() ?? { kind: 'response', status: 200, durationMs: 3 };
  }
}

/**
 * Change notifications' delivery lanes (shared/core/delivery/lanes.ts) on a store of a real
 * database: a receiver that misses the fast lane's time is slow (not failing) and its events go to
 * the slow lane unsent, it stays slow while it answers slowly there, and is fast again once it
 * answers in time. For the embedded database and for T-SQL.
 */
export function notificationLaneCases(store: () => SubscriptionStore, tenant: string) {
  it('gives a receiver the fast lane while it answers in time, the slow lane from a missed answer until it answers in time again', async () => {
    const subscriptions = store();
    const made = subscriptionRow({ owner: 'basic:lanes', url: 'https://receiver.example/hook' });
    expect(await subscriptions.create(made, 1000)).toBe('created');
    await subscriptions.delivered(made.id, made.waitingEvent!, true, Date.now(), null);
    const sender = new ScriptedSender([]);
    const ctx = (lane: 'fast' | 'slow'): NotificationDeliveryContext => ({
      store: subscriptions,
      sender,
      retrySchedule: [1, 2, 4],
      allowPrivateTargets: false,
      endpointPolicy: { secretOverlapMs: 3_600_000, disableAfterMs: 3_600_000 },
      lanes: { lane, fastAnswerMs: 2000 },
    });
    const event = (messageId: string) => ({
      message: notification(tenant, made.id, newEventId(), 'table.changed', Date.now()),
      copy: { messageId, finalReceive: false },
    });

    const first = event(`lanes-${made.id}-1`);
    sender.script.push({ kind: 'error', error: 'no answer', durationMs: 2000, timedOut: true });
    expect(await deliverNotification(first.message, first.copy, ctx('fast'))).toMatchObject({
      action: 'retry',
      outcome: 'retrying',
      delaySeconds: 0,
    });
    expect(sender.timeouts).toEqual([2000]);
    const slow = (await subscriptions.get(made.id))!;
    expect(slow.slowSince).not.toBeNull();
    expect(slow.failingSince).toBeNull();
    expect(await subscriptions.attemptsMade(first.copy.messageId)).toBe(1);

    // Another event in the fast lane: handed over, unsent and unrecorded.
    const second = event(`lanes-${made.id}-2`);
    expect(await deliverNotification(second.message, second.copy, ctx('fast'))).toMatchObject({
      action: 'slow-lane',
    });
    expect(sender.timeouts).toHaveLength(1);
    expect(await subscriptions.attemptsMade(second.copy.messageId)).toBe(0);

    // In the slow lane with the sender's whole time: answered slowly, still slow.
    sender.script.push({ kind: 'response', status: 200, durationMs: 5000 });
    expect(await deliverNotification(first.message, first.copy, ctx('slow'))).toMatchObject({
      outcome: 'delivered',
      attempt: 2,
    });
    expect(sender.timeouts.at(-1)).toBeUndefined();
    expect((await subscriptions.get(made.id))!.slowSince).toBe(slow.slowSince);
    // Answered in time: the fast lane again.
    sender.script.push({ kind: 'response', status: 200, durationMs: 300 });
    await deliverNotification(second.message, second.copy, ctx('slow'));
    expect((await subscriptions.get(made.id))!.slowSince).toBeNull();
    const third = event(`lanes-${made.id}-3`);
    expect(await deliverNotification(third.message, third.copy, ctx('fast'))).toMatchObject({
      outcome: 'delivered',
    });
    expect(sender.timeouts.at(-1)).toBe(2000);
    await subscriptions.remove(made.id, 'basic:lanes');
  });
}
