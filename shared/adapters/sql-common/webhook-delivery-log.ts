/**
 * The webhook's delivery log over a database connection, shared by the SQL adapters:
 * `WEBHOOK_DELIVERY` and `SUBJECT` (infra/sql/*\/040-webhook.sql). No SQL text of either dialect
 * lives here; each adapter passes its statements.
 */
import { type Database, DatabasePermissionError, type Row } from '../../core/database.js';
import {
  ClaimNotReleasedError,
  type DeliveryKey,
  type DeliveryTarget,
  type EndpointMemory,
  type WebhookDeliveryLog,
} from '../../core/webhook/delivery-log.js';
import { recordAttempt } from './attempt-log.js';
import { sqlTimeMs, sqlTimestamp } from './times.js';

/** The copies' claims to send an event, as a permission error names the table. */
const SENDING_CLAIMS = 'dbo.SVC_WEBHOOK_SENDING';

/**
 * A dialect's statements of the delivery log. Each takes the tenant as its last parameter (after
 * those listed) and reads and writes that tenant's rows of WEBHOOK_DELIVERY and WEBHOOK_ENDPOINT
 * only: tenants sharing a database (and its SUBJECT table) keep their own attempts and endpoint state.
 */
export interface DeliveryLogStatements {
  /**
   * Parameters: event id, subject id, document id, message id, resend (1 or 0). Exactly one row
   * whether or not the subject exists: `delivered` (count of delivered or resent rows of the
   * event; of a resend, of its own message only), `attemptsMade` (rows of the message with
   * outcome retrying or failed), `subjectId`, `webhookUrl`, `secret`, and the WEBHOOK_ENDPOINT
   * row (`endpointSubjectId` null when there is none): `endpointUrl`, `endpointSecret`,
   * `previousSecret`, `secretChangedAt`, `failingSince`, `disabledAt`, `enabledAt`, `slowSince`.
   */
  readonly findTarget: string;
  /**
   * {@link findTarget}'s parameters, then (after the tenant, the sixth) now and until. Takes
   * SVC_WEBHOOK_SENDING's row of the event for the message unless another message's lasts past
   * now, then reads as {@link findTarget}, with `claimed` (1 or 0) and `heldUntil` (the claim's
   * UNTIL as it was read; may be null when another copy took it at the same moment).
   */
  readonly claimAndFindTarget: string;
  /**
   * Parameters, in order: subject id, URL, secret, previous secret, secret changed at, failing
   * since, disabled at, enabled at, slow since. `insertEndpoint` adds the row unless one exists
   * (and then leaves it); `updateEndpoint` overwrites it.
   */
  readonly insertEndpoint: string;
  readonly updateEndpoint: string;
  /**
   * Parameters: subject id, slow at (null: answered in time). Clears FAILING_SINCE; SLOW_SINCE
   * becomes null, or stays as it was, or becomes `slow at`.
   */
  readonly endpointDelivered: string;
  /** Parameters: subject id, at. SLOW_SINCE becomes `at` unless set. */
  readonly endpointSlow: string;
  /**
   * Parameters: subject id, now, disable if failing since at or before this. Sets FAILING_SINCE
   * unless set, and DISABLED_AT when due, of an enabled endpoint; a row (`disabledAt`) per row changed.
   */
  readonly endpointFailed: string;
  /**
   * Parameters: event id, subject id, document id, then an attempt's (sql-common/attempt-log.ts).
   * Records the attempt, then ends its message's claim to send the event.
   */
  readonly insert: string;
  /** Parameters: event id, message id. Removes the message's claim. */
  readonly releaseSending: string;
}

/** WEBHOOK_DELIVERY.MESSAGE_ID's length (an SQS message id is 36 characters). */
const MAX_MESSAGE_ID_LENGTH = 100;

const nullableTimestamp = (ms: number | null) => (ms === null ? null : sqlTimestamp(ms));

