/**
 * Change notifications' store (CONTRACT 4c) over a database connection, shared by the SQL
 * adapters: SVC_SUBSCRIPTION, SVC_NOTIFICATION_DELIVERY, SVC_NOTIFIER_STATE
 * (infra/sql/*\/…change-notifications.sql). No SQL text of either dialect lives here; each
 * adapter passes its statements. A store is one tenant's: every statement names the tenant, so that
 * tenants sharing a database never see, change or count each other's subscriptions and attempts.
 */
import type { Database, Row } from '../../core/database.js';
import type { Subscription, SubscriptionStore } from '../../core/notifications/subscriptions.js';
import { recordAttempt } from './attempt-log.js';
import { sqlTimeMs, sqlTimestamp } from './times.js';

const MAX_ERROR_LENGTH = 400;

/**
 * A dialect's statements of the store. Date-time parameters are text `YYYY-MM-DD hh:mm:ss.mmm`
 * (UTC), typed as their columns in the statement; date-times read come out to the millisecond.
 * Statements marked "changed" answer one row `changed`: how many rows they changed. Every
 * statement on SVC_SUBSCRIPTION or SVC_NOTIFICATION_DELIVERY takes the tenant as its last
 * parameter (after those listed) and touches that tenant's rows only.
 */
export interface SubscriptionStatements {
  /** In a transaction: make the tenant's notifier row (parameter 1) if missing, and lock it. */
  readonly lockNotifier: readonly string[];
  /** One row `n`: every subscription of the tenant. */
  readonly count: string;
  /** Parameters: id, owner, schema, name, URL, secret, created at, seen feed, seen batch, ping event. Pending. */
  readonly insert: string;
  /** Parameter: tenant. Row `lastPassAt`, or none. */
  readonly lastPassAt: string;
  /** The subscription columns (see toSubscription): of an owner (1), by id (1), by id (1) and owner (2), not disabled. */
  readonly list: string;
  readonly get: string;
  readonly getOwned: string;
  readonly listLive: string;
  /** Changed. Parameters: id, owner. */
  readonly remove: string;
  /** Parameters: id, owner, new secret, now. */
  readonly rotate: string;
  /** Parameters: id, owner, ping event, now (see SubscriptionStore.enable). */
  readonly enable: string;
  /** Changed. Parameters: tenant, now, not before. */
  readonly claimPass: string;
  /** One row `n`: subscriptions not disabled. */
  readonly liveCount: string;
  /** Parameter: tenant. */
  readonly endPasses: string;
  /** Parameters: schema, name, feed id, batch, now. */
  readonly observe: string;
  /** Changed. Parameters: id, event, batch, now, stale before. */
  readonly claim: string;
  /** Parameters: id, event. */
  readonly release: string;
  /** Changed. Parameters: id, event, now. */
  readonly forceClaim: string;
  /** Parameter: since. Rows `id`. */
  readonly failedSince: string;
  /** Parameter: message id. One row `n`. */
  readonly attemptsMade: string;
  /** Parameters: subscription, event, type, then an attempt's (sql-common/attempt-log.ts). */
  readonly record: string;
  /** Parameters: id, event, ping (1 or 0), now, slow at (null: answered in time; see SubscriptionStore.delivered). */
  readonly delivered: string;
  /** Parameters: id, at. SLOW_SINCE becomes `at` unless set. */
  readonly markSlow: string;
  /** Changed. Parameters: id, event, now, cut-off, finished (1/0), disable now (1/0), reason. */
  readonly failed: string;
  /** Parameter: id. Row `disabledAt`. */
  readonly disabledAt: string;
}

type Statements = SubscriptionStatements;

const text = (value: unknown) => (value === null || value === undefined ? null : String(value));

function toSubscription(row: Row): Subscription {
  return {
    id: String(row.id),
    owner: String(row.owner),
    source: { schema: String(row.sourceSchema), name: String(row.sourceName) },
    url: String(row.url),
    secret: String(row.secret),
    previousSecret: text(row.previousSecret),
    secretChangedAt: sqlTimeMs(row.secretChangedAt),
    state: String(row.state) as Subscription['state'],
    createdAt: sqlTimeMs(row.createdAt) ?? 0,
    seenFeed: text(row.seenFeed),
    seenBatch: Number(row.seenBatch),
    notifiedBatch: Number(row.notifiedBatch),
    lastChangeAt: sqlTimeMs(row.lastChangeAt),
    lastNotifiedAt: sqlTimeMs(row.lastNotifiedAt),
    lastDeliveredAt: sqlTimeMs(row.lastDeliveredAt),
    consecutiveFailures: Number(row.consecutiveFailures),
    failingSince: sqlTimeMs(row.failingSince),
    disabledAt: sqlTimeMs(row.disabledAt),
    disabledReason: text(row.disabledReason),
    waitingEvent: text(row.waitingEvent),
    waitingSince: sqlTimeMs(row.waitingSince),
    slowSince: sqlTimeMs(row.slowSince),
  };
}

const changed = (rows: Row[]) => Number(rows[0]?.changed ?? 0) > 0;

