/**
 * The webhook admin's view of a tenant database (`WEBHOOK_DELIVERY`, `WEBHOOK_ENDPOINT`, `SUBJECT`),
 * shared by the SQL adapters; each passes its dialect's statements.
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../../core/database.js';
import type { WebhookAdminStore } from '../../core/webhook/admin.js';
import type { DeliveryOutcome } from '../../core/webhook/delivery-log.js';
import { sqlTimeMs, sqlTimestamp } from './times.js';

/**
 * A dialect's statements of the admin store. Each takes the tenant as its last parameter (after
 * those listed) and touches that tenant's rows of WEBHOOK_DELIVERY and WEBHOOK_ENDPOINT only.
 */
export interface WebhookAdminStatements {
  /** Parameter: event id. One row (`subjectId`, `documentId`) or none. */
  readonly findEvent: string;
  /**
   * Parameters: since, subject id (0: every subject), limit. Per event with rows since then, its
   * last row when its outcome is failed or disabled: `eventId`, `subjectId`, `documentId`,
   * `lastOutcome`, `lastAttemptAt`; oldest first.
   */
  readonly eventsToRecover: string;
  /**
   * Parameter: subject id. One row when the subject exists: `webhookUrl`, `endpointSubjectId`
   * (null without a WEBHOOK_ENDPOINT row), `disabledAt`, `enabledAt`, `failingSince`, `secretChangedAt`.
   */
  readonly subjectState: string;
  /** Parameters: subject id, limit. Newest first. */
  readonly lastAttempts: string;
  /**
   * Parameters: event id, subject id, document id, the claimed row's id, now. Writes the
   * `requeued` row naming the row it sends again, unless one does (the unique index
   * UX_WEBHOOK_DELIVERY_RECOVERS decides between two at once), with the claim's token (6th
   * parameter) as its MESSAGE_ID.
   */
  readonly claimRecovery: string;
  /** Parameter: a row's id. `claimedBy`: the token of the `requeued` row naming it, if any. */
  readonly recoveryClaimed: string;
  /** Parameters: subject id, now. */
  readonly enable: string;
}

const numberOrNull = (value: unknown) => (value === null || value === undefined ? null : Number(value));

export function createSqlWebhookAdminStore(
  db: Pick<Database, 'query'>,
  sql: WebhookAdminStatements,
  tenant: string,
): WebhookAdminStore {
  /** A statement's parameters, the tenant's id last. */
  const mine = (...params: unknown[]) => [...params, tenant];
  return {
    async findEvent(eventId) {
      const [row] = await db.query(sql.findEvent, mine(eventId));
      return row
        ? { eventId, subjectId: Number(row.subjectId), documentId: Number(row.documentId) }
        : undefined;
    },
    async eventsToRecover(since, subjectId, limit) {
      const rows = await db.query(sql.eventsToRecover, mine(sqlTimestamp(since), subjectId ?? 0, limit));
      return rows.map((row) => ({
        eventId: String(row.eventId),
        subjectId: Number(row.subjectId),
        documentId: Number(row.documentId),
        lastOutcome: String(row.lastOutcome) as DeliveryOutcome,
        lastAttemptAt: sqlTimeMs(row.lastAttemptAt) ?? 0,
        rowId: String(row.rowId),
      }));
    },
    async claimRecovery(event, now) {
      // The claim row carries a token of this call (in MESSAGE_ID, which no queue message id
      // equals): the row that names the failed one says which recover took it.
      const token = `recover-${randomUUID()}`;
      const params = [
        event.eventId,
        event.subjectId,
        event.documentId,
        event.rowId,
        sqlTimestamp(now),
        token,
      ];
      let failure: unknown;
      try {
        await db.query(sql.claimRecovery, mine(...params));
      } catch (error) {
        // Two recovers passed NOT EXISTS at once and the unique index refused the later one.
        failure = error;
      }
      const [row] = await db.query(sql.recoveryClaimed, mine(event.rowId));
      if (!row) throw failure ?? new Error('the recover claim was not written');
      return row.claimedBy === token;
    },
    async subjectState(subjectId) {
      const [row] = await db.query(sql.subjectState, mine(subjectId));
      if (!row) return undefined;
      const webhookUrl =
        typeof row.webhookUrl === 'string' && row.webhookUrl.trim() !== '' ? row.webhookUrl : null;
      if (row.endpointSubjectId === null || row.endpointSubjectId === undefined) return { webhookUrl };
      return {
        webhookUrl,
        endpoint: {
          disabledAt: sqlTimeMs(row.disabledAt),
          enabledAt: sqlTimeMs(row.enabledAt) ?? 0,
          failingSince: sqlTimeMs(row.failingSince),
          secretChangedAt: sqlTimeMs(row.secretChangedAt),
        },
      };
    },
    async lastAttempts(subjectId, limit) {
      const rows = await db.query(sql.lastAttempts, mine(subjectId, limit));
      return rows.map((row) => ({
        eventId: String(row.eventId),
        documentId: Number(row.documentId),
        attempt: Number(row.attempt),
        attemptedAt: sqlTimeMs(row.attemptedAt) ?? 0,
        outcome: String(row.outcome),
        httpStatus: numberOrNull(row.httpStatus),
        error: row.error === null || row.error === undefined ? null : String(row.error),
        durationMs: numberOrNull(row.durationMs),
      }));
    },
    async enable(subjectId, now) {
      await db.query(sql.enable, mine(subjectId, sqlTimestamp(now)));
    },
  };
}
