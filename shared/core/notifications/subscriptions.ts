import { createHmac, randomBytes } from 'node:crypto';
import type { ChangeFeedState, ChangeFeedStore } from '../data-api/changes.js';
import { isRecorded } from '../data-api/changes.js';
import { continuesByKey } from '../data-api/cursor.js';
import { type DataApiContext, readCurrent } from '../data-api/read.js';
import { badRequest, notFound, ServiceError } from '../errors.js';
import {
  type CallKey,
  type IdempotencyStore,
  type KeyedOutcome,
  onceUnderKey,
  type RecordedAnswer,
  requestFingerprint,
  type Transaction,
} from '../idempotency.js';
import { checkWebhookUrl } from '../webhook/target.js';

/**
 * Change notifications (CONTRACT 4c): an integrator subscribes to a recorded table and is told,
 * by a thin signed `table.changed` event, that it changed, so that it pulls with its own sync
 * link. The notification carries no row data and needs no order: a lost, repeated or late one
 * can do no harm, because the pull is what is correct (the change feed, 4b).
 */

export type SubscriptionState = 'pending' | 'active' | 'disabled';

/** A table, as the catalogue names it. */
export interface SourceName {
  readonly schema: string;
  readonly name: string;
}

/** A subscription as stored (table SVC_SUBSCRIPTION). Times in ms since the epoch. */
export interface Subscription {
  readonly id: string;
  /** Who made it (`basic:<user>`): only they see and change it. */
  readonly owner: string;
  readonly source: SourceName;
  readonly url: string;
  /** `whsec_…`: the Standard Webhooks secret that signs its events. */
  readonly secret: string;
  /** The secret before the last rotation: signs too until the overlap ends. */
  readonly previousSecret: string | null;
  readonly secretChangedAt: number | null;
  readonly state: SubscriptionState;
  readonly createdAt: number;
  /** The change feed's recording and last batch the notifier saw of the source. */
  readonly seenFeed: string | null;
  readonly seenBatch: number;
  /** The batch up to which a `table.changed` was sent (-1: send one whatever the batch). */
  readonly notifiedBatch: number;
  readonly lastChangeAt: number | null;
  readonly lastNotifiedAt: number | null;
  readonly lastDeliveredAt: number | null;
  readonly consecutiveFailures: number;
  readonly failingSince: number | null;
  readonly disabledAt: number | null;
  readonly disabledReason: string | null;
  /** The one event waiting or being delivered (coalescing), and since when. */
  readonly waitingEvent: string | null;
  readonly waitingSince: number | null;
  /** Since when its receiver answers slower than the fast lane allows (delivery/lanes.ts). */
  readonly slowSince: number | null;
}

export type EventType = 'table.changed' | 'subscription.ping';

/** What goes on the notification queue for one event of one subscription. */
export interface NotificationMessage {
  readonly kind: 'notify';
  readonly tenant: string;
  readonly subscription: string;
  readonly eventId: string;
  readonly type: EventType;
  /** When the event was made (ms); its body's `timestamp`, the same on every attempt. */
  readonly at: number;
}

/** The queue message of one event of one subscription. */
export const notification = (
  tenant: string,
  subscription: string,
  eventId: string,
  type: EventType,
  at: number,
): NotificationMessage => ({ kind: 'notify', tenant, subscription, eventId, type, at });

/**
 * Port: one tenant's subscriptions in its database (SVC_SUBSCRIPTION, SVC_NOTIFIER_STATE). A store
 * is made for a tenant and sees, changes and counts that tenant's rows only, also where tenants
 * share a database (CONTRACT 4c): another tenant's subscription is as unknown as one never made.
 */
