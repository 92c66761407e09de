/**
 * The attempt logs of the delivery engine (core/delivery/engine.ts): WEBHOOK_DELIVERY (the receipt
 * webhook) and SVC_NOTIFICATION_DELIVERY (change notifications) are one log of two tables, each
 * with the event's own key columns first and then the same columns of an attempt. One writer per
 * dialect builds both inserts from this; no SQL text of either dialect lives here.
 */

import type { Database } from '../../core/database.js';
import type { AttemptEntry } from '../../core/delivery/engine.js';
import { sqlTimestamp } from './times.js';

/** An attempt's columns after the log's own, in the order of their parameters; TENANT last. */
export const ATTEMPT_COLUMNS = [
  'ATTEMPT',
  'ATTEMPTED_AT',
  'OUTCOME',
  'HTTP_STATUS',
  'ERROR',
  'DURATION_MS',
  'RETRY_IN_SECONDS',
  'MESSAGE_ID',
  'TENANT',
] as const;

/** The 1-based position of ATTEMPTED_AT among an insert's parameters, whose type the dialect casts. */
export const attemptedAtParameter = (ownColumns: number) => ownColumns + 2;

/** The 1-based position of an attempt's `column` among an insert's parameters, after `ownColumns`. */
export const attemptParameter = (ownColumns: number, column: (typeof ATTEMPT_COLUMNS)[number]) =>
  ownColumns + ATTEMPT_COLUMNS.indexOf(column) + 1;

/** ERROR's length in both logs; MESSAGE_ID's (an SQS message id is 36 characters). */
const MAX_ERROR_LENGTH = 400;
const MAX_MESSAGE_ID_LENGTH = 100;

/** The parameters of an attempt after the log's own (`ATTEMPT_COLUMNS`' order). */
export function attemptParameters(entry: AttemptEntry, messageId: string, tenant: string): unknown[] {
  return [
    entry.attempt,
    sqlTimestamp(entry.attemptedAt),
    entry.outcome,
    entry.httpStatus ?? null,
    entry.error === undefined ? null : entry.error.slice(0, MAX_ERROR_LENGTH),
    entry.durationMs === undefined ? null : Math.round(entry.durationMs),
    entry.retryInSeconds ?? null,
    messageId.slice(0, MAX_MESSAGE_ID_LENGTH),
    tenant,
  ];
}

/** Writes one attempt with `statement` (a dialect's insert of it), the log's own values first. */
export async function recordAttempt(
  db: Pick<Database, 'query'>,
  statement: string,
  own: readonly unknown[],
  entry: AttemptEntry & { readonly messageId: string },
  tenant: string,
): Promise<void> {
  await db.query(statement, [...own, ...attemptParameters(entry, entry.messageId, tenant)]);
}
