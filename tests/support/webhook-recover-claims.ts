import { expect, it } from 'vitest';
import type { Database } from '../../shared/core/database.js';
import {
  type DocumentEventQueue,
  runWebhookAdmin,
  type WebhookAdminStore,
} from '../../shared/core/webhook/admin.js';
import type { WebhookDeliveryLog } from '../../shared/core/webhook/delivery-log.js';

/**
 * Recovers that run at once, on a real database: `parallel` recovers over the same failed events
 * (on SQL Server, each on a session of its own) send every event exactly once between them, and
 * the next recover finds nothing left. Shared by the embedded and SQL Server integration suites.
 */
export function recoverClaimCases(
  context: () => { db: Database; log: WebhookDeliveryLog; stores: () => WebhookAdminStore[] },
  subjectId: number,
): void {
  it('sends every failed event once when recovers run at once (each claims what it sends)', async () => {
    const { log, stores } = context();
    const since = Date.now() - 1000;
    const events = Array.from({ length: 12 }, (_, i) => ({
      eventId: `msg_claim_${subjectId}_${i}_${since}`,
      subjectId,
      documentId: since + i,
    }));
    for (const [i, event] of events.entries()) {
      await log.record({
        ...event,
        messageId: `m-${i}`,
        attempt: 1,
        attemptedAt: Date.now(),
        outcome: i % 3 === 0 ? 'disabled' : 'failed',
      });
    }
    const sent: number[] = [];
    const queue: DocumentEventQueue = {
      send: async (event) => {
        sent.push(event.documentId);
        // Lets the other recovers run between two sends.
        await new Promise((resolve) => setTimeout(resolve, 1));
        return `m-${sent.length}`;
      },
    };
    const request = { action: 'recover', tenant: 'demo', since, subjectId, dryRun: false } as const;
    const answers = await Promise.all(stores().map((store) => runWebhookAdmin(request, { store, queue })));
    expect(sent.sort()).toEqual(events.map((event) => event.documentId).sort());
    const total = answers.reduce((sum, answer) => sum + Number(answer.sent), 0);
    expect(total).toBe(events.length);
    expect(answers.reduce((sum, answer) => sum + Number(answer.claimedElsewhere), 0)).toBe(
      answers.reduce((sum, answer) => sum + Number(answer.count), 0) - events.length,
    );
    const again = await runWebhookAdmin(request, { store: stores()[0]!, queue });
    expect(again).toMatchObject({ count: 0, sent: 0 });
    expect(sent).toHaveLength(events.length);
  });
}
