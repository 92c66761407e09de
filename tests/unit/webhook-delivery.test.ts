import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createMssqlWebhookDeliveryLog } from '../../shared/adapters/mssql/webhook-delivery-log.js';
import type { MessageVisibility } from '../../shared/adapters/sqs/message-visibility.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import type { Database } from '../../shared/core/database.js';
import { DatabaseUnavailableError } from '../../shared/core/database.js';
import {
  type DeliveryContext,
  deliverWebhook,
  type WebhookRequest,
  type WebhookSender,
  type WebhookSendResult,
} from '../../shared/core/webhook/deliver.js';
import type {
  DeliveryRecord,
  WebhookDeliveryLog,
  WebhookSubject,
} from '../../shared/core/webhook/delivery-log.js';
import { webhookEventId } from '../../shared/core/webhook/event.js';
import { signWebhook } from '../../shared/core/webhook/signature.js';
import { documentReceivedHandler } from '../../shared/lambda/document-received.js';

const EVENT = { tenant: 'demo', subjectId: 1, documentId: 123456 };
const NOW = Date.parse('2025-03-01T10:00:00.000Z');

/** An in-memory WEBHOOK_DELIVERY and SUBJECT. */
class MemoryDeliveryLog implements WebhookDeliveryLog {
  readonly records: DeliveryRecord[] = [];
  failing: Error | undefined;
  constructor(readonly subjects = new Map<number, WebhookSubject>()) {}
  async findTarget(eventId: string, subjectId: number) {
    if (this.failing) throw this.failing;
    return {
      alreadyDelivered: this.records.some((r) => r.eventId === eventId && r.outcome === 'delivered'),
      subject: this.subjects.get(subjectId),
    };
  }
  async record(entry: DeliveryRecord) {
    if (this.failing) throw this.failing;
    this.records.push(entry);
  }
}

/** A receiver that answers from a script, one result per request. */
class ScriptedSender implements WebhookSender {
  readonly requests: WebhookRequest[] = [];
  constructor(private readonly script: WebhookSendResult[]) {}
  async send(request: WebhookRequest) {
    this.requests.push(request);
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
    now: () => NOW,
    random: () => 0.5,
    ...overrides,
  };
  return { ctx, log: ctx.log as MemoryDeliveryLog, sender: ctx.sender as ScriptedSender };
}

