import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createMssqlWebhookDeliveryLog } from '../../shared/adapters/mssql/webhook-delivery-log.js';
import type { DeadLetterQueue } from '../../shared/adapters/sqs/dead-letter-queue.js';
import type { MessageVisibility } from '../../shared/adapters/sqs/message-visibility.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import type { WebhookSettings } from '../../shared/config/webhook.js';
import type { Database } from '../../shared/core/database.js';
import { DatabasePermissionError, DatabaseUnavailableError } from '../../shared/core/database.js';
import type { WebhookRequest, WebhookSender, WebhookSendResult } from '../../shared/core/delivery/sender.js';
import {
  type DeliveryContext,
  deliverWebhook,
  type EventCopy,
  sendingClaimMs,
} from '../../shared/core/webhook/deliver.js';
import {
  ClaimNotReleasedError,
  type ClaimToSend,
  type DeliveryKey,
  type DeliveryRecord,
  type EndpointMemory,
  type WebhookDeliveryLog,
  type WebhookSubject,
} from '../../shared/core/webhook/delivery-log.js';
import { webhookEventId } from '../../shared/core/webhook/event.js';
import { signWebhook } from '../../shared/core/webhook/signature.js';
import { documentReceivedHandler } from '../../shared/lambda/document-received.js';
import { serviceMetrics, useObservability } from '../../shared/lambda/observability.js';

const EVENT = { tenant: 'demo', subjectId: 1, documentId: 123456 };
const NOW = Date.parse('2025-03-01T10:00:00.000Z');
const MESSAGE_ID = 'message-1';

/** A copy of the event as the queue hands it over: by default its first receive. */
const copy = (receiveCount = 1, finalReceive = false, messageId = MESSAGE_ID): EventCopy => ({
  messageId,
  receiveCount,
  finalReceive,
});

/** An in-memory WEBHOOK_DELIVERY and SUBJECT. */
class MemoryDeliveryLog implements WebhookDeliveryLog {
  readonly records: DeliveryRecord[] = [];
  readonly endpoints = new Map<number, EndpointMemory>();
  failing: Error | undefined;
  constructor(readonly subjects = new Map<number, WebhookSubject>()) {}
  async findTarget(key: DeliveryKey) {
    if (this.failing) throw this.failing;
    return {
      alreadyDelivered: this.records.some(
        (r) =>
          r.eventId === key.eventId &&
          (r.outcome === 'delivered' || r.outcome === 'resent') &&
          (!key.resend || r.messageId === key.messageId),
      ),
      endpoint: this.endpoints.get(key.subjectId),
      attemptsMade: this.records.filter(
        (r) =>
          r.eventId === key.eventId &&
          r.messageId === key.messageId &&
          (r.outcome === 'retrying' || r.outcome === 'failed'),
      ).length,
      subject: this.subjects.get(key.subjectId),
    };
  }
  /** Records `count` failed attempts of message `messageId`, as earlier receives would have. */
  attemptsBefore(count: number, messageId = MESSAGE_ID) {
    for (let attempt = 1; attempt <= count; attempt++) {
      this.records.push({
        eventId: webhookEventId(EVENT),
        messageId,
        subjectId: EVENT.subjectId,
        documentId: EVENT.documentId,
        attempt,
        attemptedAt: NOW - 1000,
        outcome: 'retrying',
        httpStatus: 500,
      });
    }
  }
  /** SVC_WEBHOOK_SENDING: the claim of each event, by event id. */
  readonly claims = new Map<string, { messageId: string; until: number }>();
  releaseFailing: Error | undefined;
  async claimAndFindTarget(key: DeliveryKey, { now, until }: ClaimToSend) {
    if (this.failing) throw this.failing;
    const held = this.claims.get(key.eventId);
    if (held && held.messageId !== key.messageId && held.until >= now) {
      return { ...(await this.findTarget(key)), claim: { claimed: false as const, heldUntil: held.until } };
    }
    this.claims.set(key.eventId, { messageId: key.messageId, until });
    return { ...(await this.findTarget(key)), claim: { claimed: true as const } };
  }
  async releaseSending(eventId: string, messageId: string) {
    if (this.releaseFailing) throw this.releaseFailing;
    if (this.claims.get(eventId)?.messageId === messageId) this.claims.delete(eventId);
  }
  async record(entry: DeliveryRecord) {
    if (this.failing) throw this.failing;
    this.records.push(entry);
    // The attempt is over: its copy's claim ends with the record.
    if (this.claims.get(entry.eventId)?.messageId === entry.messageId) this.claims.delete(entry.eventId);
  }
  async rememberEndpoint(subjectId: number, memory: EndpointMemory, before: EndpointMemory | undefined) {
    if (this.failing) throw this.failing;
    if (before || !this.endpoints.has(subjectId)) this.endpoints.set(subjectId, memory);
  }
  async endpointDelivered(subjectId: number, slowAt: number | null) {
    const endpoint = this.endpoints.get(subjectId);
    if (endpoint) {
      const slowSince = slowAt === null ? null : (endpoint.slowSince ?? slowAt);
      this.endpoints.set(subjectId, { ...endpoint, failingSince: null, slowSince });
    }
  }
  async endpointSlow(subjectId: number, at: number) {
    const endpoint = this.endpoints.get(subjectId);
    if (endpoint) this.endpoints.set(subjectId, { ...endpoint, slowSince: endpoint.slowSince ?? at });
  }
  async endpointFailed(subjectId: number, at: number, disableIfFailingSince: number) {
    const endpoint = this.endpoints.get(subjectId);
    if (!endpoint || endpoint.disabledAt !== null) return false;
    const failingSince = endpoint.failingSince ?? at;
    const disabledAt = failingSince <= disableIfFailingSince ? at : null;
    this.endpoints.set(subjectId, { ...endpoint, failingSince, disabledAt });
    return disabledAt !== null;
  }
}

