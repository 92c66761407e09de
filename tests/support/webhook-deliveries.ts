import { expect } from 'vitest';
import { DEMO_AUTH } from './demo.js';

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