describe('Function: deliverWebhook', () => {
  it('POSTs the bare document id with the secret and Standard Webhooks headers, and records it', async () => {
    const { ctx, log, sender } = context();
    const decision = await deliverWebhook(EVENT, 1, ctx);
    expect(decision).toEqual({ action: 'done', outcome: 'delivered' });
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
      expect((await deliverWebhook(EVENT, 1, ctx)).outcome).toBe('delivered');
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
    const decision = await deliverWebhook(EVENT, 2, ctx);
    expect(decision).toMatchObject({ action: 'retry', outcome: 'retrying', delaySeconds: 30 });
    expect(decision.detail).toContain(detail);
    expect(log.records[0]).toMatchObject({ attempt: 2, outcome: 'retrying', retryInSeconds: 30 });
    expect(log.records[0]!.httpStatus).toBe(httpStatus);
  });

  it('records that a redirect was not followed', async () => {
    const { ctx, log } = context({ sender: new ScriptedSender([status(301)]) });
    await deliverWebhook(EVENT, 1, ctx);
    expect(log.records[0]).toMatchObject({
      outcome: 'retrying',
      httpStatus: 301,
      error: 'redirect not followed',
    });
  });

  it('waits as long as Retry-After asks when that is longer than the schedule', async () => {
    const { ctx } = context({ sender: new ScriptedSender([status(429, '600')]) });
    expect(await deliverWebhook(EVENT, 1, ctx)).toMatchObject({ action: 'retry', delaySeconds: 600 });
    const dated = context({ sender: new ScriptedSender([status(503, 'Sat, 01 Mar 2025 11:00:00 GMT')]) });
    expect(await deliverWebhook(EVENT, 1, dated.ctx)).toMatchObject({ action: 'retry', delaySeconds: 3600 });
  });

  it('stops at once on 410 Gone', async () => {
    const { ctx, log } = context({ sender: new ScriptedSender([status(410)]) });
    expect(await deliverWebhook(EVENT, 1, ctx)).toMatchObject({ action: 'done', outcome: 'gone' });
    expect(log.records[0]).toMatchObject({ outcome: 'gone', httpStatus: 410 });
  });

  it('sends the event to the dead-letter queue when the last attempt fails', async () => {
    const { ctx, log } = context({ sender: new ScriptedSender([status(500)]) });
    expect(await deliverWebhook(EVENT, 4, ctx)).toMatchObject({ action: 'dead-letter', outcome: 'failed' });
    expect(log.records[0]).toMatchObject({ attempt: 4, outcome: 'failed', httpStatus: 500 });
    expect(log.records[0]!.retryInSeconds).toBeUndefined();
  });

  it('does not send beyond the schedule when the queue brings a message back too often', async () => {
    const { ctx, log, sender } = context();
    expect(await deliverWebhook(EVENT, 5, ctx)).toMatchObject({ action: 'dead-letter' });
    expect(sender.requests).toHaveLength(0);
    expect(log.records).toHaveLength(0);
  });

  it('does not send an event again once it was delivered, and records the duplicate', async () => {
    const { ctx, log, sender } = context();
    await deliverWebhook(EVENT, 1, ctx);
    expect(await deliverWebhook(EVENT, 1, ctx)).toEqual({ action: 'done', outcome: 'duplicate' });
    expect(sender.requests).toHaveLength(1);
    expect(log.records.map((r) => r.outcome)).toEqual(['delivered', 'duplicate']);
    // Another document of the same subject is a different event.
    await deliverWebhook({ ...EVENT, documentId: 7 }, 1, ctx);
    expect(sender.requests).toHaveLength(2);
  });

  it('skips a subject without WEBHOOK_URL and records why', async () => {
    const { ctx, log, sender } = context({ subject: { webhookUrl: null, secret: 's' } });
    expect(await deliverWebhook(EVENT, 1, ctx)).toMatchObject({ action: 'done', outcome: 'skipped' });
    expect(sender.requests).toHaveLength(0);
    expect(log.records[0]).toMatchObject({ outcome: 'skipped', error: 'the subject has no WEBHOOK_URL' });
  });

  it('records an unknown subject once and does not retry it', async () => {
    const { ctx, log, sender } = context({ subject: null });
    expect(await deliverWebhook(EVENT, 1, ctx)).toMatchObject({ action: 'done', outcome: 'unknown_subject' });
    expect(sender.requests).toHaveLength(0);
    expect(log.records[0]).toMatchObject({ outcome: 'unknown_subject' });
  });

  it('refuses a private IP literal or a non-http URL without sending, and does not retry', async () => {
    for (const webhookUrl of ['http://169.254.169.254/latest/meta-data/', 'ftp://erp.example.cz/x']) {
      const { ctx, log, sender } = context({ subject: { webhookUrl, secret: 's' } });
      expect(await deliverWebhook(EVENT, 1, ctx)).toMatchObject({ action: 'done', outcome: 'refused' });
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
    expect(await deliverWebhook(EVENT, 1, ctx)).toMatchObject({ action: 'done', outcome: 'refused' });
    expect(log.records[0]).toMatchObject({ outcome: 'refused', error: refusal.reason });
  });

  it('sends without the secret headers when the subject has no secret', async () => {
    const { ctx, sender } = context({ subject: { webhookUrl: 'https://erp.example.cz/hook', secret: null } });
    await deliverWebhook(EVENT, 1, ctx);
    expect(sender.requests[0]!.headers['x-peppol-webhook-secret']).toBeUndefined();
    expect(sender.requests[0]!.headers['webhook-signature']).toBeUndefined();
    expect(sender.requests[0]!.headers['webhook-id']).toBe(webhookEventId(EVENT));
  });

  it('retries on schedule, without sending, when the database fails before the attempt', async () => {
    const { ctx, log, sender } = context();
    log.failing = new DatabaseUnavailableError('connection refused');
    expect(await deliverWebhook(EVENT, 1, ctx)).toMatchObject({
      action: 'retry',
      outcome: 'not_recorded',
      delaySeconds: 5,
    });
    expect(await deliverWebhook(EVENT, 4, ctx)).toMatchObject({
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
    expect(await deliverWebhook(EVENT, 1, ctx)).toEqual({ action: 'done', outcome: 'delivered' });
    expect(failures.map((f) => f.outcome)).toEqual(['delivered']);
  });
});

// ----------------------------------------------------------------------------------------------
// The SQS consumer around it, with fakes for the queue and the tenant database.

function record(body: string, receiveCount = 1, messageId = `m-${Math.random()}`): SQSRecord {
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
    messageAttributes: {},
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

/** Answers the two delivery-log reads and accepts inserts, like WEBHOOK_DELIVERY would. */
function fakeDatabase(subjectUrl: string | null): Database & { inserts: unknown[][] } {
  const inserts: unknown[][] = [];
  const delivered = new Set<unknown>();
  return {
    inserts,
    dialect: { name: 'postgres', quoteIdent: (n) => `"${n}"`, param: (i) => `$${i}`, paginate: () => '' },
    async query(sql, params = []) {
      if (sql.startsWith('SELECT')) {
        const subject =
          params[1] === 1 ? { subjectId: 1, webhookUrl: subjectUrl, secret: 'k' } : { subjectId: null };
        return [{ delivered: delivered.has(params[0]) ? 1 : 0, ...subject }];
      }
      inserts.push([...params]);
      if (params[5] === 'delivered') delivered.add(params[0]);
      return [];
    },
    streamBatches: () => {
      throw new Error('not used');
    },
    findDataSource: async () => undefined,
    transaction: () => {
      throw new Error('not used');
    },
    close: async () => undefined,
  };
}

function consumer(script: WebhookSendResult[], subjectUrl: string | null = 'https://erp.example.cz/hook') {
  const sender = new ScriptedSender(script);
  const postponed: [string, number][] = [];
  const visibility: MessageVisibility = {
    async postpone(receiptHandle, seconds) {
      postponed.push([receiptHandle, seconds]);
    },
  };
  const db = fakeDatabase(subjectUrl);
  const handler = documentReceivedHandler({
    registry: async () => registry,
    database: async () => db,
    settings: () => ({
      retrySchedule: [1, 2, 4],
      maxAttempts: 4,
      allowPrivateTargets: false,
      timeoutMs: 10_000,
    }),
    sender: async () => sender,
    visibility: () => visibility,
    random: () => 0.5,
  });
  const run = (...records: SQSRecord[]) => handler({ Records: records } as SQSEvent);
  return { run, sender, postponed, db };
}

const body = (documentId: number, subjectId = 1, tenant = 'demo') =>
  JSON.stringify({ tenant, subjectId, documentId });

describe('Function: documentReceivedHandler', () => {
  it('deletes delivered records and keeps failed ones with their visibility set to the next delay', async () => {
    const { run, postponed } = consumer([status(200), status(500)]);
    const ok = record(body(1), 1, 'ok');
    const failing = record(body(2), 2, 'failing');
    const result = await run(ok, failing);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'failing' }]);
    // Attempt 2 failed: the schedule's second delay (2 s) before attempt 3.
    expect(postponed).toEqual([['rh-failing', 2]]);
  });

  it('drops the visibility to 0 after the last attempt so that the redrive policy moves it to the DLQ', async () => {
    const { run, postponed } = consumer([status(503)]);
    const result = await run(record(body(1), 4, 'last'));
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'last' }]);
    expect(postponed).toEqual([['rh-last', 0]]);
  });

  it('deletes a record after 410 without any further attempt', async () => {
    const { run, postponed } = consumer([status(410)]);
    expect((await run(record(body(1)))).batchItemFailures).toEqual([]);
    expect(postponed).toEqual([]);
  });

  it('sends two copies of one event in a batch once', async () => {
    const { run, sender, db } = consumer([]);
    const result = await run(record(body(9), 1, 'a'), record(body(9), 1, 'b'), record(body(10), 1, 'c'));
    expect(result.batchItemFailures).toEqual([]);
    expect(sender.requests.map((r) => r.body).sort()).toEqual(['10', '9']);
    expect(db.inserts.map((row) => row[5]).sort()).toEqual(['delivered', 'delivered', 'duplicate']);
  });

  it('sends unreadable events and unknown tenants to the dead-letter queue without sending anything', async () => {
    const { run, sender, postponed } = consumer([]);
    const result = await run(record('not json', 1, 'bad'), record(body(1, 1, 'nobody'), 1, 'stranger'));
    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['bad', 'stranger']);
    expect(postponed.map(([, seconds]) => seconds)).toEqual([0, 0]);
    expect(sender.requests).toHaveLength(0);
  });

  it('keeps a record whose handling throws (the message comes back: nothing is lost)', async () => {
    const { run } = consumer([]);
    const crashing = documentReceivedHandler({
      registry: async () => {
        throw new Error('Secrets Manager unavailable');
      },
    });
    const result = await crashing({ Records: [record(body(1), 1, 'x')] } as SQSEvent);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'x' }]);
    expect((await run(record(body(1), 1, 'y'))).batchItemFailures).toEqual([]);
  });

  it('still reports the failure when the visibility cannot be changed', async () => {
    const handler = documentReceivedHandler({
      registry: async () => registry,
      database: async () => fakeDatabase('https://erp.example.cz/hook'),
      settings: () => ({ retrySchedule: [1], maxAttempts: 2, allowPrivateTargets: false, timeoutMs: 10_000 }),
      sender: async () => new ScriptedSender([status(500)]),
      visibility: () => ({
        postpone: async () => {
          throw new Error('AccessDenied');
        },
      }),
    });
    const result = await handler({ Records: [record(body(1), 1, 'z')] } as SQSEvent);
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'z' }]);
  });
});

describe('Function: createMssqlWebhookDeliveryLog', () => {
  it('sends parameterised T-SQL for infra/sql/mssql/040-webhook.sql', async () => {
    const sent: { sql: string; params: readonly unknown[] }[] = [];
    const log = createMssqlWebhookDeliveryLog({
      async query(sql, params = []) {
        sent.push({ sql, params });
        return sql.startsWith('SELECT')
          ? [{ delivered: 0, subjectId: 1, webhookUrl: 'https://x.example/h', secret: '' }]
          : [];
      },
    });
    expect(await log.findTarget('msg_1', 1)).toEqual({
      alreadyDelivered: false,
      subject: { webhookUrl: 'https://x.example/h', secret: null },
    });
    await log.record({
      eventId: 'msg_1',
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
    expect(select!.params).toEqual(['msg_1', 1]);
    expect(insert!.sql).toMatch(
      /^INSERT INTO \[dbo\]\.\[WEBHOOK_DELIVERY\] \(\[EVENT_ID\], .*\[RETRY_IN_SECONDS\]\)/s,
    );
    expect(insert!.sql).toContain('VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10)');
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
    ]);
  });
});