/** A receiver that answers from a script, one result per request. */
class ScriptedSender implements WebhookSender {
  readonly requests: WebhookRequest[] = [];
  /** The time each request was given to be answered (undefined: the sender's own). */
  readonly timeouts: (number | undefined)[] = [];
  constructor(readonly script: WebhookSendResult[]) {}
  async send(request: WebhookRequest, options?: { timeoutMs?: number }) {
    this.requests.push(request);
    this.timeouts.push(options?.timeoutMs);
    return this.script.shift() ?? { kind: 'response', status: 200, durationMs: 3 };
  }
}

const status = (code: number, retryAfter?: string): WebhookSendResult => ({
  kind: 'response',
  status: code,
  retryAfter,
  durationMs: 7,
});

function context(overrides: Partial<DeliveryContext> & { subject?: WebhookSubject | null } = {}) {
  const subjects = new Map<number, WebhookSubject>();
  if (overrides.subject !== null) {
    subjects.set(
      1,
      overrides.subject ?? { webhookUrl: 'https://erp.example.cz/hook', secret: 'demo-webhook-secret' },
    );
  }
  const log = new MemoryDeliveryLog(subjects);
  const sender = new ScriptedSender([]);
  const ctx: DeliveryContext = {
    log,
    sender,
    retrySchedule: [5, 30, 120],
    allowPrivateTargets: false,
    endpointPolicy: { secretOverlapMs: 24 * 3_600_000, disableAfterMs: 120 * 3_600_000 },
    now: () => NOW,
    random: () => 0.5,
    ...overrides,
  };
  return { ctx, log: ctx.log as MemoryDeliveryLog, sender: ctx.sender as ScriptedSender };
}