export interface SubscriptionStore {
  /**
   * Adds it unless the tenant holds `max` already (counted under the tenant's notifier row's
   * lock, so that creations at once cannot pass the limit together).
   */
  create(subscription: Subscription, max: number): Promise<'created' | 'limit'>;
  /** The owner's subscriptions, oldest first. */
  list(owner: string): Promise<Subscription[]>;
  /**
   * This store in a transaction of the tenant's database (CONTRACT 5a: a creation commits with
   * its key's record, under the notifier row's lock until then).
   */
  within(tx: Transaction): SubscriptionStore;
  /** One subscription; of its owner only when `owner` is given. */
  get(id: string, owner?: string): Promise<Subscription | undefined>;
  /** True when it was there (and its owner's). */
  remove(id: string, owner: string): Promise<boolean>;
  /** The new secret signs; the current one becomes the previous. The subscription after, if it is the owner's. */
  rotate(id: string, owner: string, secret: string, now: number): Promise<Subscription | undefined>;
  /**
   * A disabled subscription, or a pending one with nothing waiting, becomes pending with `event`
   * (its ping) waiting; any other is left as it is. The subscription after, if it is the owner's.
   * Under the tenant's notifier row's lock, as a creation: a loop ending at the same moment either
   * counts it live or has ended (no pass then) before it is read.
   */
  enable(id: string, owner: string, event: string, now: number): Promise<Subscription | undefined>;
  /** When the tenant's notifier last ran a pass: null when no pass runs, undefined without a row. */
  lastPassAt(): Promise<number | null | undefined>;
  /**
   * Takes this pass for the notifier: true unless another pass ran after `notBefore` (a second
   * loop of passes, which then ends).
   */
  claimPass(now: number, notBefore: number): Promise<boolean>;
  /** Ends the tenant's loop of passes when it has no subscription: true when it ended. */
  endPasses(): Promise<boolean>;
  /** Every subscription of the tenant that is not disabled. */
  listLive(): Promise<Subscription[]>;
  /**
   * The source's recording and last batch as the notifier saw them now, on each of its
   * subscriptions that saw less (`lastChangeAt` = now); a new recording asks for a notification
   * whatever its batch.
   */
  observe(source: SourceName, state: ChangeFeedState, now: number): Promise<void>;
  /**
   * Makes `event` the one waiting for an active subscription that has none (or one waiting since
   * before `staleBefore`, lost), notified up to `batch`: true when it did.
   */
  claim(id: string, event: string, batch: number, now: number, staleBefore: number): Promise<boolean>;
  /** The event could not be queued: nothing waits, and the next pass notifies again. */
  release(id: string, event: string): Promise<void>;
  /** An operator's nudge: `event` waits for an active subscription, whatever waited before. True when active. */
  forceClaim(id: string, event: string, now: number): Promise<boolean>;
  /** Subscriptions with an attempt since `since` that failed for good (failed, gone, refused). */
  failedSince(since: number): Promise<string[]>;
  /** Attempts recorded for a queue message (outcomes retrying and failed). */
  attemptsMade(messageId: string): Promise<number>;
  record(entry: NotificationAttempt): Promise<void>;
  /**
   * A 2xx: no longer failing; a ping makes a pending subscription active; the event no longer
   * waits. Slow since `slowAt` (kept if it was slow already) when it answered slower than the fast
   * lane allows, else no longer slow.
   */
  delivered(id: string, event: string, ping: boolean, now: number, slowAt: number | null): Promise<void>;
  /** An attempt in the fast lane got no answer in time: slow since `at` unless it was. */
  markSlow(id: string, at: number): Promise<void>;
  /**
   * An attempt failed at `now`: failing since then unless it already was, disabled (with
   * `reason`) when failing since `disableIfFailingSince` or before or when `disableNow`; the event
   * no longer waits when `finished` or disabled. True when this call disabled it.
   */
  failed(
    id: string,
    event: string,
    now: number,
    options: {
      readonly disableIfFailingSince: number;
      readonly finished: boolean;
      readonly disableNow: boolean;
      readonly reason: string;
    },
  ): Promise<boolean>;
}

export type NotificationOutcome =
  | 'delivered'
  | 'retrying'
  | 'failed'
  | 'gone'
  | 'refused'
  | 'disabled'
  | 'deleted';

