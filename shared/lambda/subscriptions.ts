import { forbiddenHostReason } from '../adapters/http/target-addresses.js';
import { openDatabase } from '../config/databases.js';
import type { TenantConfig } from '../config/tenants.js';
import { getWebhookSettings } from '../config/webhook.js';
import { callerIdentity } from '../core/auth/caller.js';
import { cancelledBy, type Database } from '../core/database.js';
import { callKey, IDEMPOTENCY_KEY_HEADER, type RecordedAnswer } from '../core/idempotency.js';
import {
  checkCreation,
  createSubscription,
  createSubscriptionUnderKey,
  creationFingerprint,
  deleteSubscription,
  enableSubscription,
  getSubscription,
  listSubscriptions,
  rotateSubscriptionSecret,
  type SubscriptionContext,
} from '../core/notifications/subscriptions.js';
import type { TraceContext } from '../core/trace-context.js';
import { changeFeedStore } from './change-feed.js';
import { dataApiContext, dataApiHandler } from './data-api.js';
import { recordedResponse, tenantIdempotencyStore } from './idempotency.js';
import { notificationQueue, subscriptionStore } from './notifications.js';
import type { HttpResponse } from './request-context.js';

/** Subscription routes' context for the caller; the notifier's first pass continues the request's `trace`. */
export function subscriptionContext(
  tenant: TenantConfig,
  owner: string,
  db: Database,
  trace?: TraceContext,
): SubscriptionContext {
  return {
    tenant: tenant.id,
    owner,
    store: subscriptionStore(db, tenant.id),
    feed: changeFeedStore(db),
    queue: notificationQueue(trace),
    recorded: tenant.changeFeed,
    maxSubscriptions: tenant.maxSubscriptions,
    delayMs: tenant.changeNotificationDelaySeconds * 1000,
    allowPrivateTargets: getWebhookSettings().allowPrivateTargets,
    forbiddenHost: forbiddenHostReason,
  };
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const NO_STORE = 'private, no-store';

const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { 'content-type': JSON_CONTENT_TYPE, 'cache-control': NO_STORE },
  body: JSON.stringify(body),
});

/** A creation's 201 as it leaves (and, under a key, as it is recorded): the subscription with its secret. */
function createdAnswer(path: string, created: Record<string, unknown>): RecordedAnswer {
  return {
    status: 201,
    contentType: JSON_CONTENT_TYPE,
    body: Buffer.from(JSON.stringify(created), 'utf8'),
    headers: { location: `${path.replace(/\/$/, '')}/${String(created.id)}`, 'cache-control': NO_STORE },
  };
}

/**
 * The subscription routes (CONTRACT 4c), one function: `POST|GET …/Subscriptions`,
 * `GET|DELETE …/Subscriptions/{subscriptionId}`, `POST …/Subscriptions/{subscriptionId}/rotate`
 * and `…/enable`. The caller's Data API credentials; a subscription belongs to who made it.
 */
export function subscriptionsHandler() {
  return dataApiHandler(async function subscriptionsRoute(ctx) {
    const { tenant, request } = ctx;
    const db = cancelledBy(await openDatabase(tenant.database, ctx.trace), ctx.signal);
    const subscriptions = subscriptionContext(tenant, callerIdentity(ctx.caller), db, ctx.trace);
    const id = request.params.subscriptionId;
    const action = id === undefined ? undefined : /\/(rotate|enable)$/.exec(request.path)?.[1];
    if (id === undefined && request.method === 'POST') {
      // The key's form first (400, recording nothing), with the caller's other refusals.
      const key = callKey(
        request.headers[IDEMPOTENCY_KEY_HEADER],
        { tenant: tenant.id, caller: callerIdentity(ctx.caller) },
        () => creationFingerprint(request.body),
        tenant.idempotencyRetentionHours,
      );
      // The source needs changes.read too (CONTRACT 4d): a token that may not pull may not subscribe.
      const data = await dataApiContext(ctx, undefined, 'changes.read');
      const body = request.body.toString('utf8');
      if (!key) {
        return recordedResponse(
          createdAnswer(request.path, await createSubscription(subscriptions, data, body)),
          false,
        );
      }
      const checked = await checkCreation(subscriptions, data, body);
      const outcome = await createSubscriptionUnderKey(subscriptions, checked, {
        keys: tenantIdempotencyStore(db, tenant),
        key,
        answerOf: (created) => createdAnswer(request.path, created),
      });
      return outcome.ran ? recordedResponse(outcome.value, false) : recordedResponse(outcome.replay, true);
    }
    if (id === undefined) return json(200, await listSubscriptions(subscriptions));
    if (action === 'rotate') return json(200, await rotateSubscriptionSecret(subscriptions, id));
    if (action === 'enable') return json(200, await enableSubscription(subscriptions, id));
    if (request.method === 'DELETE') {
      await deleteSubscription(subscriptions, id);
      return { status: 204, headers: { 'cache-control': 'private, no-store' }, body: '' };
    }
    return json(200, await getSubscription(subscriptions, id));
  }, 'subscriptions.write');
}