describe('Function: deliverWebhook', () => {
  it('POSTs the bare document id with the secret and Standard Webhooks headers, and records it', async () => {
    const { ctx, log, sender } = context();
    const decision = await deliverWebhook(EVENT, copy(), ctx);
    expect(decision).toEqual({ action: 'done', outcome: 'delivered', attempt: 1 });
    const [request] = sender.requests;
    expect(request!.url.href).toBe('https://erp.example.cz/hook');
    expect(request!.body).toBe('123456');
    const id = webhookEventId(EVENT);
    expect(request!.headers).toMatchObject({
      'content-type': 'application/json',
      'x-peppol-webhook-secret': 'demo-webhook-secret',
      'webhook-id': id,
      'webhook-timestamp': String(NOW / 1000),
      'webhook-signature': signWebhook('demo-webhook-secret', id, NOW / 1000, '123456'),
    });
    expect(log.records).toEqual([
      {
        eventId: id,
        messageId: MESSAGE_ID,
        subjectId: 1,
        documentId: 123456,
        attempt: 1,
        attemptedAt: NOW,
        outcome: 'delivered',
        httpStatus: 200,
        durationMs: 3,
      },
    ]);
  });

  it('counts any 2xx as delivered', async () => {
    for (const code of [200, 201, 202, 204, 299]) {
      const { ctx, sender } = context();
      (sender as unknown as { script: WebhookSendResult[] }).script.push(status(code));
      expect((await deliverWebhook(EVENT, copy(), ctx)).outcome).toBe('delivered');
    }
  });

  it.each([
    [status(500), 'HTTP 500', 500],
    [status(503), 'HTTP 503', 503],
    [status(429), 'HTTP 429', 429],
    [status(404), 'HTTP 404', 404],
    [status(302), 'HTTP 302', 302],
    [
      { kind: 'error', error: 'ETIMEDOUT: no answer within 10000 ms', durationMs: 10000 } as const,
      'ETIMEDOUT',
      undefined,
    ],
    [{ kind: 'error', error: 'ECONNREFUSED', durationMs: 1 } as const, 'ECONNREFUSED', undefined],
  ])('retries after %j on the schedule', async (result, detail, httpStatus) => {
    const { ctx, log } = context({ sender: new ScriptedSender([result as WebhookSendResult]) });
    log.attemptsBefore(1);
    const decision = await deliverWebhook(EVENT, copy(2), ctx);
    expect(decision).toMatchObject({ action: 'retry', outcome: 'retrying', delaySeconds: 30, attempt: 2 });
    expect(decision.detail).toContain(detail);
    expect(log.records[1]).toMatchObject({ attempt: 2, outcome: 'retrying', retryInSeconds: 30 });
    expect(log.records[1]!.httpStatus).toBe(httpStatus);
  });

  it('records that a redirect was not followed', async () => {
    const { ctx, log } = context({ sender: new ScriptedSender([status(301)]) });
    await deliverWebhook(EVENT, copy(), ctx);
    expect(log.records[0]).toMatchObject({
      outcome: 'retrying',
      httpStatus: 301,
      error: 'redirect not followed',
    });
  });

  it('waits as long as Retry-After asks when that is longer than the schedule', async () => {
    const { ctx } = context({ sender: new ScriptedSender([status(429, '600')]) });
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'retry', delaySeconds: 600 });
    const dated = context({ sender: new ScriptedSender([status(503, 'Sat, 01 Mar 2025 11:00:00 GMT')]) });
    expect(await deliverWebhook(EVENT, copy(), dated.ctx)).toMatchObject({
      action: 'retry',
      delaySeconds: 3600,
    });
  });

  it('stops at once on 410 Gone', async () => {
    const { ctx, log } = context({ sender: new ScriptedSender([status(410)]) });
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'done', outcome: 'gone' });
    expect(log.records[0]).toMatchObject({ outcome: 'gone', httpStatus: 410 });
  });

  it('sends the event to the dead-letter queue when the last attempt fails', async () => {
    const { ctx, log } = context({ sender: new ScriptedSender([status(500)]) });
    log.attemptsBefore(3);
    expect(await deliverWebhook(EVENT, copy(4), ctx)).toMatchObject({
      action: 'dead-letter',
      outcome: 'failed',
    });
    expect(log.records[3]).toMatchObject({ attempt: 4, outcome: 'failed', httpStatus: 500 });
    expect(log.records[3]!.retryInSeconds).toBeUndefined();
  });

  it('counts the attempts it recorded, not the receives: a throttled receive uses none', async () => {
    const { ctx, log, sender } = context({ sender: new ScriptedSender([status(500)]) });
    log.attemptsBefore(1);
    // Received 9 times (8 of them never reached the function): still its second attempt, the
    // schedule's second delay follows.
    expect(await deliverWebhook(EVENT, copy(9), ctx)).toMatchObject({
      action: 'retry',
      outcome: 'retrying',
      delaySeconds: 30,
      attempt: 2,
    });
    expect(sender.requests).toHaveLength(1);
    expect(log.records[1]).toMatchObject({ attempt: 2, messageId: MESSAGE_ID });
  });

  it('counts each message apart: a copy redriven or sent again gets the whole schedule', async () => {
    const { ctx, log } = context({ sender: new ScriptedSender([status(500)]) });
    log.attemptsBefore(4, 'the-dead-lettered-message');
    expect(await deliverWebhook(EVENT, copy(1, false, 'redriven'), ctx)).toMatchObject({
      action: 'retry',
      delaySeconds: 5,
      attempt: 1,
    });
  });

  it('makes its last attempt on the queue final receive, whatever the attempts so far', async () => {
    const { ctx, log } = context({ sender: new ScriptedSender([status(500)]) });
    expect(await deliverWebhook(EVENT, copy(30, true), ctx)).toMatchObject({
      action: 'dead-letter',
      outcome: 'failed',
      attempt: 1,
    });
    expect(log.records[0]).toMatchObject({ attempt: 1, outcome: 'failed' });
  });

  it('dead-letters unsent a message that comes back after its last attempt was recorded', async () => {
    const { ctx, log, sender } = context();
    log.attemptsBefore(4);
    expect(await deliverWebhook(EVENT, copy(5), ctx)).toMatchObject({
      action: 'dead-letter',
      outcome: 'not_recorded',
      detail: 'every attempt was made (4 of 4)',
    });
    expect(sender.requests).toHaveLength(0);
    expect(log.records).toHaveLength(4);
  });

  it('does not send an event again once it was delivered, and records the duplicate', async () => {
    const { ctx, log, sender } = context();
    await deliverWebhook(EVENT, copy(), ctx);
    expect(await deliverWebhook(EVENT, copy(), ctx)).toEqual({
      action: 'done',
      outcome: 'duplicate',
      attempt: 1,
    });
    expect(sender.requests).toHaveLength(1);
    expect(log.records.map((r) => r.outcome)).toEqual(['delivered', 'duplicate']);
    // Another document of the same subject is a different event.
    await deliverWebhook({ ...EVENT, documentId: 7 }, copy(), ctx);
    expect(sender.requests).toHaveLength(2);
  });

  it("waits, sending nothing, while another copy holds the claim to send; then finds that copy's delivery", async () => {
    const { ctx, log, sender } = context();
    const eventId = webhookEventId(EVENT);
    // Another message's copy is sending the event (in the slow lane: its answer due in 10 s).
    log.claims.set(eventId, { messageId: 'message-2', until: NOW + 30_000 });
    expect(await deliverWebhook(EVENT, copy(), ctx)).toEqual({
      action: 'retry',
      outcome: 'in_flight',
      delaySeconds: 10,
      detail: 'another copy of this event is being sent',
    });
    // In the fast lane (its answer due in 2 s): a look 3 s later; a claim that only waits to lapse, 1 s.
    log.claims.set(eventId, { messageId: 'message-2', until: NOW + 22_000 });
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'retry', delaySeconds: 3 });
    log.claims.set(eventId, { messageId: 'message-2', until: NOW + 1500 });
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'retry', delaySeconds: 1 });
    // On the queue's final receive it ends: the other copy has attempts of its own.
    expect(await deliverWebhook(EVENT, copy(30, true), ctx)).toMatchObject({
      action: 'done',
      outcome: 'in_flight',
    });
    expect(sender.requests).toHaveLength(0);
    expect(log.records).toEqual([]);
    // The other copy delivers and releases its claim: this copy finds the delivery.
    await deliverWebhook(EVENT, copy(1, false, 'message-2'), ctx);
    expect(log.claims.size).toBe(0);
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'done', outcome: 'duplicate' });
    expect(sender.requests).toHaveLength(1);
  });

  it('takes a lapsed claim (an instance that died while sending), renews its own, and ends it with the record or gives it back', async () => {
    const { ctx, log, sender } = context();
    const eventId = webhookEventId(EVENT);
    log.claims.set(eventId, { messageId: 'message-2', until: NOW - 1 });
    sender.script.push(status(503));
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'retry', outcome: 'retrying' });
    expect(log.claims.size).toBe(0);
    // Held by this message (its own earlier claim): taken again.
    log.claims.set(eventId, { messageId: MESSAGE_ID, until: NOW + 30_000 });
    expect(await deliverWebhook(EVENT, copy(2), ctx)).toMatchObject({ action: 'done', outcome: 'delivered' });
    expect(sender.requests).toHaveLength(2);
    // Given back when recording fails; a release that fails is reported, the decision stands.
    const released: unknown[] = [];
    const other = { ...EVENT, documentId: 8 };
    const record = log.record.bind(log);
    log.record = async () => {
      throw new Error('disk full');
    };
    expect(await deliverWebhook(other, copy(), ctx)).toMatchObject({ action: 'done', outcome: 'delivered' });
    expect(log.claims.has(webhookEventId(other))).toBe(false);
    const third = { ...EVENT, documentId: 9 };
    log.releaseFailing = new Error('DELETE denied');
    expect(
      await deliverWebhook(third, copy(), { ...ctx, onReleaseFailure: (error) => released.push(error) }),
    ).toMatchObject({ action: 'done', outcome: 'delivered' });
    expect(released).toEqual([log.releaseFailing]);
    expect(log.claims.get(webhookEventId(third))).toMatchObject({ until: NOW + 30_000 });
    log.record = record;
  });

  it('passes on what the attempt itself throws (not a database failure), giving its claim back', async () => {
    const { ctx, log, sender } = context();
    sender.send = async () => {
      throw new TypeError('a bug in the sender');
    };
    await expect(deliverWebhook(EVENT, copy(), ctx)).rejects.toThrow('a bug in the sender');
    expect(log.records).toEqual([]);
    expect(log.claims.size).toBe(0);
  });

  it('claims for as long as its lane lets an attempt wait, plus time to record it', () => {
    expect(sendingClaimMs({ lane: 'fast', fastAnswerMs: 2000 })).toBe(22_000);
    expect(sendingClaimMs({ lane: 'slow', fastAnswerMs: 2000 })).toBe(30_000);
    expect(sendingClaimMs(undefined)).toBe(30_000);
  });

  it('skips a subject without WEBHOOK_URL and records why', async () => {
    const { ctx, log, sender } = context({ subject: { webhookUrl: null, secret: 's' } });
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'done', outcome: 'skipped' });
    expect(sender.requests).toHaveLength(0);
    expect(log.records[0]).toMatchObject({ outcome: 'skipped', error: 'the subject has no WEBHOOK_URL' });
  });

  it('records an unknown subject once and does not retry it', async () => {
    const { ctx, log, sender } = context({ subject: null });
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({
      action: 'done',
      outcome: 'unknown_subject',
    });
    expect(sender.requests).toHaveLength(0);
    expect(log.records[0]).toMatchObject({ outcome: 'unknown_subject' });
  });

  it('refuses a private IP literal or a non-http URL without sending, and does not retry', async () => {
    for (const webhookUrl of ['http://169.254.169.254/latest/meta-data/', 'ftp://erp.example.cz/x']) {
      const { ctx, log, sender } = context({ subject: { webhookUrl, secret: 's' } });
      expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'done', outcome: 'refused' });
      expect(sender.requests).toHaveLength(0);
      expect(log.records[0]!.outcome).toBe('refused');
    }
  });

  it('records a target the sender refused after resolving it', async () => {
    const refusal = {
      kind: 'refused',
      reason: 'hook.example resolves to 10.0.0.5, which is private',
      durationMs: 2,
    };
    const { ctx, log } = context({ sender: new ScriptedSender([refusal as WebhookSendResult]) });
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'done', outcome: 'refused' });
    expect(log.records[0]).toMatchObject({ outcome: 'refused', error: refusal.reason });
  });

  it('sends without the secret headers when the subject has no secret', async () => {
    const { ctx, sender } = context({ subject: { webhookUrl: 'https://erp.example.cz/hook', secret: null } });
    await deliverWebhook(EVENT, copy(), ctx);
    expect(sender.requests[0]!.headers['x-peppol-webhook-secret']).toBeUndefined();
    expect(sender.requests[0]!.headers['webhook-signature']).toBeUndefined();
    expect(sender.requests[0]!.headers['webhook-id']).toBe(webhookEventId(EVENT));
  });

  it('retries on schedule, without sending, when the database fails before the attempt', async () => {
    const { ctx, log, sender } = context();
    log.failing = new DatabaseUnavailableError('connection refused');
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({
      action: 'retry',
      outcome: 'not_recorded',
      delaySeconds: 5,
    });
    // Nothing can be counted: the receive count stands in for the attempts.
    expect(await deliverWebhook(EVENT, copy(2), ctx)).toMatchObject({
      action: 'retry',
      outcome: 'not_recorded',
      delaySeconds: 30,
    });
    expect(await deliverWebhook(EVENT, copy(4), ctx)).toMatchObject({
      action: 'dead-letter',
      outcome: 'not_recorded',
    });
    expect(sender.requests).toHaveLength(0);
  });

  it('keeps a delivery delivered when recording it fails, and says so', async () => {
    const failures: DeliveryRecord[] = [];
    const { ctx, log } = context({ onRecordFailure: (_error, entry) => failures.push(entry) });
    log.record = async () => {
      throw new Error('disk full');
    };
    expect(await deliverWebhook(EVENT, copy(), ctx)).toEqual({
      action: 'done',
      outcome: 'delivered',
      attempt: 1,
    });
    expect(failures.map((f) => f.outcome)).toEqual(['delivered']);
  });

  it('says the claim was kept, not that recording failed, when only the end of the claim is refused', async () => {
    const recordFailures: DeliveryRecord[] = [];
    const releaseFailures: unknown[] = [];
    const { ctx, log } = context({
      onRecordFailure: (_error, entry) => recordFailures.push(entry),
      onReleaseFailure: (error) => releaseFailures.push(error),
    });
    const denied = new DatabasePermissionError('dbo.SVC_WEBHOOK_SENDING', 'DELETE', '229');
    let releases = 0;
    const release = log.releaseSending.bind(log);
    log.releaseSending = async (eventId, messageId) => {
      releases++;
      return release(eventId, messageId);
    };
    log.record = async (entry) => {
      log.records.push(entry);
      throw new ClaimNotReleasedError(denied);
    };
    expect(await deliverWebhook(EVENT, copy(), ctx)).toEqual({
      action: 'done',
      outcome: 'delivered',
      attempt: 1,
    });
    expect(log.records.map((r) => r.outcome)).toEqual(['delivered']);
    expect(recordFailures).toEqual([]);
    expect(releaseFailures).toEqual([denied]);
    // Not given back once more (it would be refused alike): the claim lapses at its time.
    expect(releases).toBe(0);
  });
});

