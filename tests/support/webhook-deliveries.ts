import { expect } from 'vitest';
import { DEMO_AUTH } from './demo.js';
import { until } from './until.js';
import type { WebhookReceiver } from './webhook-receiver.js';

/** A WEBHOOK_DELIVERY row as the Data API answers it. */
export type WebhookDelivery = Record<string, unknown> & {
  ATTEMPT: number;
  OUTCOME: string;
  EVENT_ID: string;
};

/**
 * The WEBHOOK_DELIVERY rows of a document on the local stack at `stackUrl`, read through the Data
 * API as the demo user reads them, in the order they were recorded.
 */
export async function webhookDeliveries(stackUrl: string, documentId: number): Promise<WebhookDelivery[]> {
  const condition = encodeURIComponent(`DOCUMENT_ID = ${documentId}`);
  const response = await fetch(
    `${stackUrl}/demo/JsonAPI/Data/getDataWithCondition/WEBHOOK_DELIVERY?condition=${condition}`,
    { headers: { authorization: DEMO_AUTH } },
  );
  expect(response.status).toBe(200);
  const rows = ((await response.json()) as { WEBHOOK_DELIVERY: WebhookDelivery[] }).WEBHOOK_DELIVERY;
  return rows.sort((a, b) => Number(a.ID) - Number(b.ID));
}

/** The outcome of each delivery attempt, in order. */
export const deliveryOutcomes = (rows: readonly WebhookDelivery[]) => rows.map((row) => row.OUTCOME);

/**
 * A document's event delivered once on the local stack at `stackUrl`, as an event to send again
 * (the admin function's resend finds it by its WEBHOOK_DELIVERY row): the subject's webhook pointed
 * at `path` on `receiver`, the event sent through the local route, its POST received and its
 * delivery recorded. Answers the event's id (its `webhook-id`).
 */
export async function deliveredEvent(
  stackUrl: string,
  receiver: WebhookReceiver,
  event: { subjectId: number; documentId: number; path: string },
): Promise<string> {
  const subject = await fetch(`${stackUrl}/_local/subjects/${event.subjectId}/webhook`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      url: `${receiver.url}${event.path}`,
      secret: `secret-of-subject-${event.subjectId}`,
    }),
  });
  expect(subject.status).toBe(200);
  const accepted = await fetch(`${stackUrl}/_local/documents/received`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ subjectId: event.subjectId, documentId: event.documentId }),
  });
  expect(accepted.status).toBe(202);
  const { webhookId } = (await accepted.json()) as { webhookId: string };
  await receiver.waitFor(event.path, 1);
  await until(
    'the first delivery recorded',
    () => webhookDeliveries(stackUrl, event.documentId),
    (rows) => rows.some((row) => row.OUTCOME === 'delivered'),
  );
  return webhookId;
}
