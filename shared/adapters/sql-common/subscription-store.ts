/**
 * Change notifications' store (CONTRACT 4c) over a database connection, shared by the SQL
 * adapters: SVC_SUBSCRIPTION, SVC_NOTIFICATION_DELIVERY, SVC_NOTIFIER_STATE
 * (infra/sql/*\/…change-notifications.sql). The statements are built here from a dialect's few
 * differences (quoting, parameters, typed times, how a statement says how many rows it changed).
 */
import type { Database, Row } from '../../core/database.js';
import type { Subscription, SubscriptionStore } from '../../core/notifications/subscriptions.js';
import { sqlTimeMs, sqlTimestamp } from './webhook-delivery-log.js';

/** What differs between the dialects in these statements. */
export interface SubscriptionDialect {
  /** A quoted identifier. */
  readonly q: (name: string) => string;
  /** Parameter `index` (1-based). */
  readonly p: (index: number) => string;
  /** Parameter `index` typed as the date-time columns (compared as text they would not order). */
  readonly time: (index: number) => string;
  /** A date-time column as read, to the millisecond (`sqlTimeMs` reads it). */
  readonly readTime: (column: string) => string;
  /** An UPDATE or DELETE made to answer one row `changed`: how many rows it changed. */
  readonly counted: (statement: string) => string;
  /**
   * Statements in a transaction that make the tenant's notifier row (parameter 1) if missing and
   * lock it, so that what follows in the transaction is serialised per tenant.
   */
  readonly lockNotifier: readonly string[];
}

const MAX_ERROR_LENGTH = 400;