// ----------------------------------------------------------------------------------------------
// The SQS consumer around it, with fakes for the queue and the tenant database.

function record(
  body: string,
  receiveCount = 1,
  messageId = `m-${Math.random()}`,
  /** A copy in the slow lane, continuing the series of this message. */
  slowLaneSeries?: string,
): SQSRecord {
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: '0',
      SenderId: 'x',
      ApproximateFirstReceiveTimestamp: '0',
    },
    messageAttributes:
      slowLaneSeries === undefined
        ? {}
        : ({
            svcLane: { dataType: 'String', stringValue: 'slow' },
            svcSeries: { dataType: 'String', stringValue: slowLaneSeries },
          } as SQSRecord['messageAttributes']),
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-central-1:0:document-received',
    awsRegion: 'eu-central-1',
  };
}

const registry = parseTenantRegistry({
  tenants: {
    demo: {
      database: { kind: 'embedded', name: 'unit' },
      dataApiUsers: [{ name: 'u', passwordHash: 'scrypt$16384$8$1$c2FsdA==$a2V5' }],
      dataSources: '*',
    },
  },
});

/** Answers the delivery-log read and accepts inserts, like WEBHOOK_DELIVERY would. */
function fakeDatabase(
  subjectUrl: string | null,
): Database & { inserts: unknown[][]; sentElsewhere: Set<number> } {
  const inserts: unknown[][] = [];
  /** Documents whose event another copy holds the claim to send. */
  const sentElsewhere = new Set<number>();
  const delivered = new Set<unknown>();
  return {
    inserts,
    sentElsewhere,
    dialect: { name: 'embedded', quoteIdent: (n) => `"${n}"`, param: (i) => `$${i}`, paginate: () => '' },
    async query(sql, params = []) {
      // SVC_WEBHOOK_SENDING: every claim granted (the copies of one batch run one after another).
      if (sql.startsWith('DELETE FROM "dbo"."SVC_WEBHOOK_SENDING"')) return [];
      if (sql.startsWith('SELECT') || sql.startsWith('WITH "claimed"')) {
        const subject =
          params[1] === 1 ? { subjectId: 1, webhookUrl: subjectUrl, secret: 'k' } : { subjectId: null };
        const attemptsMade = inserts.filter(
          (row) =>
            row[0] === params[0] && row[10] === params[3] && ['retrying', 'failed'].includes(String(row[5])),
        ).length;
        const claimed = sentElsewhere.has(Number(params[2])) ? 0 : 1;
        return [{ claimed, delivered: delivered.has(params[0]) ? 1 : 0, attemptsMade, ...subject }];
      }
      // WEBHOOK_ENDPOINT's statements: not remembered here (every event finds the endpoint new).
      if (!sql.includes('INSERT INTO "dbo"."WEBHOOK_DELIVERY"')) return [];
      inserts.push([...params]);
      if (params[5] === 'delivered') delivered.add(params[0]);
      return [];
    },
    streamBatches: () => {
      throw new Error('not used');
    },
    findDataSource: async () => undefined,
    listDataSources: async () => [],
    transaction: () => {
      throw new Error('not used');
    },
    close: async () => undefined,
  };
}