function endpointParameters(subjectId: number, memory: EndpointMemory): unknown[] {
  return [
    subjectId,
    memory.webhookUrl,
    memory.secret,
    memory.previousSecret,
    nullableTimestamp(memory.secretChangedAt),
    nullableTimestamp(memory.failingSince),
    nullableTimestamp(memory.disabledAt),
    sqlTimestamp(memory.enabledAt),
    nullableTimestamp(memory.slowSince),
  ];
}

/** findTarget's row as the target it describes. */
function toTarget(row: Row | undefined): DeliveryTarget {
  const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value : null);
  return {
    alreadyDelivered: Number(row?.delivered ?? 0) > 0,
    attemptsMade: Number(row?.attemptsMade ?? 0),
    subject:
      row?.subjectId === null || row?.subjectId === undefined
        ? undefined
        : { webhookUrl: text(row.webhookUrl), secret: text(row.secret) },
    endpoint:
      row?.endpointSubjectId === null || row?.endpointSubjectId === undefined
        ? undefined
        : {
            webhookUrl: text(row.endpointUrl),
            secret: text(row.endpointSecret),
            previousSecret: text(row.previousSecret),
            secretChangedAt: sqlTimeMs(row.secretChangedAt),
            failingSince: sqlTimeMs(row.failingSince),
            disabledAt: sqlTimeMs(row.disabledAt),
            enabledAt: sqlTimeMs(row.enabledAt) ?? 0,
            slowSince: sqlTimeMs(row.slowSince),
          },
  };
}

/** A tenant's WEBHOOK_DELIVERY rows and SUBJECT in its database, in the statements of its dialect. */
export function createSqlWebhookDeliveryLog(
  db: Pick<Database, 'query'>,
  sql: DeliveryLogStatements,
  tenant: string,
): WebhookDeliveryLog {
  /** A statement's parameters, the tenant's id last. */
  const mine = (...params: unknown[]) => [...params, tenant];
  const targetParameters = (key: DeliveryKey) =>
    mine(
      key.eventId,
      key.subjectId,
      key.documentId,
      key.messageId.slice(0, MAX_MESSAGE_ID_LENGTH),
      key.resend ? 1 : 0,
    );
  return {
    async findTarget(key) {
      const [row] = await db.query(sql.findTarget, targetParameters(key));
      return toTarget(row);
    },
    async claimAndFindTarget(key, claim) {
      const [row] = await db.query(sql.claimAndFindTarget, [
        ...targetParameters(key),
        sqlTimestamp(claim.now),
        sqlTimestamp(claim.until),
      ]);
      return {
        ...toTarget(row),
        claim:
          Number(row?.claimed ?? 0) > 0
            ? { claimed: true }
            : { claimed: false, heldUntil: sqlTimeMs(row?.heldUntil) },
      };
    },
    async rememberEndpoint(subjectId, memory, before) {
      await db.query(
        before ? sql.updateEndpoint : sql.insertEndpoint,
        mine(...endpointParameters(subjectId, memory)),
      );
    },
    async endpointDelivered(subjectId, slowAt) {
      await db.query(sql.endpointDelivered, mine(subjectId, nullableTimestamp(slowAt)));
    },
    async endpointSlow(subjectId, at) {
      await db.query(sql.endpointSlow, mine(subjectId, sqlTimestamp(at)));
    },
    async endpointFailed(subjectId, at, disableIfFailingSince) {
      const rows = await db.query(
        sql.endpointFailed,
        mine(subjectId, sqlTimestamp(at), sqlTimestamp(disableIfFailingSince)),
      );
      return rows.some((row) => row.disabledAt !== null && row.disabledAt !== undefined);
    },
    async releaseSending(eventId, messageId) {
      await db.query(sql.releaseSending, mine(eventId, messageId.slice(0, MAX_MESSAGE_ID_LENGTH)));
    },
    async record(entry) {
      try {
        await recordAttempt(
          db,
          sql.insert,
          [entry.eventId, entry.subjectId, entry.documentId],
          entry,
          tenant,
        );
      } catch (error) {
        // The claim's end comes after the attempt in the same batch: refused alone, the attempt stands.
        if (error instanceof DatabasePermissionError && error.object === SENDING_CLAIMS) {
          throw new ClaimNotReleasedError(error);
        }
        throw error;
      }
    },
  };
}