/** The statements of the store in one dialect. */
export function subscriptionStatements(d: SubscriptionDialect) {
  const { q, p, time } = d;
  const T = `${q('dbo')}.${q('SVC_SUBSCRIPTION')}`;
  const D = `${q('dbo')}.${q('SVC_NOTIFICATION_DELIVERY')}`;
  const N = `${q('dbo')}.${q('SVC_NOTIFIER_STATE')}`;
  const c = (name: string, alias: string) => `${q(name)} AS ${q(alias)}`;
  const t = (name: string, alias: string) => `${d.readTime(q(name))} AS ${q(alias)}`;
  const columns = [
    c('ID', 'id'),
    c('OWNER', 'owner'),
    c('SOURCE_SCHEMA', 'sourceSchema'),
    c('SOURCE_NAME', 'sourceName'),
    c('URL', 'url'),
    c('SECRET', 'secret'),
    c('PREVIOUS_SECRET', 'previousSecret'),
    t('SECRET_CHANGED_AT', 'secretChangedAt'),
    c('STATE', 'state'),
    t('CREATED_AT', 'createdAt'),
    c('SEEN_FEED', 'seenFeed'),
    c('SEEN_BATCH', 'seenBatch'),
    c('NOTIFIED_BATCH', 'notifiedBatch'),
    t('LAST_CHANGE_AT', 'lastChangeAt'),
    t('LAST_NOTIFIED_AT', 'lastNotifiedAt'),
    t('LAST_DELIVERED_AT', 'lastDeliveredAt'),
    c('CONSECUTIVE_FAILURES', 'consecutiveFailures'),
    t('FAILING_SINCE', 'failingSince'),
    t('DISABLED_AT', 'disabledAt'),
    c('DISABLED_REASON', 'disabledReason'),
    c('WAITING_EVENT', 'waitingEvent'),
    t('WAITING_SINCE', 'waitingSince'),
  ].join(', ');
  const select = `SELECT ${columns} FROM ${T}`;
  // The failure disables when told to (410) or when failing since the cut-off or before.
  const disables = `(${p(6)} = 1 OR COALESCE(${q('FAILING_SINCE')}, ${time(3)}) <= ${time(4)})`;
  return {
    lockNotifier: d.lockNotifier,
    count: `SELECT COUNT(*) AS ${q('n')} FROM ${T}`,
    insert: `INSERT INTO ${T} (${q('ID')}, ${q('OWNER')}, ${q('SOURCE_SCHEMA')}, ${q('SOURCE_NAME')}, ${q('URL')},
      ${q('SECRET')}, ${q('STATE')}, ${q('CREATED_AT')}, ${q('SEEN_FEED')}, ${q('SEEN_BATCH')}, ${q('NOTIFIED_BATCH')},
      ${q('CONSECUTIVE_FAILURES')}, ${q('WAITING_EVENT')}, ${q('WAITING_SINCE')})
      VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, 'pending', ${time(7)}, ${p(8)}, ${p(9)}, ${p(9)}, 0,
      ${p(10)}, ${time(7)})`,
    lastPassAt: `SELECT ${t('LAST_PASS_AT', 'lastPassAt')} FROM ${N} WHERE ${q('TENANT')} = ${p(1)}`,
    list: `${select} WHERE ${q('OWNER')} = ${p(1)} ORDER BY ${q('CREATED_AT')}, ${q('ID')}`,
    get: `${select} WHERE ${q('ID')} = ${p(1)}`,
    getOwned: `${select} WHERE ${q('ID')} = ${p(1)} AND ${q('OWNER')} = ${p(2)}`,
    listLive: `${select} WHERE ${q('STATE')} <> 'disabled'`,
    remove: d.counted(`DELETE FROM ${T} WHERE ${q('ID')} = ${p(1)} AND ${q('OWNER')} = ${p(2)}`),
    rotate: `UPDATE ${T} SET ${q('PREVIOUS_SECRET')} = ${q('SECRET')}, ${q('SECRET')} = ${p(3)},
      ${q('SECRET_CHANGED_AT')} = ${time(4)} WHERE ${q('ID')} = ${p(1)} AND ${q('OWNER')} = ${p(2)}`,
    enable: `UPDATE ${T} SET ${q('STATE')} = 'pending', ${q('DISABLED_AT')} = NULL, ${q('DISABLED_REASON')} = NULL,
      ${q('FAILING_SINCE')} = NULL, ${q('CONSECUTIVE_FAILURES')} = 0, ${q('WAITING_EVENT')} = ${p(3)},
      ${q('WAITING_SINCE')} = ${time(4)}
      WHERE ${q('ID')} = ${p(1)} AND ${q('OWNER')} = ${p(2)}
        AND (${q('STATE')} = 'disabled' OR (${q('STATE')} = 'pending' AND ${q('WAITING_EVENT')} IS NULL))`,
    claimPass: d.counted(`UPDATE ${N} SET ${q('LAST_PASS_AT')} = ${time(2)}
      WHERE ${q('TENANT')} = ${p(1)} AND (${q('LAST_PASS_AT')} IS NULL OR ${q('LAST_PASS_AT')} <= ${time(3)})`),
    liveCount: `SELECT COUNT(*) AS ${q('n')} FROM ${T} WHERE ${q('STATE')} <> 'disabled'`,
    endPasses: `UPDATE ${N} SET ${q('LAST_PASS_AT')} = NULL WHERE ${q('TENANT')} = ${p(1)}`,
    observe: `UPDATE ${T} SET
        ${q('NOTIFIED_BATCH')} = CASE WHEN ${q('SEEN_FEED')} = ${p(3)} THEN ${q('NOTIFIED_BATCH')} ELSE -1 END,
        ${q('SEEN_FEED')} = ${p(3)}, ${q('SEEN_BATCH')} = ${p(4)}, ${q('LAST_CHANGE_AT')} = ${time(5)}
      WHERE ${q('SOURCE_SCHEMA')} = ${p(1)} AND ${q('SOURCE_NAME')} = ${p(2)}
        AND (${q('SEEN_FEED')} IS NULL OR ${q('SEEN_FEED')} <> ${p(3)} OR ${q('SEEN_BATCH')} < ${p(4)})`,
    claim: d.counted(`UPDATE ${T} SET ${q('WAITING_EVENT')} = ${p(2)}, ${q('WAITING_SINCE')} = ${time(4)},
        ${q('NOTIFIED_BATCH')} = ${p(3)}, ${q('LAST_NOTIFIED_AT')} = ${time(4)}
      WHERE ${q('ID')} = ${p(1)} AND ${q('STATE')} = 'active' AND ${q('NOTIFIED_BATCH')} < ${p(3)}
        AND (${q('WAITING_EVENT')} IS NULL OR ${q('WAITING_SINCE')} < ${time(5)})`),
    release: `UPDATE ${T} SET ${q('WAITING_EVENT')} = NULL, ${q('WAITING_SINCE')} = NULL, ${q('NOTIFIED_BATCH')} = -1
      WHERE ${q('ID')} = ${p(1)} AND ${q('WAITING_EVENT')} = ${p(2)}`,
    attemptsMade: `SELECT COUNT(*) AS ${q('n')} FROM ${D}
      WHERE ${q('MESSAGE_ID')} = ${p(1)} AND ${q('OUTCOME')} IN ('retrying', 'failed')`,
    record: `INSERT INTO ${D} (${q('SUBSCRIPTION_ID')}, ${q('EVENT_ID')}, ${q('EVENT_TYPE')}, ${q('ATTEMPT')},
        ${q('ATTEMPTED_AT')}, ${q('OUTCOME')}, ${q('HTTP_STATUS')}, ${q('ERROR')}, ${q('DURATION_MS')},
        ${q('RETRY_IN_SECONDS')}, ${q('MESSAGE_ID')})
      VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${time(5)}, ${p(6)}, ${p(7)}, ${p(8)}, ${p(9)}, ${p(10)}, ${p(11)})`,
    delivered: `UPDATE ${T} SET ${q('LAST_DELIVERED_AT')} = ${time(4)}, ${q('CONSECUTIVE_FAILURES')} = 0,
        ${q('FAILING_SINCE')} = NULL,
        ${q('STATE')} = CASE WHEN ${q('STATE')} = 'pending' AND ${p(3)} = 1 THEN 'active' ELSE ${q('STATE')} END,
        ${q('WAITING_SINCE')} = CASE WHEN ${q('WAITING_EVENT')} = ${p(2)} THEN NULL ELSE ${q('WAITING_SINCE')} END,
        ${q('WAITING_EVENT')} = CASE WHEN ${q('WAITING_EVENT')} = ${p(2)} THEN NULL ELSE ${q('WAITING_EVENT')} END
      WHERE ${q('ID')} = ${p(1)} AND ${q('STATE')} <> 'disabled'`,
    // One statement, so that of failures at once exactly one finds the subscription enabled and
    // disables it (parameters: id, event, now, cut-off, finished, disable now, reason).
    failed: d.counted(`UPDATE ${T} SET ${q('CONSECUTIVE_FAILURES')} = ${q('CONSECUTIVE_FAILURES')} + 1,
        ${q('FAILING_SINCE')} = COALESCE(${q('FAILING_SINCE')}, ${time(3)}),
        ${q('STATE')} = CASE WHEN ${disables} THEN 'disabled' ELSE ${q('STATE')} END,
        ${q('DISABLED_AT')} = CASE WHEN ${disables} THEN ${time(3)} ELSE ${q('DISABLED_AT')} END,
        ${q('DISABLED_REASON')} = CASE WHEN ${disables} THEN ${p(7)} ELSE ${q('DISABLED_REASON')} END,
        ${q('WAITING_SINCE')} = CASE WHEN ${q('WAITING_EVENT')} = ${p(2)} AND (${p(5)} = 1 OR ${disables})
          THEN NULL ELSE ${q('WAITING_SINCE')} END,
        ${q('WAITING_EVENT')} = CASE WHEN ${q('WAITING_EVENT')} = ${p(2)} AND (${p(5)} = 1 OR ${disables})
          THEN NULL ELSE ${q('WAITING_EVENT')} END
      WHERE ${q('ID')} = ${p(1)} AND ${q('STATE')} <> 'disabled'`),
    /** After `failed`: whether it is disabled now, at this very time (then this call disabled it). */
    disabledAt: `SELECT ${t('DISABLED_AT', 'disabledAt')} FROM ${T} WHERE ${q('ID')} = ${p(1)}`,
  };
}