const SETTINGS: WebhookSettings = {
  retrySchedule: [1, 2, 4],
  maxAttempts: 4,
  maxReceives: 10,
  allowPrivateTargets: false,
  timeoutMs: 10_000,
  fastAnswerMs: 2_000,
  endpointPolicy: { secretOverlapMs: 24 * 3_600_000, disableAfterMs: 120 * 3_600_000 },
};

function consumer(
  script: WebhookSendResult[],
  subjectUrl: string | null = 'https://erp.example.cz/hook',
  deadLetterFails = false,
) {
  const sender = new ScriptedSender(script);
  const postponed: [string, number][] = [];
  const deadLettered: [string, string | undefined][] = [];
  /** Records handed to the slow lane: message id, delay. */
  const handed: [string, number][] = [];
  const visibility: MessageVisibility = {
    async postpone(receiptHandle, seconds) {
      postponed.push([receiptHandle, seconds]);
    },
  };
  const deadLetterQueue: DeadLetterQueue = {
    async send(sqsRecord, tenant) {
      if (deadLetterFails) throw new Error('AccessDenied');
      deadLettered.push([sqsRecord.messageId, tenant]);
      return `dlq-${sqsRecord.messageId}`;
    },
  };
  const db = fakeDatabase(subjectUrl);
  const handler = documentReceivedHandler({
    tenant: async (id) => registry.get(id),
    database: async () => db,
    settings: () => SETTINGS,
    sender: async () => sender,
    visibility: () => visibility,
    slowLane: () => ({
      async hand(sqsRecord, _tenant, delaySeconds) {
        handed.push([sqsRecord.messageId, delaySeconds]);
      },
    }),
    deadLetterQueue: () => deadLetterQueue,
    random: () => 0.5,
  });
  const run = (...records: SQSRecord[]) => handler({ Records: records } as SQSEvent);
  return { run, sender, postponed, deadLettered, handed, db };
}

const body = (documentId: number, subjectId = 1, tenant = 'demo') =>
  JSON.stringify({ tenant, subjectId, documentId });

