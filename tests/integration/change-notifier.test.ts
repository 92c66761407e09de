/**
 * The notifier's loop of passes on a real database (CONTRACT 4c): a second loop collapses into
 * one, a tenant without subscriptions ends its loop and its next subscription starts one, the
 * hourly backstop starts a stalled loop again, and creations at once never pass maxSubscriptions.
 */
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../shared/core/database.js';
import {
  notifierPass,
  type PassContext,
  restartStalledNotifier,
} from '../../shared/core/notifications/notifier.js';
import type { NotificationQueue, SubscriptionStore } from '../../shared/core/notifications/subscriptions.js';
import { subscriptionStore } from '../../shared/lambda/notifications.js';
import { changeFeedContexts } from '../support/change-feed-model.js';
import { demoDatabase } from '../support/demo.js';
import { notificationLaneCases } from '../support/notification-lanes.js';
import { subscriptionRow } from '../support/subscriptions.js';

const DELAY = 10_000;

const subscription = (overrides: Parameters<typeof subscriptionRow>[0] = {}) =>
  subscriptionRow({ owner: 'basic:loop', ...overrides });

describe('the change notifier on the embedded database', () => {
  let pg: PGlite;
  let db: Database;
  const passes: number[] = [];
  const queue: NotificationQueue = {
    notify: async () => undefined,
    pass: async (_tenant, delay) => void passes.push(delay),
  };

  beforeAll(async () => {
    ({ pg, db } = await demoDatabase());
  });
  afterAll(async () => {
    await pg.close();
  });

  /** Passes of `tenant`'s notifier over SUBJECT, each at the time it is given. */
  const passesOf =
    (tenant: string, store: SubscriptionStore, more: Partial<PassContext> = {}) =>
    (at: number) =>
      notifierPass({
        tenant,
        store,
        feed: changeFeedContexts(db).feed.store,
        queue,
        recorded: ['SUBJECT'],
        delayMs: DELAY,
        staleWaitingMs: 3_600_000,
        now: () => at,
        ...more,
      });

  it('collapses a second loop: a pass within half a delay of another ends its loop', async () => {
    const store = subscriptionStore(db, 'loops');
    const made = subscription();
    expect(await store.create(made, 100)).toBe('created');
    const pass = passesOf('loops', store);
    const t = Date.now();
    expect(await pass(t)).toMatchObject({ ran: true, again: true, checked: 1 });
    // Another loop's pass 3 s later ends; this loop's next, a delay later, runs.
    expect(await pass(t + 3000)).toMatchObject({ ran: false, again: false });
    expect(await pass(t + DELAY)).toMatchObject({ ran: true, again: true });
    // Without subscriptions the loop ends, and the heartbeat says no loop runs.
    expect(await store.remove(made.id, 'basic:loop')).toBe(true);
    expect(await pass(t + 2 * DELAY)).toMatchObject({ ran: true, again: false });
    expect(await store.lastPassAt()).toBeNull();
  });

  it("a pass links the service's writes it notifies of, each once; a malformed writer is not a link", async () => {
    const store = subscriptionStore(db, 'links');
    const { feed } = changeFeedContexts(db);
    const writers = [1, 2, 3].map(
      (n) => `00-${'0af7651916cd43dd8448eb211c8031'}${n}${n}-b7ad6b716920333${n}-01`,
    );
    const id = 4_100_000 + Math.floor(Math.random() * 10_000) * 10;
    const write = (n: number, writer: string) =>
      db.transaction(
        (tx) => tx.query('INSERT INTO dbo."SUBJECT" ("ID", "NAZEV") VALUES ($1, $2)', [id + n, `Link ${n}`]),
        { writer },
      );
    // An active subscription (its ping delivered) that has seen the feed as it is.
    const state = (await feed.store.stamp({
      schema: 'dbo',
      name: 'SUBJECT',
      kind: 'table',
      columns: [],
      primaryKey: [],
    }))!;
    const made = subscription({
      seenFeed: state.feedId,
      seenBatch: state.lastBatch,
      notifiedBatch: state.lastBatch,
    });
    expect(await store.create(made, 100)).toBe('created');
    await store.delivered(made.id, made.waitingEvent!, true, Date.now(), null);
    const links: unknown[] = [];
    const t = Date.now();
    const pass = passesOf('links', store, { linkWrites: (more) => links.push(...more) });
    // The subscription's first pass: the feed as it is, nothing to notify of.
    expect(await pass(t)).toMatchObject({ ran: true, notified: 0 });
    await write(0, writers[0]!);
    await write(1, writers[1]!);
    await write(2, writers[1]!);
    await write(3, writers[2]!);
    await write(4, 'not a traceparent');
    const outcome = await pass(t + DELAY);
    expect(outcome).toMatchObject({ ran: true, notified: 1 });
    expect(links).toHaveLength(3);
    expect(links).toEqual(
      expect.arrayContaining(
        writers.map((writer) => {
          const [, traceId, spanId] = writer.split('-');
          return { traceId, spanId, sampled: true };
        }),
      ),
    );
  });

  it('the backstop starts a stalled loop of a tenant with live subscriptions, and only that', async () => {
    const store = subscriptionStore(db, 'stalled');
    const made = subscription();
    await store.create(made, 100);
    const backstop = (at: number, tenant = 'stalled') =>
      restartStalledNotifier({
        tenant,
        store: subscriptionStore(db, tenant),
        queue,
        delayMs: DELAY,
        now: () => at,
      });
    const t = Date.now();
    passes.length = 0;
    // Created but never passed (its first pass lost): restarted.
    expect(await backstop(t)).toBe(true);
    expect(passes).toEqual([0]);
    // A pass a moment ago: the loop runs.
    await store.claimPass(t, t - DELAY);
    expect(await backstop(t + DELAY)).toBe(false);
    // Three delays without a pass: restarted.
    expect(await backstop(t + 3 * DELAY + 1)).toBe(true);
    // A tenant that never had a subscription costs one read and starts nothing.
    expect(await backstop(t, 'never')).toBe(false);
    await store.remove(made.id, 'basic:loop');
  });

  it('never passes maxSubscriptions, whatever creations run at once', async () => {
    const store = subscriptionStore(db, 'limit');
    const held = (await store.list('basic:limit')).length;
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, () => store.create(subscription({ owner: 'basic:limit' }), held + 5)),
    );
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(5);
    expect(await store.list('basic:limit')).toHaveLength(held + 5);
  });

  notificationLaneCases(() => subscriptionStore(db, 'lanes'), 'lanes');
});
