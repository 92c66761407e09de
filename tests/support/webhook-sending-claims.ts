import { expect, it } from 'vitest';
import type { WebhookDeliveryLog } from '../../shared/core/webhook/delivery-log.js';

/**
 * The receipt webhook's claims to send (SVC_WEBHOOK_SENDING, CONTRACT 6) as each SQL adapter must
 * keep them, on the embedded database and on T-SQL: of copies claiming one event at once, exactly
 * one sends; a claim is its message's until released or lapsed; tenants keep their own.
 * `logs(n)` gives `n` delivery logs of tenant `demo`, each on a session of its own where the
 * database has sessions (T-SQL), and `other` one of another tenant.
 */
export function sendingClaimCases(
  get: () => { logs: (count: number) => WebhookDeliveryLog[]; other: WebhookDeliveryLog },
) {
  const event = (label: string) => `msg_claim-${label}-${process.pid}-${Date.now().toString(36)}`;
  /** A copy of message `messageId` claims event `eventId` for [now, until]: whether it may send. */
  const claim = async (
    log: WebhookDeliveryLog,
    eventId: string,
    messageId: string,
    now: number,
    until: number,
  ) =>
    (await log.claimAndFindTarget({ eventId, messageId, subjectId: 1, documentId: 1 }, { now, until })).claim;

  it('of 12 copies claiming one event at once, exactly one may send; the others learn until when', async () => {
    const logs = get().logs(12);
    const eventId = event('flood');
    const now = Date.now();
    const claims = await Promise.all(
      logs.map((log, n) => claim(log, eventId, `message-${n}`, now, now + 22_000)),
    );
    expect(claims.filter((claim) => claim.claimed)).toHaveLength(1);
    for (const claim of claims.filter((found) => !found.claimed)) {
      // Read in the statement's own view: the time of the claim that won, or none yet (null).
      if (!claim.claimed && claim.heldUntil !== null)
        expect(Math.abs(claim.heldUntil - (now + 22_000))).toBeLessThan(5);
    }
  });

  it("is its message's until released (renewed by it), then another's; a lapsed one is taken over; tenants apart", async () => {
    const [log] = get().logs(1);
    const eventId = event('turns');
    const now = Date.now();
    expect(await claim(log!, eventId, 'first', now, now + 30_000)).toEqual({ claimed: true });
    expect(await claim(log!, eventId, 'second', now + 1000, now + 31_000)).toMatchObject({
      claimed: false,
    });
    // Its own message renews it (the next attempt of its series).
    expect(await claim(log!, eventId, 'first', now + 2000, now + 32_000)).toEqual({ claimed: true });
    // Another tenant's event of the same id is its own.
    expect(await claim(get().other, eventId, 'second', now + 2000, now + 32_000)).toEqual({
      claimed: true,
    });
    // Released only by its message.
    await log!.releaseSending(eventId, 'second');
    expect(await claim(log!, eventId, 'second', now + 3000, now + 33_000)).toMatchObject({
      claimed: false,
    });
    await log!.releaseSending(eventId, 'first');
    expect(await claim(log!, eventId, 'second', now + 3000, now + 33_000)).toEqual({ claimed: true });
    // Lapsed (its instance died): taken over.
    expect(await claim(log!, eventId, 'third', now + 34_000, now + 60_000)).toEqual({ claimed: true });
    expect(await claim(log!, eventId, 'second', now + 35_000, now + 61_000)).toMatchObject({
      claimed: false,
      heldUntil: now + 60_000,
    });
  });

  it("reads, in the claim's round trip, the delivery its previous holder recorded before releasing it", async () => {
    const [log] = get().logs(1);
    const eventId = event('handover');
    const key = { eventId, subjectId: 1, documentId: 1 };
    const now = Date.now();
    const first = await log!.claimAndFindTarget({ ...key, messageId: 'first' }, { now, until: now + 22_000 });
    expect(first).toMatchObject({ claim: { claimed: true }, alreadyDelivered: false });
    await log!.record({
      ...key,
      messageId: 'first',
      attempt: 1,
      attemptedAt: now,
      outcome: 'delivered',
      httpStatus: 200,
    });
    await log!.releaseSending(eventId, 'first');
    const second = await log!.claimAndFindTarget(
      { ...key, messageId: 'second' },
      { now, until: now + 22_000 },
    );
    expect(second).toMatchObject({ claim: { claimed: true }, alreadyDelivered: true });
  });
}