describe('Function: deliverWebhook (rotation, disabling, resend)', () => {
  const HOUR = 3_600_000;

  it('signs with the new and the previous secret for the overlap after the secret changed', async () => {
    let clock = NOW;
    const { ctx, log, sender } = context({ now: () => clock });
    await deliverWebhook(EVENT, copy(), ctx);
    log.subjects.set(1, { webhookUrl: 'https://erp.example.cz/hook', secret: 'rotated' });
    clock = NOW + HOUR;
    await deliverWebhook({ ...EVENT, documentId: 2 }, copy(1, false, 'm-2'), ctx);
    clock = NOW + 25 * HOUR;
    await deliverWebhook({ ...EVENT, documentId: 3 }, copy(1, false, 'm-3'), ctx);
    const [first, during, after] = sender.requests.map((r) => r.headers);
    expect(first!['webhook-signature']!.split(' ')).toHaveLength(1);
    const id = webhookEventId({ ...EVENT, documentId: 2 });
    const ts = (NOW + HOUR) / 1000;
    expect(during!['webhook-signature']).toBe(
      `${signWebhook('rotated', id, ts, '2')} ${signWebhook('demo-webhook-secret', id, ts, '2')}`,
    );
    expect(during!['x-peppol-webhook-secret']).toBe('rotated');
    // The overlap (24 h) counts from the first delivery under the new secret.
    expect(after!['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(log.endpoints.get(1)).toMatchObject({
      secret: 'rotated',
      previousSecret: 'demo-webhook-secret',
      secretChangedAt: NOW + HOUR,
    });
  });

  it('disables the endpoint at the first failure WEBHOOK_DISABLE_AFTER_HOURS after the first, once; then records disabled', async () => {
    let clock = NOW;
    const { ctx, log, sender } = context({ now: () => clock });
    sender.script.push(status(500), status(500), status(500));
    expect((await deliverWebhook(EVENT, copy(), ctx)).endpointDisabled).toBeUndefined();
    clock = NOW + 119 * HOUR;
    expect(
      (await deliverWebhook({ ...EVENT, documentId: 2 }, copy(1, false, 'm-2'), ctx)).endpointDisabled,
    ).toBeUndefined();
    clock = NOW + 120 * HOUR;
    expect(await deliverWebhook({ ...EVENT, documentId: 3 }, copy(1, false, 'm-3'), ctx)).toMatchObject({
      action: 'retry',
      endpointDisabled: { failingSince: NOW },
    });
    const later = await deliverWebhook({ ...EVENT, documentId: 4 }, copy(1, false, 'm-4'), ctx);
    expect(later).toMatchObject({ action: 'done', outcome: 'disabled' });
    expect(later.endpointDisabled).toBeUndefined();
    expect(sender.requests).toHaveLength(3);
    expect(log.records.at(-1)).toMatchObject({ documentId: 4, outcome: 'disabled' });
  });

  it('starts the failure count afresh after a delivery', async () => {
    let clock = NOW;
    const { ctx, log, sender } = context({ now: () => clock });
    sender.script.push(status(500), status(200), status(500));
    await deliverWebhook(EVENT, copy(), ctx);
    clock = NOW + 60 * HOUR;
    await deliverWebhook({ ...EVENT, documentId: 2 }, copy(1, false, 'm-2'), ctx);
    clock = NOW + 121 * HOUR;
    expect(
      (await deliverWebhook({ ...EVENT, documentId: 3 }, copy(1, false, 'm-3'), ctx)).endpointDisabled,
    ).toBeUndefined();
    expect(log.endpoints.get(1)).toMatchObject({ failingSince: NOW + 121 * HOUR, disabledAt: null });
  });

  it('sends a resend of a delivered event, recorded as resent, and a second copy of that resend not again', async () => {
    const { ctx, log, sender } = context();
    await deliverWebhook(EVENT, copy(), ctx);
    expect(await deliverWebhook(EVENT, copy(1, false, 'm-2'), ctx)).toMatchObject({ outcome: 'duplicate' });
    expect(await deliverWebhook({ ...EVENT, resend: true }, copy(1, false, 'm-3'), ctx)).toMatchObject({
      outcome: 'resent',
    });
    expect(await deliverWebhook({ ...EVENT, resend: true }, copy(1, false, 'm-3'), ctx)).toMatchObject({
      outcome: 'duplicate',
    });
    expect(sender.requests.map((r) => r.headers['webhook-id'])).toEqual([
      webhookEventId(EVENT),
      webhookEventId(EVENT),
    ]);
    expect(log.records.map((r) => r.outcome)).toEqual(['delivered', 'duplicate', 'resent', 'duplicate']);
  });
});

describe('Function: deliverWebhook (delivery lanes)', () => {
  const FAST = { lane: 'fast', fastAnswerMs: 2000 } as const;
  const SLOW = { lane: 'slow', fastAnswerMs: 2000 } as const;
  const timedOut: WebhookSendResult = { kind: 'error', error: 'no answer', durationMs: 2000, timedOut: true };
  const answered = (durationMs: number): WebhookSendResult => ({ kind: 'response', status: 200, durationMs });

  it('gives a receiver the fast lane while it answers in time, the slow lane from a missed answer until it answers in time again', async () => {
    const { ctx, log, sender } = context({ lanes: FAST });
    // A receiver never seen: the fast lane, with its time.
    sender.script.push(timedOut);
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({
      action: 'retry',
      outcome: 'retrying',
      delaySeconds: 0,
    });
    expect(sender.timeouts).toEqual([2000]);
    expect(log.endpoints.get(1)?.slowSince).toBe(NOW);
    // Not a failure: the receiver has the contract's 10 s in the slow lane.
    expect(log.endpoints.get(1)?.failingSince).toBeNull();
    // Another event of the same receiver, in the fast lane: handed over unsent and unrecorded.
    const other = { ...EVENT, documentId: 654321 };
    const recorded = log.records.length;
    expect(await deliverWebhook(other, copy(1, false, 'other'), ctx)).toMatchObject({
      action: 'slow-lane',
      outcome: 'slow_lane',
    });
    expect(sender.requests).toHaveLength(1);
    expect(log.records).toHaveLength(recorded);
    // In the slow lane, answered slowly: delivered, and still slow.
    sender.script.push(answered(5000));
    expect(await deliverWebhook(EVENT, copy(), { ...ctx, lanes: SLOW })).toMatchObject({
      outcome: 'delivered',
      attempt: 2,
    });
    expect(sender.timeouts.at(-1)).toBeUndefined();
    expect(log.endpoints.get(1)?.slowSince).toBe(NOW);
    // Answered in time: the fast lane again.
    sender.script.push(answered(300));
    await deliverWebhook(other, copy(1, false, 'other'), { ...ctx, lanes: SLOW });
    expect(log.endpoints.get(1)?.slowSince).toBeNull();
    sender.script.push(answered(300));
    expect(await deliverWebhook({ ...EVENT, documentId: 777 }, copy(1, false, 'third'), ctx)).toMatchObject({
      outcome: 'delivered',
    });
    expect(sender.timeouts.at(-1)).toBe(2000);
  });

  it('hands a failing receiver to the slow lane at once', async () => {
    const { ctx, log, sender } = context({ lanes: FAST });
    sender.script.push(status(503));
    expect(await deliverWebhook(EVENT, copy(), ctx)).toMatchObject({ action: 'retry', outcome: 'retrying' });
    expect(log.endpoints.get(1)?.failingSince).toBe(NOW);
    expect(await deliverWebhook({ ...EVENT, documentId: 2 }, copy(1, false, 'm2'), ctx)).toMatchObject({
      action: 'slow-lane',
      detail: 'the receiver is failing',
    });
    expect(sender.requests).toHaveLength(1);
  });
});

