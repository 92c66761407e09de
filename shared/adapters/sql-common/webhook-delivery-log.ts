/**
 * The webhook's delivery log over a database connection, shared by the SQL adapters:
 * `WEBHOOK_DELIVERY` and `SUBJECT` (infra/sql/*\/040-webhook.sql). No SQL text of either dialect
 * lives here; each adapter passes its statements.
 */
import type { Database } from '../../core/database.js';
import type { WebhookDeliveryLog } from '../../core/webhook/delivery-log.js';

/** A dialect's statements of the delivery log. */
export interface DeliveryLogStatements {
  /**
   * Parameters: event id, subject id, document id, message id. Exactly one row whether or not the
   * subject exists: `delivered` (count of delivered rows of the event), `attemptsMade` (rows of
   * the message with outcome retrying or failed), `subjectId`, `webhookUrl`, `secret`.
   */
  readonly findTarget: string;
  /**
   * Parameters, in order: event id, subject id, document id, attempt, attempted at, outcome,
   * HTTP status, error, duration ms, retry in seconds, message id.
   */
  readonly insert: string;
}

const MAX_ERROR_LENGTH = 400;
/** WEBHOOK_DELIVERY.MESSAGE_ID's length (an SQS message id is 36 characters). */
const MAX_MESSAGE_ID_LENGTH = 100;

/** Wall-clock UTC `YYYY-MM-DD hh:mm:ss.mmm`, which both SQL Server and PostgreSQL read as a date-time. */
function sqlTimestamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 23).replace('T', ' ');
}

/** WEBHOOK_DELIVERY and SUBJECT in a tenant database, in the statements of its dialect. */
export function createSqlWebhookDeliveryLog(
  db: Pick<Database, 'query'>,
  sql: DeliveryLogStatements,
): WebhookDeliveryLog {
  return {
    async findTarget(key) {
      const [row] = await db.query(sql.findTarget, [
        key.eventId,
        key.subjectId,
        key.documentId,
        key.messageId.slice(0, MAX_MESSAGE_ID_LENGTH),
      ]);
      const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value : null);
      return {
        alreadyDelivered: Number(row?.delivered ?? 0) > 0,
        attemptsMade: Number(row?.attemptsMade ?? 0),
        subject:
          row?.subjectId === null || row?.subjectId === undefined
            ? undefined
            : { webhookUrl: text(row.webhookUrl), secret: text(row.secret) },
      };
    },
    async record(entry) {
      await db.query(sql.insert, [
        entry.eventId,
        entry.subjectId,
        entry.documentId,
        entry.attempt,
        sqlTimestamp(entry.attemptedAt),
        entry.outcome,
        entry.httpStatus ?? null,
        entry.error === undefined ? null : entry.error.slice(0, MAX_ERROR_LENGTH),
        entry.durationMs === undefined ? null : Math.round(entry.durationMs),
        entry.retryInSeconds ?? null,
        entry.messageId.slice(0, MAX_MESSAGE_ID_LENGTH),
      ]);
    },
  };
}