/** One attempt (table SVC_NOTIFICATION_DELIVERY). */
export interface NotificationAttempt {
  readonly subscriptionId: string;
  readonly eventId: string;
  readonly eventType: EventType;
  readonly attempt: number;
  readonly attemptedAt: number;
  readonly outcome: NotificationOutcome;
  readonly httpStatus?: number;
  readonly error?: string;
  readonly durationMs?: number;
  readonly retryInSeconds?: number;
  readonly messageId: string;
}

/** Port: the queue that carries notifications and the notifier's passes. */
export interface NotificationQueue {
  notify(message: NotificationMessage): Promise<void>;
  /** Asks for a pass of the tenant's notifier after `delaySeconds`. */
  pass(tenant: string, delaySeconds: number): Promise<void>;
}

/** `sub_` and 24 hex digits. */
export const newSubscriptionId = () => `sub_${randomBytes(12).toString('hex')}`;
/** `msg_` and 32 hex digits: an event's `webhook-id`, the same on every attempt. */
export const newEventId = () => `msg_${randomBytes(16).toString('hex')}`;
/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** What {@link newSubscriptionId} and {@link newEventId} make. */
export const SUBSCRIPTION_ID = /^sub_[0-9a-f]{24}$/;
export const EVENT_ID = /^msg_[0-9a-f]{32}$/;
const MAX_URL_LENGTH = 2000;
/** C0 and C1 control characters and DEL. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
/** A creation's body: a table name and a URL, with room to spare. */
const MAX_BODY_LENGTH = 8192;

/**
 * The Standard Webhooks signature `v1,<base64 HMAC-SHA256>` over `<id>.<timestamp>.<body>`, keyed
 * as the Standard Webhooks libraries key a `whsec_` secret: the base64 after the prefix, decoded.
 */