/** The store on a tenant database, in the statements of its dialect. */
export function createSqlSubscriptionStore(
  db: Pick<Database, 'query'> & Partial<Pick<Database, 'transaction'>>,
  sql: Statements,
  tenant: string,
  /** Bound to the service's transaction (CONTRACT 5a: a creation commits with its key's record). */
  inTransaction = false,
): SubscriptionStore {
  const get = async (id: string, owner?: string) => {
    const rows = await (owner === undefined
      ? db.query(sql.get, [id, tenant])
      : db.query(sql.getOwned, [id, owner, tenant]));
    return rows[0] ? toSubscription(rows[0]) : undefined;
  };
  /**
   * Runs `fn` in a transaction holding the tenant's notifier row: what makes a subscription live
   * (a creation, an enable) and the loop's ending take turns on it.
   */
  const underNotifierLock = async <T>(fn: (tx: Pick<Database, 'query'>) => Promise<T>) => {
    const locked = async (tx: Pick<Database, 'query'>) => {
      for (const statement of sql.lockNotifier) await tx.query(statement, [tenant]);
      return fn(tx);
    };
    // In the service's transaction the lock is held until it commits, with the key's record.
    if (inTransaction) return locked(db);
    if (!db.transaction) throw new Error('This subscription store has no transaction of its own');
    return db.transaction(locked);
  };
  /** A statement's parameters, the tenant's id last. */
  const mine = (...params: unknown[]) => [...params, tenant];
  return {
    async create(s, max) {
      return underNotifierLock(async (tx) => {
        const [count] = await tx.query(sql.count, [tenant]);
        if (Number(count?.n ?? 0) >= max) return 'limit' as const;
        await tx.query(
          sql.insert,
          mine(
            s.id,
            s.owner,
            s.source.schema,
            s.source.name,
            s.url,
            s.secret,
            sqlTimestamp(s.createdAt),
            s.seenFeed,
            s.seenBatch,
            s.waitingEvent,
          ),
        );
        return 'created' as const;
      });
    },
    async list(owner) {
      return (await db.query(sql.list, mine(owner))).map(toSubscription);
    },
    get,
    async remove(id, owner) {
      return changed(await db.query(sql.remove, mine(id, owner)));
    },
    async rotate(id, owner, secret, now) {
      await db.query(sql.rotate, mine(id, owner, secret, sqlTimestamp(now)));
      return get(id, owner);
    },
    async enable(id, owner, event, now) {
      // Under the notifier row's lock as a creation: without it, a loop ending at the same moment
      // could count the subscription still disabled while the route reads the loop's last pass as
      // recent, and nothing would pass for it until the hourly backstop (the T-SQL engine's reads,
      // like SQL Server's with READ_COMMITTED_SNAPSHOT, do not wait for the ending's lock).
      await underNotifierLock((tx) => tx.query(sql.enable, mine(id, owner, event, sqlTimestamp(now))));
      return get(id, owner);
    },
    async lastPassAt() {
      const rows = await db.query(sql.lastPassAt, [tenant]);
      return rows[0] ? sqlTimeMs(rows[0].lastPassAt) : undefined;
    },
    async claimPass(now, notBefore) {
      return changed(await db.query(sql.claimPass, [tenant, sqlTimestamp(now), sqlTimestamp(notBefore)]));
    },
    async endPasses() {
      // Under the notifier row's lock, which a creation or an enable holds until it commits: the
      // count then sees every subscription made live before, and one made live after finds the
      // loop ended and starts one.
      return underNotifierLock(async (tx) => {
        const [count] = await tx.query(sql.liveCount, [tenant]);
        if (Number(count?.n ?? 0) > 0) return false;
        await tx.query(sql.endPasses, [tenant]);
        return true;
      });
    },
    async listLive() {
      return (await db.query(sql.listLive, [tenant])).map(toSubscription);
    },
    async observe(source, state, now) {
      await db.query(
        sql.observe,
        mine(source.schema, source.name, state.feedId.toUpperCase(), state.lastBatch, sqlTimestamp(now)),
      );
    },
    async claim(id, event, batch, now, staleBefore) {
      return changed(
        await db.query(sql.claim, mine(id, event, batch, sqlTimestamp(now), sqlTimestamp(staleBefore))),
      );
    },
    async release(id, event) {
      await db.query(sql.release, mine(id, event));
    },
    async forceClaim(id, event, now) {
      return changed(await db.query(sql.forceClaim, mine(id, event, sqlTimestamp(now))));
    },
    async failedSince(since) {
      return (await db.query(sql.failedSince, mine(sqlTimestamp(since)))).map((row) => String(row.id));
    },
    async attemptsMade(messageId) {
      const [row] = await db.query(sql.attemptsMade, mine(messageId));
      return Number(row?.n ?? 0);
    },
    record: (entry) =>
      recordAttempt(db, sql.record, [entry.subscriptionId, entry.eventId, entry.eventType], entry, tenant),
    async delivered(id, event, ping, now, slowAt) {
      await db.query(
        sql.delivered,
        mine(id, event, ping ? 1 : 0, sqlTimestamp(now), slowAt === null ? null : sqlTimestamp(slowAt)),
      );
    },
    async markSlow(id, at) {
      await db.query(sql.markSlow, mine(id, sqlTimestamp(at)));
    },
    async failed(id, event, now, options) {
      const at = sqlTimestamp(now);
      const updated = changed(
        await db.query(
          sql.failed,
          mine(
            id,
            event,
            at,
            sqlTimestamp(options.disableIfFailingSince),
            options.finished ? 1 : 0,
            options.disableNow ? 1 : 0,
            options.reason.slice(0, MAX_ERROR_LENGTH),
          ),
        ),
      );
      if (!updated) return false;
      const [row] = await db.query(sql.disabledAt, mine(id));
      return sqlTimeMs(row?.disabledAt) === sqlTimeMs(at);
    },
    within: (tx) => createSqlSubscriptionStore(tx as Pick<Database, 'query'>, sql, tenant, true),
  };
}