describe('Function: documentReceivedHandler', () => {
  it('deletes delivered records and hands failed ones to the slow lane, due after the next delay', async () => {
    const { run, postponed, handed, db, sender } = consumer([status(200), status(500)]);
    const ok = record(body(1), 1, 'ok');
    // Received twice, but the first receive never reached the function: its first attempt.
    const failing = record(body(2), 2, 'failing');
    const result = await run(ok, failing);
    // Both leave the fast lane: one delivered, one for the slow lane.
    expect(result.batchItemFailures).toEqual([]);
    // Attempt 1 failed: the schedule's first delay (1 s) before attempt 2, in the slow lane.
    expect(handed).toEqual([['failing', 1]]);
    expect(postponed).toEqual([]);
    // The fast lane's attempts wait its time for an answer.
    expect(sender.timeouts).toEqual([SETTINGS.fastAnswerMs, SETTINGS.fastAnswerMs]);
    expect(db.inserts.map((row) => [row[3], row[5], row[10]])).toEqual([
      [1, 'delivered', 'ok'],
      [1, 'retrying', 'failing'],
    ]);
  });

  it('keeps a failed record of the slow lane with its visibility set to the next delay, counted with its series', async () => {
    const { run, postponed, handed, db, sender } = consumer([status(500)]);
    const failing = record(body(2), 1, 'slow-copy', 'first-copy');
    const result = await run(failing);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'slow-copy' }]);
    expect(postponed).toEqual([['rh-slow-copy', 1]]);
    expect(handed).toEqual([]);
    // The slow lane's attempt has the sender's whole time (10 s).
    expect(sender.timeouts).toEqual([undefined]);
    // Recorded under the message that began the series.
    expect(db.inserts.map((row) => [row[3], row[5], row[10]])).toEqual([[1, 'retrying', 'first-copy']]);
  });

  it('hands an attempt the fast lane got no answer to in its time to the slow lane at once, recorded', async () => {
    const { run, handed, db } = consumer([
      { kind: 'error', error: 'no answer within 2000 ms', durationMs: 2001, timedOut: true },
    ]);
    const result = await run(record(body(3), 1, 'hanging'));
    expect(result.batchItemFailures).toEqual([]);
    expect(handed).toEqual([['hanging', 0]]);
    expect(db.inserts.map((row) => [row[3], row[5], row[7], row[9]])).toEqual([
      [1, 'retrying', expect.stringMatching(/fast lane's 2 s/), 0],
    ]);
  });

  it('gives every attempt of the schedule however often the queue handed the message out, then dead-letters it itself', async () => {
    const { run, postponed, deadLettered, db } = consumer([
      status(503),
      status(503),
      status(503),
      status(503),
    ]);
    // Receive counts inflated by receives that never ran (a throttled consumer), in the slow lane.
    const results = [];
    for (const receiveCount of [3, 4, 7, 9])
      results.push(await run(record(body(1), receiveCount, 'throttled', 'throttled')));
    expect(results.map((r) => r.batchItemFailures)).toEqual([
      [{ itemIdentifier: 'throttled' }],
      [{ itemIdentifier: 'throttled' }],
      [{ itemIdentifier: 'throttled' }],
      // Sent to the dead-letter queue: the original may be deleted.
      [],
    ]);
    expect(postponed).toEqual([
      ['rh-throttled', 1],
      ['rh-throttled', 2],
      ['rh-throttled', 4],
    ]);
    expect(deadLettered).toEqual([['throttled', 'demo']]);
    expect(db.inserts.map((row) => [row[3], row[5]])).toEqual([
      [1, 'retrying'],
      [2, 'retrying'],
      [3, 'retrying'],
      [4, 'failed'],
    ]);
  });

  it("makes the last attempt on the queue's final receive and dead-letters it itself", async () => {
    const { run, postponed, deadLettered, db } = consumer([status(503)]);
    const result = await run(record(body(1), SETTINGS.maxReceives, 'final', 'final'));
    expect(result.batchItemFailures).toEqual([]);
    expect(postponed).toEqual([]);
    expect(deadLettered).toEqual([['final', 'demo']]);
    expect(db.inserts.map((row) => [row[3], row[5]])).toEqual([[1, 'failed']]);
  });

  it('falls back to the redrive policy when the dead-letter queue cannot be reached', async () => {
    const { run, postponed } = consumer([status(503)], 'https://erp.example.cz/hook', true);
    const result = await run(record(body(1), SETTINGS.maxReceives, 'final', 'final'));
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'final' }]);
    expect(postponed).toEqual([['rh-final', 0]]);
  });

  it('deletes a record after 410 without any further attempt', async () => {
    const { run, postponed } = consumer([status(410)]);
    expect((await run(record(body(1)))).batchItemFailures).toEqual([]);
    expect(postponed).toEqual([]);
  });

  it('hands a copy whose event another copy is sending to the slow lane for a later look: nothing sent, recorded or counted as an attempt', async () => {
    const counted: unknown[] = [];
    const previous = serviceMetrics();
    useObservability({ metrics: { count: (values, dimensions) => counted.push([values, dimensions]) } });
    const { run, db, sender, handed } = consumer([]);
    db.sentElsewhere.add(77);
    const result = await run(record(body(77), 1, 'waiting-copy')).finally(() =>
      useObservability({ metrics: previous }),
    );
    expect(result.batchItemFailures).toEqual([]);
    expect(handed).toEqual([['waiting-copy', 1]]);
    expect(sender.requests).toHaveLength(0);
    expect(db.inserts).toHaveLength(0);
    expect(counted).toContainEqual([
      { WebhookAttempts: 0, WebhookFailures: 0 },
      [{}, { outcome: 'in_flight' }],
    ]);
  });

  it('sends two copies of one event in a batch once', async () => {
    const { run, sender, db } = consumer([]);
    const result = await run(record(body(9), 1, 'a'), record(body(9), 1, 'b'), record(body(10), 1, 'c'));
    expect(result.batchItemFailures).toEqual([]);
    expect(sender.requests.map((r) => r.body).sort()).toEqual(['10', '9']);
    expect(db.inserts.map((row) => row[5]).sort()).toEqual(['delivered', 'delivered', 'duplicate']);
  });

  it('sends unreadable events and unknown tenants to the dead-letter queue without sending anything', async () => {
    const { run, sender, postponed, deadLettered } = consumer([]);
    const result = await run(record('not json', 1, 'bad'), record(body(1, 1, 'nobody'), 1, 'stranger'));
    expect(result.batchItemFailures).toEqual([]);
    expect(postponed).toEqual([]);
    expect(deadLettered.sort()).toEqual([
      ['bad', undefined],
      ['stranger', 'nobody'],
    ]);
    expect(sender.requests).toHaveLength(0);
  });

  it('keeps a record whose handling throws (the message comes back: nothing is lost)', async () => {
    const { run } = consumer([]);
    const crashing = documentReceivedHandler({
      tenant: async () => {
        throw new Error('Secrets Manager unavailable');
      },
    });
    const result = await crashing({ Records: [record(body(1), 1, 'x')] } as SQSEvent);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'x' }]);
    expect((await run(record(body(1), 1, 'y'))).batchItemFailures).toEqual([]);
  });

  it('still reports the failure when the visibility cannot be changed', async () => {
    const handler = documentReceivedHandler({
      tenant: async (id) => registry.get(id),
      database: async () => fakeDatabase('https://erp.example.cz/hook'),
      settings: () => ({ ...SETTINGS, retrySchedule: [1], maxAttempts: 2 }),
      sender: async () => new ScriptedSender([status(500)]),
      visibility: () => ({
        postpone: async () => {
          throw new Error('AccessDenied');
        },
      }),
    });
    const result = await handler({ Records: [record(body(1), 1, 'z', 'z')] } as SQSEvent);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'z' }]);
  });
});