export function signNotification(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The source as an integrator names it: `NAME` in `dbo`, else `schema.NAME`. */
export const sourceLabel = (source: SourceName) =>
  source.schema.toLowerCase() === 'dbo' ? source.name : `${source.schema}.${source.name}`;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A subscription as the API shows it (never its secret, except where {@link withSecret} adds it). */
export function subscriptionView(subscription: Subscription): Record<string, unknown> {
  return {
    id: subscription.id,
    source: sourceLabel(subscription.source),
    url: subscription.url,
    state: subscription.state,
    createdAt: iso(subscription.createdAt),
    lastChangeAt: iso(subscription.lastChangeAt),
    lastNotifiedAt: iso(subscription.lastNotifiedAt),
    lastDeliveredAt: iso(subscription.lastDeliveredAt),
    consecutiveFailures: subscription.consecutiveFailures,
    failingSince: iso(subscription.failingSince),
    disabledAt: iso(subscription.disabledAt),
    disabledReason: subscription.disabledReason,
    secretChangedAt: iso(subscription.secretChangedAt),
  };
}

const withSecret = (subscription: Subscription) => ({
  ...subscriptionView(subscription),
  secret: subscription.secret,
});

/** The body of an event: who, what, when; never row data. */
export function eventBody(
  type: EventType,
  tenant: string,
  subscription: Pick<Subscription, 'id' | 'source'>,
  at: number,
): string {
  return JSON.stringify({
    type,
    subscription: subscription.id,
    tenant,
    source: sourceLabel(subscription.source),
    timestamp: new Date(at).toISOString(),
  });
}

/** What the subscription routes need besides the Data API's read context. */
export interface SubscriptionContext {
  readonly tenant: string;
  /** Who calls (`basic:<user>`). */
  readonly owner: string;
  /** The tenant's subscriptions (a store of {@link tenant}'s). */
  readonly store: SubscriptionStore;
  readonly feed: ChangeFeedStore;
  readonly queue: NotificationQueue;
  /** The tenant's `changeFeed`. */
  readonly recorded: readonly string[];
  readonly maxSubscriptions: number;
  /** The tenant's changeNotificationDelaySeconds, in ms. */
  readonly delayMs: number;
  /** `WEBHOOK_ALLOW_PRIVATE_TARGETS`: http and private addresses allowed (local stack only). */
  readonly allowPrivateTargets: boolean;
  /** Why the service must not call the URL's host (it resolves to a forbidden address), or undefined. */
  readonly forbiddenHost: (url: URL) => Promise<string | undefined>;
  readonly now?: () => number;
}

const unknownSubscription = () =>
  notFound('subscription_not_found', 'There is no such subscription of yours in this tenant');

const invalidUrl = (why: string) =>
  badRequest('invalid_webhook_url', `"url" ${why}: give the https URL of your receiver`);

/** Checks `url` as webhook targets are checked (CONTRACT 4c, 6). */
async function checkTarget(ctx: SubscriptionContext, raw: unknown): Promise<string> {
  if (typeof raw !== 'string' || raw.trim() === '') throw invalidUrl('is missing');
  // The URL parser drops tabs and line breaks silently: the URL stored would not be the one given.
  if (CONTROL_CHARACTER.test(raw))
    throw invalidUrl('contains control characters (a line break, tab or other)');
  const text = raw.trim();
  if (text.length > MAX_URL_LENGTH) throw invalidUrl(`is longer than ${MAX_URL_LENGTH} characters`);
  const checked = checkWebhookUrl(text, ctx.allowPrivateTargets);
  // The check's words name the subject's column; here the field is the subject: "url" must be …
  if (!checked.ok)
    throw invalidUrl(
      checked.reason.startsWith('WEBHOOK_URL ')
        ? checked.reason.slice('WEBHOOK_URL '.length)
        : `is refused: ${checked.reason}`,
    );
  if (checked.url.protocol !== 'https:' && !ctx.allowPrivateTargets) throw invalidUrl('is not https');
  if (checked.url.username || checked.url.password) throw invalidUrl('carries a user name or password');
  if (!ctx.allowPrivateTargets) {
    const reason = await ctx.forbiddenHost(checked.url);
    if (reason) throw invalidUrl(`names a host the service must not call: ${reason}`);
  }
  return checked.url.toString();
}

/** Reads the body of a creation: `{"source": "…", "url": "…"}`. */
function creationBody(body: string): { source: string; url: unknown } {
  if (body.length > MAX_BODY_LENGTH) {
    throw badRequest(
      'invalid_subscription',
      `The body is over ${MAX_BODY_LENGTH} characters: send {"source":"<table>","url":"https://…"}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw badRequest(
      'invalid_subscription',
      'The body is not JSON: send {"source":"<table>","url":"https://…"}',
    );
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw badRequest(
      'invalid_subscription',
      'The body must be a JSON object {"source":"<table>","url":"https://…"}',
    );
  }
  const record = value as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => key !== 'source' && key !== 'url');
  if (unknown.length > 0) {
    throw badRequest(
      'invalid_subscription',
      `Unknown field ${JSON.stringify(unknown[0]!.slice(0, 40))}: a subscription has "source" and "url"`,
    );
  }
  if (typeof record.source !== 'string' || record.source.trim() === '') {
    throw badRequest('invalid_subscription', '"source" must name a table whose changes the tenant records');
  }
  return { source: record.source.trim(), url: record.url };
}

/**
 * Starts the tenant's loop of notifier passes unless one runs (a pass in the last three delays):
 * every subscription's creation and enabling makes sure one does.
 */
async function armNotifier(ctx: SubscriptionContext, now: number): Promise<void> {
  const last = await ctx.store.lastPassAt();
  if (typeof last === 'number' && last > now - 3 * ctx.delayMs) return;
  await ctx.queue.pass(ctx.tenant, 0);
}

/** A creation past every check that refuses it before anything is made (400, 404): its row to be. */
export interface CheckedCreation {
  readonly subscription: Subscription;
  readonly now: number;
}

/**
 * The checks of a creation that refuse it before anything is made, in order: the body (400), the
 * URL (400), the source (404 unknown or not allowed, 400 not recorded). The row it would make.
 */
export async function checkCreation(
  ctx: SubscriptionContext,
  data: DataApiContext,
  body: string,
): Promise<CheckedCreation> {
  const now = (ctx.now ?? Date.now)();
  const request = creationBody(body);
  const url = await checkTarget(ctx, request.url);
  // Unknown or not allowed: 404 as for a read; then recorded (registry and database).
  const { source, state } = await readCurrent(data, request.source, async (visible) => {
    const notRecorded = (where: string) =>
      badRequest(
        'changes_not_recorded',
        `The changes of ${request.source} are not recorded ${where}: only a table in the tenant's "changeFeed" can be subscribed to`,
      );
    if (
      !isRecorded(ctx.recorded, visible) ||
      visible.kind !== 'table' ||
      !continuesByKey(visible) ||
      visible.rowScope !== undefined
    ) {
      throw notRecorded('for this tenant');
    }
    const feedState = await ctx.feed.state(visible);
    if (!feedState) throw notRecorded("in the tenant's database");
    return { source: { schema: visible.schema, name: visible.name }, state: feedState };
  });
  const subscription: Subscription = {
    id: newSubscriptionId(),
    owner: ctx.owner,
    source,
    url,
    secret: newSecret(),
    previousSecret: null,
    secretChangedAt: null,
    state: 'pending',
    createdAt: now,
    seenFeed: state.feedId,
    seenBatch: state.lastBatch,
    notifiedBatch: state.lastBatch,
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
  };
  return { subscription, now };
}