type Statements = ReturnType<typeof subscriptionStatements>;

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
  };
}

const changed = (rows: Row[]) => Number(rows[0]?.changed ?? 0) > 0;

/** The store on a tenant database, in the statements of its dialect. */
export function createSqlSubscriptionStore(
  db: Pick<Database, 'query' | 'transaction'>,
  sql: Statements,
): SubscriptionStore {
  const get = async (id: string, owner?: string) => {
    const rows = await (owner === undefined ? db.query(sql.get, [id]) : db.query(sql.getOwned, [id, owner]));
    return rows[0] ? toSubscription(rows[0]) : undefined;
  };
  return {
    async create(tenant, s, max) {
      return db.transaction(async (tx) => {
        for (const statement of sql.lockNotifier) await tx.query(statement, [tenant]);
        const [count] = await tx.query(sql.count);
        if (Number(count?.n ?? 0) >= max) return 'limit' as const;
        await tx.query(sql.insert, [
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
        ]);
        return 'created' as const;
      });
    },
    async list(owner) {
      return (await db.query(sql.list, [owner])).map(toSubscription);
    },
    get,
    async remove(id, owner) {
      return changed(await db.query(sql.remove, [id, owner]));
    },
    async rotate(id, owner, secret, now) {
      await db.query(sql.rotate, [id, owner, secret, sqlTimestamp(now)]);
      return get(id, owner);
    },
    async enable(id, owner, event, now) {
      await db.query(sql.enable, [id, owner, event, sqlTimestamp(now)]);
      return get(id, owner);
    },
    async lastPassAt(tenant) {
      const rows = await db.query(sql.lastPassAt, [tenant]);
      return rows[0] ? sqlTimeMs(rows[0].lastPassAt) : undefined;
    },
    async claimPass(tenant, now, notBefore) {
      return changed(await db.query(sql.claimPass, [tenant, sqlTimestamp(now), sqlTimestamp(notBefore)]));
    },
    async endPasses(tenant) {
      // Under the notifier row's lock, which a creation holds until it commits: the count then
      // sees every subscription made before, and one made after finds the loop ended and starts one.
      return db.transaction(async (tx) => {
        for (const statement of sql.lockNotifier) await tx.query(statement, [tenant]);
        const [count] = await tx.query(sql.liveCount);
        if (Number(count?.n ?? 0) > 0) return false;
        await tx.query(sql.endPasses, [tenant]);
        return true;
      });
    },
    async listLive() {
      return (await db.query(sql.listLive)).map(toSubscription);
    },
    async observe(source, state, now) {
      await db.query(sql.observe, [
        source.schema,
        source.name,
        state.feedId.toUpperCase(),
        state.lastBatch,
        sqlTimestamp(now),
      ]);
    },
    async claim(id, event, batch, now, staleBefore) {
      return changed(
        await db.query(sql.claim, [id, event, batch, sqlTimestamp(now), sqlTimestamp(staleBefore)]),
      );
    },
    async release(id, event) {
      await db.query(sql.release, [id, event]);
    },
    async attemptsMade(messageId) {
      const [row] = await db.query(sql.attemptsMade, [messageId]);
      return Number(row?.n ?? 0);
    },
    async record(entry) {
      await db.query(sql.record, [
        entry.subscriptionId,
        entry.eventId,
        entry.eventType,
        entry.attempt,
        sqlTimestamp(entry.attemptedAt),
        entry.outcome,
        entry.httpStatus ?? null,
        entry.error === undefined ? null : entry.error.slice(0, MAX_ERROR_LENGTH),
        entry.durationMs === undefined ? null : Math.round(entry.durationMs),
        entry.retryInSeconds ?? null,
        entry.messageId.slice(0, 100),
      ]);
    },
    async delivered(id, event, ping, now) {
      await db.query(sql.delivered, [id, event, ping ? 1 : 0, sqlTimestamp(now)]);
    },
    async failed(id, event, now, options) {
      const at = sqlTimestamp(now);
      const updated = changed(
        await db.query(sql.failed, [
          id,
          event,
          at,
          sqlTimestamp(options.disableIfFailingSince),
          options.finished ? 1 : 0,
          options.disableNow ? 1 : 0,
          options.reason.slice(0, MAX_ERROR_LENGTH),
        ]),
      );
      if (!updated) return false;
      const [row] = await db.query(sql.disabledAt, [id]);
      return sqlTimeMs(row?.disabledAt) === sqlTimeMs(at);
    },
  };
}
