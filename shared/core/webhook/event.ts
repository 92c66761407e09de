import { createHash } from 'node:crypto';

/** What the access point puts on the document-received queue when a document arrives for a subject. */
export interface DocumentReceivedEvent {
  readonly tenant: string;
  readonly subjectId: number;
  readonly documentId: number;
  /**
   * Sent again by the admin function (`resend`, `recover`): delivered even when an earlier copy
   * was, with the same `webhook-id` so that receivers deduplicate.
   */
  readonly resend?: boolean;
}

/** The queue message cannot be read as a document-received event. */
export class InvalidDocumentEventError extends Error {
  override readonly name = 'InvalidDocumentEventError';
}

const TENANT_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** True for the ids the service accepts: positive integers that JSON carries exactly. */
export function isDocumentKey(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/** `SUBJECT.ID` is an SQL `int`: a larger id names no subject and could not even be recorded. */
export const MAX_SUBJECT_ID = 2 ** 31 - 1;

/** True for a subject id the service accepts: a positive `int`. */
export function isSubjectId(value: unknown): value is number {
  return isDocumentKey(value) && value <= MAX_SUBJECT_ID;
}

/** Reads a queue message body `{"tenant","subjectId","documentId"}`; throws InvalidDocumentEventError. */
export function parseDocumentReceivedEvent(body: string): DocumentReceivedEvent {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new InvalidDocumentEventError('The message body is not JSON');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidDocumentEventError('The message body is not a JSON object');
  }
  const { tenant, subjectId, documentId, resend } = value as Record<string, unknown>;
  if (typeof tenant !== 'string' || !TENANT_ID.test(tenant)) {
    throw new InvalidDocumentEventError('"tenant" must be a tenant id');
  }
  if (!isSubjectId(subjectId))
    throw new InvalidDocumentEventError(`"subjectId" must be a positive integer up to ${MAX_SUBJECT_ID}`);
  if (!isDocumentKey(documentId))
    throw new InvalidDocumentEventError('"documentId" must be a positive integer');
  if (resend !== undefined && typeof resend !== 'boolean')
    throw new InvalidDocumentEventError('"resend" must be true or false');
  return resend ? { tenant, subjectId, documentId, resend: true } : { tenant, subjectId, documentId };
}

/** The queue message body for an event, exactly as the access point writes it. */
export function documentReceivedMessage(event: DocumentReceivedEvent): string {
  return JSON.stringify({
    tenant: event.tenant,
    subjectId: event.subjectId,
    documentId: event.documentId,
    ...(event.resend ? { resend: true } : {}),
  });
}

/**
 * The event's `webhook-id`: derived from what identifies the event, so every attempt and every
 * copy of the same event carries the same id and receivers can deduplicate on it.
 */
export function webhookEventId(event: DocumentReceivedEvent): string {
  const digest = createHash('sha256')
    .update(`${event.tenant}\n${event.subjectId}\n${event.documentId}`)
    .digest('hex');
  return `msg_${digest.slice(0, 32)}`;
}
