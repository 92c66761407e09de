import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { forbiddenHostReason } from '../../shared/adapters/http/target-addresses.js';
import type { DataApiContext } from '../../shared/core/data-api/read.js';
import type { WebhookRequest, WebhookSendResult } from '../../shared/core/delivery/sender.js';
import { ServiceError } from '../../shared/core/errors.js';
import {
  deliverNotification,
  notificationSecrets,
  parseNotifierMessage,
} from '../../shared/core/notifications/notifier.js';
import {
  createSubscription,
  eventBody,
  type NotificationAttempt,
  type NotificationMessage,
  newSecret,
  type Subscription,
  type SubscriptionContext,
  type SubscriptionStore,
  signNotification,
} from '../../shared/core/notifications/subscriptions.js';
import { subscriptionRow } from '../support/subscriptions.js';

const NOW = Date.UTC(2026, 10, 28, 12);

const subscription = (overrides: Partial<Subscription> = {}): Subscription =>
  subscriptionRow({
    id: 'sub_0123456789abcdef01234567',
    owner: 'basic:demo',
    url: 'https://receiver.example/hook',
    state: 'active',
    createdAt: NOW - 3_600_000,
    seenFeed: 'F',
    seenBatch: 3,
    notifiedBatch: 3,
    waitingEvent: 'msg_0123456789abcdef0123456789abcdef',
    waitingSince: NOW,
    ...overrides,
  });

/** The port's stand-in for the delivery's unit tests: one subscription, the calls it got. */
function memoryStore(initial: Subscription | undefined, attemptsMade = 0) {
  let current = initial;
  const records: NotificationAttempt[] = [];
  const calls: string[] = [];
  const store = {
    get: async () => current,
    attemptsMade: async () => attemptsMade,
    record: async (entry: NotificationAttempt) => {
      records.push(entry);
    },
    delivered: async (_id: string, _event: string, ping: boolean) => {
      calls.push(`delivered ping=${ping}`);
      if (current) current = { ...current, state: ping ? 'active' : current.state, waitingEvent: null };
    },
    failed: async (
      _id: string,
      _event: string,
      now: number,
      options: Parameters<SubscriptionStore['failed']>[3],
    ) => {
      calls.push(`failed finished=${options.finished} disableNow=${options.disableNow}`);
      if (!current) return false;
      const failingSince = current.failingSince ?? now;
      const disable = options.disableNow || failingSince <= options.disableIfFailingSince;
      current = { ...current, failingSince, state: disable ? 'disabled' : current.state };
      return disable;
    },
  } as unknown as SubscriptionStore;
  return { store, records, calls };
}

function sender(result: Partial<WebhookSendResult> & { status?: number } = { status: 200 }) {
  const sent: WebhookRequest[] = [];
  return {
    sent,
    sender: {
      async send(request: WebhookRequest): Promise<WebhookSendResult> {
        sent.push(request);
        return { kind: 'response', status: 200, durationMs: 5, ...result } as WebhookSendResult;
      },
    },
  };
}

const message: NotificationMessage = {
  kind: 'notify',
  tenant: 'demo',
  subscription: 'sub_0123456789abcdef01234567',
  eventId: 'msg_0123456789abcdef0123456789abcdef',
  type: 'table.changed',
  at: NOW - 1000,
};
const policy = {
  retrySchedule: [5, 30],
  allowPrivateTargets: false,
  endpointPolicy: { secretOverlapMs: 86_400_000, disableAfterMs: 3_600_000 },
};
const deliver = (
  store: SubscriptionStore,
  send: ReturnType<typeof sender>['sender'],
  copy = { messageId: 'm-1', finalReceive: false },
  msg = message,
) => deliverNotification(msg, copy, { store, sender: send, ...policy, now: () => NOW, random: () => 0.5 });

