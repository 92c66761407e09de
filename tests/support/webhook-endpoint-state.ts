import { expect, it } from 'vitest';
import type { Database } from '../../shared/core/database.js';
import type { EndpointMemory, WebhookDeliveryLog } from '../../shared/core/webhook/delivery-log.js';

/**
 * The webhook secret memory and endpoint state (WEBHOOK_ENDPOINT) as each SQL adapter must keep
 * it: the same cases on the embedded database and on T-SQL.
 */
export function endpointStateCases(get: () => { db: Database; log: WebhookDeliveryLog }, subjectId: number) {
  const T0 = Date.parse('2026-01-05T08:00:00.000Z');
  const HOUR = 3_600_000;
  const key = (documentId: number) => ({
    eventId: `msg_state-${subjectId}-${documentId}`,
    subjectId,
    documentId,
    messageId: `m-${documentId}`,
  });
  const memory: EndpointMemory = {
    webhookUrl: 'https://erp.example.cz/hook',
    secret: 'first',
    previousSecret: null,
    secretChangedAt: null,
    failingSince: null,
    disabledAt: null,
    enabledAt: T0,
    slowSince: null,
  };

  it('remembers an endpoint once, reads it back with the subject, and overwrites it on a change', async () => {
    const { log } = get();
    expect((await log.findTarget(key(1))).endpoint).toBeUndefined();
    await log.rememberEndpoint(subjectId, memory, undefined);
    // A second copy that raced the first leaves the first one's row.
    await log.rememberEndpoint(subjectId, { ...memory, secret: 'raced' }, undefined);
    expect((await log.findTarget(key(1))).endpoint).toEqual(memory);
    const rotated = { ...memory, secret: 'second', previousSecret: 'first', secretChangedAt: T0 + HOUR };
    await log.rememberEndpoint(subjectId, rotated, memory);
    expect((await log.findTarget(key(1))).endpoint).toEqual(rotated);
  });

  it('disables exactly once when failures at once reach WEBHOOK_DISABLE_AFTER_HOURS, and a delivery resets the count', async () => {
    const { log } = get();
    expect(await log.endpointFailed(subjectId, T0 + 2 * HOUR, T0 - 118 * HOUR)).toBe(false);
    await log.endpointDelivered(subjectId, null);
    expect((await log.findTarget(key(1))).endpoint?.failingSince).toBeNull();
    expect(await log.endpointFailed(subjectId, T0 + 3 * HOUR, T0 - 117 * HOUR)).toBe(false);
    expect((await log.findTarget(key(1))).endpoint?.failingSince).toBe(T0 + 3 * HOUR);
    const later = T0 + 123 * HOUR;
    const results = await Promise.all(
      Array.from({ length: 5 }, () => log.endpointFailed(subjectId, later, later - 120 * HOUR)),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect((await log.findTarget(key(1))).endpoint).toMatchObject({
      failingSince: T0 + 3 * HOUR,
      disabledAt: later,
    });
    // Disabled stays disabled: further failures change nothing.
    expect(await log.endpointFailed(subjectId, later + HOUR, later)).toBe(false);
  });

  it('records the outcomes disabled and resent, and counts a resend as delivered for its own message only', async () => {
    const { log } = get();
    const row = { ...key(2), attempt: 1, attemptedAt: T0 };
    await log.record({ ...row, outcome: 'delivered', httpStatus: 200 });
    await log.record({ ...row, messageId: 'resend-1', outcome: 'resent', httpStatus: 200 });
    await log.record({ ...key(3), attempt: 1, attemptedAt: T0, outcome: 'disabled', error: 'disabled' });
    expect((await log.findTarget({ ...key(2), resend: true, messageId: 'resend-2' })).alreadyDelivered).toBe(
      false,
    );
    expect((await log.findTarget({ ...key(2), resend: true, messageId: 'resend-1' })).alreadyDelivered).toBe(
      true,
    );
    expect((await log.findTarget({ ...key(2), messageId: 'late-copy' })).alreadyDelivered).toBe(true);
  });
}