describe('Function: createMssqlWebhookDeliveryLog', () => {
  it('sends parameterised T-SQL for infra/sql/mssql/service/040-webhook.sql', async () => {
    const sent: { sql: string; params: readonly unknown[] }[] = [];
    const log = createMssqlWebhookDeliveryLog(
      {
        async query(sql, params = []) {
          sent.push({ sql, params });
          return sql.startsWith('SELECT')
            ? [{ delivered: 0, subjectId: 1, webhookUrl: 'https://x.example/h', secret: '' }]
            : [];
        },
      },
      'acme',
    );
    expect(
      await log.findTarget({ eventId: 'msg_1', subjectId: 1, documentId: 123456, messageId: 'm-1' }),
    ).toEqual({
      alreadyDelivered: false,
      attemptsMade: 0,
      subject: { webhookUrl: 'https://x.example/h', secret: null },
    });
    await log.record({
      eventId: 'msg_1',
      messageId: 'm-1',
      subjectId: 1,
      documentId: 123456,
      attempt: 2,
      attemptedAt: Date.parse('2025-03-01T10:00:00.250Z'),
      outcome: 'retrying',
      httpStatus: 503,
      error: 'x'.repeat(500),
      durationMs: 12.6,
      retryInSeconds: 30,
    });
    const [select, insert] = sent;
    expect(select!.sql).toContain('FROM [dbo].[WEBHOOK_DELIVERY]');
    expect(select!.sql).toContain('[EVENT_ID] = @p1');
    expect(select!.sql).toContain('LEFT JOIN [dbo].[SUBJECT] AS [s] ON [s].[ID] = @p2');
    // The attempts of this message: by subject and document (the index), event and message.
    expect(select!.sql).toContain(
      '[SUBJECT_ID] = @p2 AND [DOCUMENT_ID] = @p3 AND [EVENT_ID] = @p1 AND [MESSAGE_ID] = @p4',
    );
    expect(select!.sql).toContain("[OUTCOME] IN ('retrying', 'failed')) AS [attemptsMade]");
    // The tenant's rows only: tenants may share a database.
    expect(select!.sql).toContain('[TENANT] = @p6');
    expect(select!.sql).toContain('[e].[TENANT] = @p6 AND [e].[SUBJECT_ID] = [s].[ID]');
    expect(select!.params).toEqual(['msg_1', 1, 123456, 'm-1', 0, 'acme']);
    expect(insert!.sql).toMatch(
      /^INSERT INTO \[dbo\]\.\[WEBHOOK_DELIVERY\] \(\[EVENT_ID\], .*\[RETRY_IN_SECONDS\], \[MESSAGE_ID\],\s+\[TENANT\]\)/s,
    );
    // The attempt logs' one writer: the time typed as its column, as the notifications' log does.
    expect(insert!.sql).toContain(
      'VALUES (@p1, @p2, @p3, @p4, CAST(@p5 AS datetime2(3)), @p6, @p7, @p8, @p9, @p10, @p11, @p12)',
    );
    expect(insert!.params).toEqual([
      'msg_1',
      1,
      123456,
      2,
      '2025-03-01 10:00:00.250',
      'retrying',
      503,
      'x'.repeat(400),
      13,
      30,
      'm-1',
      'acme',
    ]);
  });
});