const limitReached = (ctx: SubscriptionContext) =>
  new ServiceError(
    409,
    'subscription_limit',
    `The tenant holds its ${ctx.maxSubscriptions} subscriptions (maxSubscriptions): delete one it no longer needs`,
  );

/** Adds the row in `store` (the service's transaction under a key): 409 beyond the tenant's limit. */
async function addSubscription(
  ctx: SubscriptionContext,
  store: SubscriptionStore,
  subscription: Subscription,
) {
  if ((await store.create(subscription, ctx.maxSubscriptions)) === 'limit') throw limitReached(ctx);
}

/**
 * A committed subscription's ping queued and the tenant's notifier running. The ping goes after
 * the commit, so that its delivery finds the row. When it cannot be queued the subscription is
 * removed again (`undo` forgets what else was recorded of it): not made, rather than made and
 * never pinged.
 */
async function startSubscription(
  ctx: SubscriptionContext,
  { subscription, now }: CheckedCreation,
  undo: () => Promise<void> = async () => undefined,
): Promise<void> {
  const ping = subscription.waitingEvent!;
  try {
    await ctx.queue.notify(notification(ctx.tenant, subscription.id, ping, 'subscription.ping', now));
  } catch (error) {
    await ctx.store.remove(subscription.id, ctx.owner);
    await undo();
    throw error;
  }
  await armNotifier(ctx, now);
}

/** POST …/Subscriptions: 201 with the subscription and its secret (shown only here and on rotation). */
export async function createSubscription(
  ctx: SubscriptionContext,
  data: DataApiContext,
  body: string,
): Promise<Record<string, unknown>> {
  const checked = await checkCreation(ctx, data, body);
  await addSubscription(ctx, ctx.store, checked.subscription);
  await startSubscription(ctx, checked);
  return withSecret(checked.subscription);
}

/** The fingerprint of a creation (CONTRACT 5a): its JSON body as sent. */
export const creationFingerprint = (body: Uint8Array) => requestFingerprint('JsonAPI/Subscriptions', [body]);

/** A creation sent with an `Idempotency-Key` (CONTRACT 5a). */
export interface KeyedCreation {
  /** The keys' records of the tenant's database, where the subscription commits. */
  readonly keys: IdempotencyStore;
  readonly key: CallKey;
  /** The 201 as it will leave (its body holds the secret), recorded with the row. */
  answerOf(created: Record<string, unknown>): RecordedAnswer;
}

