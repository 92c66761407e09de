import type { Database } from '../database.js';

/** What the service records about every attempt (and every decision not to attempt). */
export type DeliveryOutcome =
  /** The receiver answered 2xx. */
  | 'delivered'
  /** The attempt failed; another follows after `retryInSeconds`. */
  | 'retrying'
  /** The last attempt failed; the event goes to the dead-letter queue. */
  | 'failed'
  /** The receiver answered 410 Gone: no further attempts. */
  | 'gone'
  /** The target is not an http(s) URL or resolves to a forbidden address: never sent. */
  | 'refused'
  /** The subject has no WEBHOOK_URL: nothing to send. */
  | 'skipped'
  /** This copy of the event arrived after the event had been delivered: not sent again. */
  | 'duplicate'
  /** The subject does not exist in the tenant database. */
  | 'unknown_subject';

export interface DeliveryRecord {
  readonly eventId: string;
  readonly subjectId: number;
  readonly documentId: number;
  /** 1-based; the queue's receive count of this copy of the event. */
  readonly attempt: number;
  /** When the attempt started, in ms since the epoch. */
  readonly attemptedAt: number;
  readonly outcome: DeliveryOutcome;
  readonly httpStatus?: number;
  /** Network error, time-out or the reason for a refusal; never a secret. */
  readonly error?: string;
  readonly durationMs?: number;
  /** For `retrying`: seconds until the next attempt. */
  readonly retryInSeconds?: number;
}

export interface WebhookSubject {
  readonly webhookUrl: string | null;
  readonly secret: string | null;
}

/** What an attempt starts from. */
export interface DeliveryTarget {
  /** True when an earlier copy of the event was delivered. */
  readonly alreadyDelivered: boolean;
  /** The subject's webhook settings; undefined when the subject does not exist. */
  readonly subject: WebhookSubject | undefined;
}

/** The webhook's view of a tenant database: subjects in, attempts out. */
export interface WebhookDeliveryLog {
  /** The subject's webhook settings and whether the event was delivered already, in one round trip. */
  findTarget(eventId: string, subjectId: number): Promise<DeliveryTarget>;
  record(entry: DeliveryRecord): Promise<void>;
}

const MAX_ERROR_LENGTH = 400;

/** Wall-clock UTC `YYYY-MM-DD hh:mm:ss.mmm`, which both SQL Server and PostgreSQL read as a date-time. */
function sqlTimestamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 23).replace('T', ' ');
}

/** WEBHOOK_DELIVERY and SUBJECT in a tenant database (infra/sql/*\/040-webhook.sql). */
export function createWebhookDeliveryLog(db: Pick<Database, 'query' | 'dialect'>): WebhookDeliveryLog {
  const q = (name: string) => db.dialect.quoteIdent(name);
  const p = (index: number) => db.dialect.param(index);
  // One row whether or not the subject exists; the count is served by the unique filtered index
  // on delivered events. Valid T-SQL and PostgreSQL alike.
  const targetSql = `SELECT
      (SELECT COUNT(*) FROM ${q('dbo')}.${q('WEBHOOK_DELIVERY')}
        WHERE ${q('EVENT_ID')} = ${p(1)} AND ${q('OUTCOME')} = 'delivered') AS ${q('delivered')},
      ${q('s')}.${q('ID')} AS ${q('subjectId')},
      ${q('s')}.${q('WEBHOOK_URL')} AS ${q('webhookUrl')},
      ${q('s')}.${q('SECRET_WEBHOOK')} AS ${q('secret')}
    FROM (SELECT 1 AS ${q('one')}) AS ${q('x')}
    LEFT JOIN ${q('dbo')}.${q('SUBJECT')} AS ${q('s')} ON ${q('s')}.${q('ID')} = ${p(2)}`;
  const columns = [
    'EVENT_ID',
    'SUBJECT_ID',
    'DOCUMENT_ID',
    'ATTEMPT',
    'ATTEMPTED_AT',
    'OUTCOME',
    'HTTP_STATUS',
    'ERROR',
    'DURATION_MS',
    'RETRY_IN_SECONDS',
  ];
  const insertSql = `INSERT INTO ${q('dbo')}.${q('WEBHOOK_DELIVERY')} (${columns.map(q).join(', ')})
    VALUES (${columns.map((_, i) => p(i + 1)).join(', ')})`;

  return {
    async findTarget(eventId, subjectId) {
      const [row] = await db.query(targetSql, [eventId, subjectId]);
      const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value : null);
      return {
        alreadyDelivered: Number(row?.delivered ?? 0) > 0,
        subject:
          row?.subjectId === null || row?.subjectId === undefined
            ? undefined
            : { webhookUrl: text(row.webhookUrl), secret: text(row.secret) },
      };
    },
    async record(entry) {
      await db.query(insertSql, [
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
      ]);
    },
  };
}