describe('change notifications: events and their signatures', () => {
  it('signs as the Standard Webhooks libraries verify with the whsec_ secret; the body names no row', () => {
    const secret = newSecret();
    const body = eventBody('table.changed', 'demo', subscription(), NOW);
    // The library refuses a time stamp five minutes away from its own clock.
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': message.eventId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signNotification(secret, message.eventId, timestamp, body),
    };
    expect(new Webhook(secret).verify(body, headers)).toEqual({
      type: 'table.changed',
      subscription: 'sub_0123456789abcdef01234567',
      tenant: 'demo',
      source: 'SUBJECT',
      timestamp: new Date(NOW).toISOString(),
    });
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
  });

  it('signs with the previous secret too only during the overlap after a rotation', () => {
    const rotated = subscription({ previousSecret: 'whsec_old', secretChangedAt: NOW - 1000 });
    expect(notificationSecrets(rotated, NOW, 86_400_000)).toEqual([rotated.secret, 'whsec_old']);
    expect(notificationSecrets(rotated, NOW + 86_400_000, 86_400_000)).toEqual([rotated.secret]);
  });

  it('reads only its own queue messages', () => {
    expect(parseNotifierMessage(JSON.stringify({ kind: 'pass', tenant: 'demo' }))).toEqual({
      kind: 'pass',
      tenant: 'demo',
    });
    expect(parseNotifierMessage(JSON.stringify(message))).toEqual(message);
    for (const bad of [
      'not json',
      JSON.stringify({ kind: 'pass', tenant: 'Demo!' }),
      JSON.stringify({ ...message, subscription: 'sub_x' }),
      JSON.stringify({ ...message, type: 'row.inserted' }),
      JSON.stringify({ ...message, at: 'now' }),
    ]) {
      expect(parseNotifierMessage(bad), bad).toBeUndefined();
    }
  });
});