/**
 * POST …/Subscriptions under a key (CONTRACT 5a): the subscription and its 201 (secret included,
 * so that a retry learns the same secret) commit together; a retry gets that answer and makes
 * nothing. A refusal for the tenant's limit (409) makes nothing and records nothing: once a
 * subscription was deleted, the same retry creates. A ping that cannot be queued removes the
 * subscription and forgets its record: the retry runs again.
 */
export async function createSubscriptionUnderKey(
  ctx: SubscriptionContext,
  checked: CheckedCreation,
  keyed: KeyedCreation,
): Promise<KeyedOutcome<RecordedAnswer>> {
  const { key } = keyed;
  return onceUnderKey(keyed.keys, key, async (hold) => {
    const answer = await hold!.commit(async (tx: Transaction) => {
      await addSubscription(ctx, ctx.store.within(tx), checked.subscription);
      const recorded = keyed.answerOf(withSecret(checked.subscription));
      return { value: recorded, record: { fingerprint: key.fingerprint, answer: recorded } };
    });
    await startSubscription(ctx, checked, () => keyed.keys.forget(key.digest));
    return answer;
  });
}

/** GET …/Subscriptions: the caller's own. */
export async function listSubscriptions(ctx: SubscriptionContext): Promise<Record<string, unknown>> {
  return { subscriptions: (await ctx.store.list(ctx.owner)).map(subscriptionView) };
}

/** A path's id: anything but a subscription id is none of the caller's (404). */
function subscriptionId(raw: string | undefined): string {
  if (raw === undefined || !SUBSCRIPTION_ID.test(raw)) throw unknownSubscription();
  return raw;
}

/** GET …/Subscriptions/{id}: its status. */
export async function getSubscription(
  ctx: SubscriptionContext,
  rawId: string | undefined,
): Promise<Record<string, unknown>> {
  const found = await ctx.store.get(subscriptionId(rawId), ctx.owner);
  if (!found) throw unknownSubscription();
  return subscriptionView(found);
}

/** Deleting …/Subscriptions/{id}: gone at once; an event on its way finds it gone and is not sent. */
export async function deleteSubscription(ctx: SubscriptionContext, rawId: string | undefined): Promise<void> {
  if (!(await ctx.store.remove(subscriptionId(rawId), ctx.owner))) throw unknownSubscription();
}

/** POST …/Subscriptions/{id}/rotate: a new secret (shown once); the previous one signs too for the overlap. */
export async function rotateSubscriptionSecret(
  ctx: SubscriptionContext,
  rawId: string | undefined,
): Promise<Record<string, unknown>> {
  const now = (ctx.now ?? Date.now)();
  const rotated = await ctx.store.rotate(subscriptionId(rawId), ctx.owner, newSecret(), now);
  if (!rotated) throw unknownSubscription();
  return withSecret(rotated);
}

/** POST …/Subscriptions/{id}/enable: a disabled subscription is pending again, and pinged. */
export async function enableSubscription(
  ctx: SubscriptionContext,
  rawId: string | undefined,
): Promise<Record<string, unknown>> {
  const now = (ctx.now ?? Date.now)();
  const id = subscriptionId(rawId);
  const before = await ctx.store.get(id, ctx.owner);
  if (!before) throw unknownSubscription();
  // Active, or pending with its ping on the way: as it is. A pending one whose ping could not be
  // queued is pinged now.
  if (before.state === 'active' || (before.state === 'pending' && before.waitingEvent !== null)) {
    return subscriptionView(before);
  }
  const ping = newEventId();
  const after = await ctx.store.enable(id, ctx.owner, ping, now);
  if (!after) throw unknownSubscription();
  if (after.waitingEvent === ping) {
    try {
      await ctx.queue.notify(notification(ctx.tenant, id, ping, 'subscription.ping', now));
    } catch (error) {
      await ctx.store.release(id, ping);
      throw error;
    }
  }
  await armNotifier(ctx, now);
  return subscriptionView(after);
}