describe('change notifications: one attempt of a delivery', () => {
  it('delivers on a 2xx, signed, and tells the store (a ping activates)', async () => {
    const { store, records, calls } = memoryStore(subscription({ state: 'pending' }));
    const { sender: send, sent } = sender({ status: 204 });
    const decision = await deliver(store, send, undefined, { ...message, type: 'subscription.ping' });
    expect(decision).toMatchObject({ action: 'done', outcome: 'delivered', attempt: 1 });
    expect(calls).toEqual(['delivered ping=true']);
    expect(records).toMatchObject([
      { outcome: 'delivered', httpStatus: 204, eventType: 'subscription.ping' },
    ]);
    expect(sent[0]!.headers['webhook-id']).toBe(message.eventId);
    expect(sent[0]!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  it('retries a failure on the schedule, dead-letters after the last attempt, keeps the event waiting until then', async () => {
    const first = memoryStore(subscription());
    const retry = await deliver(first.store, sender({ status: 500 }).sender);
    expect(retry).toMatchObject({ action: 'retry', outcome: 'retrying', delaySeconds: 5 });
    expect(first.calls).toEqual(['failed finished=false disableNow=false']);
    const last = memoryStore(subscription(), 2);
    const dead = await deliver(last.store, sender({ status: 503 }).sender);
    expect(dead).toMatchObject({ action: 'dead-letter', outcome: 'failed', attempt: 3 });
    expect(last.calls).toEqual(['failed finished=true disableNow=false']);
    // A message whose attempts were all made is not sent again.
    const again = memoryStore(subscription(), 3);
    const { sender: send, sent } = sender();
    expect(await deliver(again.store, send)).toMatchObject({ action: 'dead-letter' });
    expect(sent).toHaveLength(0);
  });

  it('disables at once on 410, and after failing for the disabling time', async () => {
    const gone = memoryStore(subscription());
    expect(await deliver(gone.store, sender({ status: 410 }).sender)).toMatchObject({
      action: 'done',
      outcome: 'gone',
      disabled: true,
    });
    const failing = memoryStore(subscription({ failingSince: NOW - 3_600_001 }));
    expect(
      await deliver(failing.store, sender({ kind: 'error', error: 'ECONNREFUSED' } as never).sender),
    ).toMatchObject({
      action: 'done',
      outcome: 'failed',
      disabled: true,
    });
  });

  it('sends nothing to a deleted or disabled subscription, or to a refused target', async () => {
    for (const [state, outcome] of [
      [undefined, 'deleted'],
      [subscription({ state: 'disabled' }), 'disabled'],
      [subscription({ url: 'https://169.254.169.254/latest' }), 'refused'],
    ] as const) {
      const { store } = memoryStore(state);
      const { sender: send, sent } = sender();
      expect(await deliver(store, send)).toMatchObject({ action: 'done', outcome });
      expect(sent).toHaveLength(0);
    }
  });
});

describe('change notifications: the target URL of a new subscription', () => {
  const ctx = (allowPrivateTargets: boolean, forbiddenHost = forbiddenHostReason): SubscriptionContext => ({
    tenant: 'demo',
    owner: 'basic:demo',
    store: {} as SubscriptionStore,
    feed: {} as never,
    queue: {} as never,
    recorded: ['SUBJECT'],
    maxSubscriptions: 100,
    delayMs: 10_000,
    allowPrivateTargets,
    forbiddenHost,
  });
  // Reached only once the URL is accepted: the source's lookup.
  const data = {
    reader: {
      catalogue: {
        findDataSource: async () => {
          throw new Error('looked up');
        },
      },
    },
  } as unknown as DataApiContext;
  const refusal = async (context: SubscriptionContext, url: unknown) => {
    try {
      await createSubscription(context, data, JSON.stringify({ source: 'SUBJECT', url }));
    } catch (error) {
      if (error instanceof ServiceError) return `${error.status} ${error.code}: ${error.message}`;
      return (error as Error).message;
    }
    return 'created';
  };

  it('refuses plain http, credentials, loopback, private and metadata targets in production', async () => {
    const production = ctx(false);
    expect(await refusal(production, 'http://receiver.example/hook')).toMatch(
      /^400 invalid_webhook_url: "url" is not https/,
    );
    expect(await refusal(production, 'https://user:pw@receiver.example/')).toMatch(/user name or password/);
    expect(await refusal(production, 'https://169.254.169.254/latest/meta-data')).toMatch(
      /^400 invalid_webhook_url.*link-local/,
    );
    expect(await refusal(production, 'https://10.1.2.3/')).toMatch(
      /^400 invalid_webhook_url: "url" is refused: target address 10\.1\.2\.3 is .*private/,
    );
    expect(await refusal(production, 'https://[::1]/')).toMatch(/^400 invalid_webhook_url.*loopback/);
    // A name is resolved: localhost is loopback (from the hosts file, no network).
    expect(await refusal(production, 'https://localhost:8443/hook')).toMatch(
      /^400 invalid_webhook_url: "url" names a host the service must not call: localhost resolves to .*loopback/,
    );
    // The field is the subject of each message: never "is must be" or "is is".
    expect(await refusal(production, 'ftp://receiver.example/')).toMatch(
      /^400 invalid_webhook_url: "url" must be http or https, not ftp: give the https URL of your receiver/,
    );
    expect(await refusal(production, 'not a url')).toMatch(
      /^400 invalid_webhook_url: "url" is not a valid absolute URL: give/,
    );
    // The URL parser would drop them silently, and a URL other than the one given would be stored.
    for (const control of ['\r\n', '\n', '\t', '\u0000', '\u007f', '\u0085']) {
      expect(
        await refusal(production, `https://receiver.example/ho${control}ok`),
        JSON.stringify(control),
      ).toMatch(/^400 invalid_webhook_url: "url" contains control characters/);
    }
    expect(await refusal(production, 'x'.repeat(2001))).toMatch(/longer than 2000/);
    expect(await refusal(production, 'x'.repeat(9000))).toMatch(
      /^400 invalid_subscription: The body is over 8192/,
    );
    // An https URL of a public host goes on to the source (no network here: the host's check stands in).
    expect(
      await refusal(
        ctx(false, async () => undefined),
        'https://receiver.example/hook',
      ),
    ).toBe('looked up');
  });

  it('allows http and private targets where WEBHOOK_ALLOW_PRIVATE_TARGETS is true (the local stack)', async () => {
    expect(await refusal(ctx(true), 'http://127.0.0.1:3000/_local/webhook-sink')).toBe('looked up');
  });
});
