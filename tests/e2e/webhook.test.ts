import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readOpenApiDocument } from '../../infra/local/docs-routes.js';
import { DOCUMENT_RECEIVED_QUEUE } from '../../infra/local/queues.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { createEmbeddedWebhookDeliveryLog } from '../../shared/adapters/embedded/webhook-delivery-log.js';
import { createMssqlWebhookDeliveryLog } from '../../shared/adapters/mssql/webhook-delivery-log.js';
import { createEmfMetrics } from '../../shared/adapters/powertools/metrics.js';
import { byDialect } from '../../shared/config/databases.js';
import type { LogFields } from '../../shared/core/log.js';
import { webhookEventId } from '../../shared/core/webhook/event.js';
import { serviceLog, useObservability } from '../../shared/lambda/observability.js';
import { DEMO_AUTH, sqlOn } from '../support/demo.js';
import { openApiResponseChecker } from '../support/openapi-responses.js';
import { until } from '../support/until.js';
import { deliveryOutcomes, type WebhookDelivery, webhookDeliveries } from '../support/webhook-deliveries.js';
import {
  type ReceivedWebhook,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

// A short schedule keeps the suite fast: attempt 1, then 1 s, attempt 2, then 2 s, attempt 3, then
// the dead-letter queue (maxReceiveCount 3). Only loopback addresses are ever contacted.
const SCHEDULE = '1,2';

const checker = openApiResponseChecker(await readOpenApiDocument());
let stack: LocalStack;
let receiver: WebhookReceiver;
let sqs: SQSClient;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startLocalStack({ port: 0, env: { WEBHOOK_RETRY_SCHEDULE: SCHEDULE } });
  sqs = new SQSClient({ endpoint: `http://127.0.0.1:${stack.emulator.port}` });
});
afterAll(async () => {
  sqs?.destroy();
  await stack?.stop();
  await receiver?.close();
});

/** Points a demo subject's webhook at `path` on the test receiver (or at any URL, or none). */
async function subjectWebhook(
  subjectId: number,
  url: string | null,
  secret: string | null = `secret-${subjectId}`,
) {
  await sqlOn(stack.database)`UPDATE dbo."SUBJECT" SET "WEBHOOK_URL" = ${url}, "SECRET_WEBHOOK" = ${secret}
    WHERE "ID" = ${subjectId}`;
}

/** Renames a table of the demo database (to make it fail), in the dialect of the stack's database. */
async function renameTable(from: string, to: string) {
  await stack.database.query(
    stack.database.dialect.name === 'mssql'
      ? `EXEC sp_rename N'dbo.${from}', N'${to}', N'OBJECT'`
      : `ALTER TABLE dbo."${from}" RENAME TO "${to}"`,
  );
}

/** What the access point does: one document-received event through the local route. */
async function documentReceived(subjectId: number, documentId: number) {
  const response = await fetch(`${stack.url}/_local/documents/received`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ subjectId, documentId }),
  });
  expect(response.status).toBe(202);
  return (await response.json()) as { webhookId: string; messageId: string };
}

const deliveries = (documentId: number) => webhookDeliveries(stack.url, documentId);
const finished = (count: number) => (rows: WebhookDelivery[]) => rows.length >= count;
const gaps = (requests: ReceivedWebhook[]) =>
  requests.slice(1).map((r, i) => (r.at - requests[i]!.at) / 1000);

/**
 * The receiver check exactly as docs/webhooks.md shows it (its ```js block, run as a module): the secret
 * header, the time stamp's age and the Standard Webhooks signature.
 */
async function readmeVerifier(secret: string): Promise<(headers: object, body: string) => boolean> {
  const readme = await readFile('docs/webhooks.md', 'utf8');
  const code = /\*\*Verifying a webhook[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!code) throw new Error('docs/webhooks.md has no verification example');
  const dir = await mkdtemp(join(tmpdir(), 'readme-verifier-'));
  const file = join(dir, 'verify.mjs');
  await writeFile(file, code);
  vi.stubEnv('PEPPOL_WEBHOOK_SECRET', secret);
  try {
    const module = (await import(/* @vite-ignore */ pathToFileURL(file).href)) as {
      isGenuineWebhook: (headers: object, body: string) => boolean;
    };
    return module.isGenuineWebhook;
  } finally {
    vi.unstubAllEnvs();
    // Imported: the module is in memory, its file no longer needed.
    await rm(dir, { recursive: true, force: true });
  }
}

async function dlqBodies(): Promise<string[]> {
  const answer = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: stack.queueUrls.get(`${DOCUMENT_RECEIVED_QUEUE}-dlq`),
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      VisibilityTimeout: 0,
    }),
  );
  return (answer.Messages ?? []).map((m) => m.Body ?? '');
}

describe('Receipt webhook over HTTP (local stack)', () => {
  it('delivers the demo event to the local sink with every header right and a verifiable signature', async () => {
    const subject = await stack.database.query('SELECT "WEBHOOK_URL" FROM dbo."SUBJECT" WHERE "ID" = 1');
    expect(subject[0]!.WEBHOOK_URL).toBe(`${stack.url}/_local/webhook-sink`);

    const started = Math.floor(Date.now() / 1000);
    const queued = await documentReceived(1, 123456);
    const sink = await until(
      'the sink',
      async () =>
        (await (await fetch(`${stack.url}/_local/webhook-sink`)).json()) as {
          headers: Record<string, string>;
          body: string;
        }[],
      (entries) => entries.length > 0,
    );
    const [entry] = sink;
    expect(entry!.body).toBe('123456');
    expect(entry!.headers['content-type']).toBe('application/json');
    expect(entry!.headers['x-peppol-webhook-secret']).toBe('demo-webhook-secret');
    expect(entry!.headers['webhook-id']).toBe(queued.webhookId);
    expect(entry!.headers['webhook-id']).toBe(
      webhookEventId({ tenant: 'demo', subjectId: 1, documentId: 123456 }),
    );
    const timestamp = Number(entry!.headers['webhook-timestamp']);
    expect(timestamp).toBeGreaterThanOrEqual(started);
    expect(timestamp).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(entry!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    const verify = await readmeVerifier('demo-webhook-secret');
    expect(verify(entry!.headers, entry!.body)).toBe(true);
    expect(verify(entry!.headers, '123457')).toBe(false);
    expect(verify({ ...entry!.headers, 'webhook-timestamp': String(timestamp - 1) }, entry!.body)).toBe(
      false,
    );
    expect(verify({ ...entry!.headers, 'webhook-id': 'msg_other' }, entry!.body)).toBe(false);
    expect((await readmeVerifier('another-secret'))(entry!.headers, entry!.body)).toBe(false);
    // During a rotation's overlap: the header carries the new secret, the receiver still holds the
    // old one, and the signature under the old one is enough (docs/webhooks.md's example).
    const overlap = {
      ...entry!.headers,
      'x-peppol-webhook-secret': 'the-new-secret',
      'webhook-signature': `v1,${createHmac('sha256', 'the-new-secret')
        .update(`${entry!.headers['webhook-id']}.${entry!.headers['webhook-timestamp']}.${entry!.body}`)
        .digest('base64')} ${String(entry!.headers['webhook-signature'])}`,
    };
    expect(verify(overlap, entry!.body)).toBe(true);
    expect((await readmeVerifier('another-secret'))(overlap, entry!.body)).toBe(false);

    const rows = await until('the record', () => deliveries(123456), finished(1));
    expect(rows).toEqual([
      expect.objectContaining({
        EVENT_ID: queued.webhookId,
        SUBJECT_ID: 1,
        DOCUMENT_ID: 123456,
        ATTEMPT: 1,
        OUTCOME: 'delivered',
        HTTP_STATUS: 200,
        ATTEMPTED_AT: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/),
        DURATION_MS: expect.any(Number),
      }),
    ]);
  });

  it('lists WEBHOOK_DELIVERY through getData', async () => {
    const response = await fetch(`${stack.url}/demo/JsonAPI/Data/getData/WEBHOOK_DELIVERY`, {
      headers: { authorization: DEMO_AUTH },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { WEBHOOK_DELIVERY: WebhookDelivery[] };
    expect(
      body.WEBHOOK_DELIVERY.some((row) => row.DOCUMENT_ID === 123456 && row.OUTCOME === 'delivered'),
    ).toBe(true);
  });

  it('delivers to a real receiver on the first try', async () => {
    await subjectWebhook(2, `${receiver.url}/first-try`, 'whsec_first-try-secret');
    const queued = await documentReceived(2, 2001);
    const [got] = await receiver.waitFor('/first-try', 1);
    expect(got!.method).toBe('POST');
    expect(got!.body).toBe('2001');
    expect(got!.headers['webhook-id']).toBe(queued.webhookId);
    expect((await readmeVerifier('whsec_first-try-secret'))(got!.headers, got!.body)).toBe(true);
    // As docs/openapi.yaml describes it under webhooks.
    expect(checker.checkWebhook('documentReceived', got!)).toEqual([]);
    expect(deliveryOutcomes(await until('the record', () => deliveries(2001), finished(1)))).toEqual([
      'delivered',
    ]);
  });

  it('succeeds after two 500s, on the schedule, with the same webhook-id every time', async () => {
    receiver.on('/two-500s', [{ status: 500 }, { status: 500 }, { status: 200 }]);
    await subjectWebhook(3, `${receiver.url}/two-500s`);
    await documentReceived(3, 3001);
    const requests = await receiver.waitFor('/two-500s', 3);
    expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const verify = await readmeVerifier('secret-3');
    for (const request of requests) expect(verify(request.headers, request.body)).toBe(true);
    // 1 s then 2 s (±10 %, whole seconds for SQS) between attempts, plus the poller's pick-up.
    const [first, second] = gaps(requests) as [number, number];
    console.log(`attempt gaps with schedule ${SCHEDULE}: ${first.toFixed(3)} s, ${second.toFixed(3)} s`);
    expect(first).toBeGreaterThanOrEqual(0.9);
    expect(first).toBeLessThan(1.1 + 1.5);
    expect(second).toBeGreaterThanOrEqual(1.8);
    expect(second).toBeLessThan(2.2 + 1.5);
    const rows = await until('the records', () => deliveries(3001), finished(3));
    expect(rows.map((r) => [r.ATTEMPT, r.OUTCOME, r.HTTP_STATUS, r.RETRY_IN_SECONDS])).toEqual([
      [1, 'retrying', 500, 1],
      [2, 'retrying', 500, 2],
      [3, 'delivered', 200, undefined],
    ]);
  });

  it('moves the event to the dead-letter queue after the last attempt', async () => {
    // The EMF documents of this test's records (the local stack would log them at DEBUG).
    const documents: Record<string, unknown>[] = [];
    useObservability({
      metrics: createEmfMetrics({ sink: (document) => documents.push(JSON.parse(document)) }),
    });
    receiver.on('/always-500', { status: 500 });
    await subjectWebhook(4, `${receiver.url}/always-500`);
    await documentReceived(4, 4001);
    await receiver.waitFor('/always-500', 3);
    const body = JSON.stringify({ tenant: 'demo', subjectId: 4, documentId: 4001 });
    const dead = await until('the DLQ', dlqBodies, (bodies) => bodies.includes(body), 8000);
    expect(dead).toContain(body);
    expect(deliveryOutcomes(await deliveries(4001))).toEqual(['retrying', 'retrying', 'failed']);
    // No fourth attempt.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(receiver.receivedOn('/always-500')).toHaveLength(3);
    // Three failed attempts for the failure-rate alarm, and one event dead-lettered.
    const attempts = documents.filter((d) => d.WebhookAttempts !== undefined);
    expect(attempts.map((d) => [d.outcome, d.WebhookFailures])).toEqual([
      ['retrying', 1],
      ['retrying', 1],
      ['failed', 1],
    ]);
    expect(documents.filter((d) => d.DeadLettered !== undefined)).toMatchObject([
      { queue: 'document-received', DeadLettered: 1 },
    ]);
  });

  it('stops at once after 410 Gone: no retry, no dead-letter queue', async () => {
    receiver.on('/gone', { status: 410 });
    await subjectWebhook(5, `${receiver.url}/gone`);
    await documentReceived(5, 5001);
    await receiver.waitFor('/gone', 1);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(receiver.receivedOn('/gone')).toHaveLength(1);
    expect(await deliveries(5001)).toEqual([
      expect.objectContaining({ ATTEMPT: 1, OUTCOME: 'gone', HTTP_STATUS: 410 }),
    ]);
    expect(await dlqBodies()).not.toContain(
      JSON.stringify({ tenant: 'demo', subjectId: 5, documentId: 5001 }),
    );
  });

  it('does not deliver an event again when a second copy arrives later or at the same time', async () => {
    await subjectWebhook(6, `${receiver.url}/dedupe`);
    await documentReceived(6, 6001);
    await until('the delivery', () => deliveries(6001), finished(1));
    await documentReceived(6, 6001);
    expect(deliveryOutcomes(await until('the duplicate', () => deliveries(6001), finished(2)))).toEqual([
      'delivered',
      'duplicate',
    ]);

    // Two copies put on the queue together (as an at-least-once producer may), taken in one batch.
    const queueUrl = stack.queueUrls.get(DOCUMENT_RECEIVED_QUEUE);
    const copy = JSON.stringify({ tenant: 'demo', subjectId: 6, documentId: 6002 });
    const resume = await stack.pauseConsumers(DOCUMENT_RECEIVED_QUEUE);
    await Promise.all(
      [1, 2].map(() => sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: copy }))),
    );
    resume();
    expect(deliveryOutcomes(await until('both copies', () => deliveries(6002), finished(2))).sort()).toEqual([
      'delivered',
      'duplicate',
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.receivedOn('/dedupe').map((r) => r.body)).toEqual(['6001', '6002']);
  });

  it('sends an event once when two copies arrive in two batches at once (two instances): the second waits for the first', async () => {
    // The first copy's receiver takes 1.5 s to answer; the second copy arrives meanwhile and is
    // taken by the other of the fast lane's two consumers (as a second Lambda instance would).
    receiver.on('/at-once', [{ status: 200, delayMs: 1500 }]);
    await subjectWebhook(6, `${receiver.url}/at-once`);
    const queueUrl = stack.queueUrls.get(DOCUMENT_RECEIVED_QUEUE);
    const copy = JSON.stringify({ tenant: 'demo', subjectId: 6, documentId: 6003 });
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: copy }));
    await receiver.waitFor('/at-once', 1, 10_000);
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: copy }));
    const rows = await until('both copies', () => deliveries(6003), finished(2), 20_000);
    expect(deliveryOutcomes(rows).sort()).toEqual(['delivered', 'duplicate']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.receivedOn('/at-once').map((r) => r.body)).toEqual(['6003']);
    expect(
      await stack.database.query(
        stack.database.dialect.name === 'mssql'
          ? 'SELECT COUNT(*) AS n FROM dbo.SVC_WEBHOOK_SENDING'
          : 'SELECT COUNT(*)::int AS n FROM dbo."SVC_WEBHOOK_SENDING"',
      ),
    ).toEqual([{ n: 0 }]);
  });

  it('refuses a private target when private targets are not allowed, and does not retry it', async () => {
    // Production setting for this test only; the handler reads it per event. Every URL here is
    // loopback, so nothing else could be reached even if the guard failed.
    vi.stubEnv('WEBHOOK_ALLOW_PRIVATE_TARGETS', 'false');
    try {
      const before = receiver.connections();
      const targets = [
        `${receiver.url}/private`,
        `http://localhost:${receiver.port}/private`,
        `http://[::1]:${receiver.port}/private`,
        `ftp://127.0.0.1:${receiver.port}/private`,
      ];
      for (const [index, url] of targets.entries()) {
        await subjectWebhook(7, url);
        await documentReceived(7, 7001 + index);
        const rows = await until('the refusal', () => deliveries(7001 + index), finished(1));
        expect(rows, url).toEqual([expect.objectContaining({ ATTEMPT: 1, OUTCOME: 'refused' })]);
      }
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(receiver.receivedOn('/private')).toHaveLength(0);
      expect(receiver.connections()).toBe(before);
      for (const [index] of targets.entries()) expect(await deliveries(7001 + index)).toHaveLength(1);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('does not follow a redirect: it counts as a failed attempt', async () => {
    receiver.on('/redirect', [{ status: 302, headers: { location: '/redirect-target' } }, { status: 200 }]);
    await subjectWebhook(8, `${receiver.url}/redirect`);
    await documentReceived(8, 8001);
    await receiver.waitFor('/redirect', 2);
    expect(receiver.receivedOn('/redirect-target')).toHaveLength(0);
    const rows = await until('the records', () => deliveries(8001), finished(2));
    expect(rows.map((r) => [r.OUTCOME, r.HTTP_STATUS, r.ERROR])).toEqual([
      ['retrying', 302, 'redirect not followed'],
      ['delivered', 200, undefined],
    ]);
  });

  it('honours Retry-After when it asks for longer than the schedule', async () => {
    receiver.on('/retry-after', [{ status: 503, headers: { 'retry-after': '3' } }, { status: 200 }]);
    await subjectWebhook(9, `${receiver.url}/retry-after`);
    await documentReceived(9, 9001);
    const requests = await receiver.waitFor('/retry-after', 2);
    const [gap] = gaps(requests);
    console.log(`attempt gap after Retry-After: 3: ${gap!.toFixed(3)} s`);
    expect(gap).toBeGreaterThanOrEqual(2.9);
    expect(gap).toBeLessThan(4.6);
    const rows = await until('the records', () => deliveries(9001), finished(2));
    expect(rows.map((r) => [r.OUTCOME, r.RETRY_IN_SECONDS])).toEqual([
      ['retrying', 3],
      ['delivered', undefined],
    ]);
  });

  it('records a subject without WEBHOOK_URL as skipped and an unknown subject once; sends nothing', async () => {
    await subjectWebhook(10, null);
    const before = receiver.received.length;
    await documentReceived(10, 10001);
    await documentReceived(999999, 10002);
    expect(await until('the skip', () => deliveries(10001), finished(1))).toEqual([
      expect.objectContaining({ OUTCOME: 'skipped', ERROR: 'the subject has no WEBHOOK_URL' }),
    ]);
    expect(
      deliveryOutcomes(await until('the unknown subject', () => deliveries(10002), finished(1))),
    ).toEqual(['unknown_subject']);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(deliveryOutcomes(await deliveries(10002))).toEqual(['unknown_subject']);
    expect(receiver.received.length).toBe(before);
  });

  it('loses nothing when the database fails: the event comes back and is delivered later', async () => {
    await subjectWebhook(11, `${receiver.url}/db-outage`);
    const errors: LogFields[] = [];
    const previous = serviceLog();
    useObservability({ log: { ...previous, error: (_message, fields = {}) => errors.push(fields) } });
    await renameTable('WEBHOOK_DELIVERY', 'WEBHOOK_DELIVERY_AWAY');
    try {
      await documentReceived(11, 11001);
      await until(
        'the failed attempt',
        async () => errors,
        (entries) => entries.some((entry) => entry.documentId === 11001 && entry.outcome === 'not_recorded'),
      );
      expect(receiver.receivedOn('/db-outage')).toHaveLength(0);
    } finally {
      await renameTable('WEBHOOK_DELIVERY_AWAY', 'WEBHOOK_DELIVERY');
      useObservability({ log: previous });
    }
    await receiver.waitFor('/db-outage', 1);
    // The receive that could not reach the database sent nothing and recorded nothing: the
    // delivery is its first attempt (attempts are counted where they are recorded).
    expect(await until('the record', () => deliveries(11001), finished(1))).toEqual([
      expect.objectContaining({ ATTEMPT: 1, OUTCOME: 'delivered' }),
    ]);
  });

  it('sends an unreadable message to the dead-letter queue without delivering anything', async () => {
    const before = receiver.received.length;
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: stack.queueUrls.get(DOCUMENT_RECEIVED_QUEUE),
        MessageBody: '{"tenant":"demo"}',
      }),
    );
    await until('the DLQ', dlqBodies, (bodies) => bodies.includes('{"tenant":"demo"}'), 8000);
    expect(receiver.received.length).toBe(before);
  });
});

describe('Local routes of the receipt webhook', () => {
  it.each([
    ['not json', /JSON object/],
    ['[1]', /JSON object/],
    ['{"documentId":1}', /"subjectId"/],
    ['{"subjectId":1}', /"documentId"/],
    ['{"subjectId":"1","documentId":1}', /"subjectId"/],
    ['{"subjectId":1,"documentId":-5}', /"documentId"/],
    ['{"subjectId":1,"documentId":1.5}', /"documentId"/],
    ['{"subjectId":2147483648,"documentId":1}', /"subjectId" must be a positive integer up to 2147483647/],
  ])('POST /_local/documents/received refuses %s with 400', async (body, message) => {
    const response = await fetch(`${stack.url}/_local/documents/received`, { method: 'POST', body });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toMatch(message);
  });

  it('POST /_local/documents/received refuses a body over 64 KiB with 413, saying so', async () => {
    const body = JSON.stringify({ subjectId: 1, documentId: 1, padding: 'x'.repeat(70_000) });
    const response = await fetch(`${stack.url}/_local/documents/received`, { method: 'POST', body });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { message: string }).message).toMatch(/larger than 64 KiB/);
  });

  it('the sink answers {"status":"success"} and lists what it received', async () => {
    const response = await fetch(`${stack.url}/_local/webhook-sink`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-test': 'yes' },
      body: '42',
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'success' });
    const list = (await (await fetch(`${stack.url}/_local/webhook-sink`)).json()) as {
      headers: Record<string, string>;
      body: string;
      receivedAt: string;
    }[];
    expect(list.at(-1)).toMatchObject({ body: '42', headers: { 'x-test': 'yes' } });
  });

  it('the queue lets an event come back more often than the schedule has attempts (room for throttled receives)', async () => {
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: stack.queueUrls.get(DOCUMENT_RECEIVED_QUEUE),
        AttributeNames: ['RedrivePolicy'],
      }),
    );
    // WEBHOOK_MAX_RECEIVES' default; the schedule has 3 attempts.
    expect(JSON.parse(attributes.Attributes!.RedrivePolicy!).maxReceiveCount).toBe(30);
  });
});

describe("Class: WebhookDeliveryLog (the stack's database)", () => {
  it('keeps at most one delivered row per event (the unique key behind "not delivered twice")', async () => {
    const log = byDialect(stack.database, {
      mssql: (db) => createMssqlWebhookDeliveryLog(db, 'demo'),
      embedded: (db) => createEmbeddedWebhookDeliveryLog(db, 'demo'),
    });
    const entry = {
      eventId: 'msg_unique-key-test',
      messageId: 'message-a',
      subjectId: 1,
      documentId: 1,
      attempt: 1,
      attemptedAt: Date.now(),
      outcome: 'delivered' as const,
      httpStatus: 200,
    };
    const key = { eventId: entry.eventId, subjectId: 1, documentId: 1, messageId: 'message-a' };
    // (With the endpoint's state, once an earlier test has delivered to SUBJECT 1.)
    expect(await log.findTarget(key)).toMatchObject({
      alreadyDelivered: false,
      attemptsMade: 0,
      subject: { webhookUrl: `${stack.url}/_local/webhook-sink`, secret: 'demo-webhook-secret' },
    });
    await log.record(entry);
    expect((await log.findTarget(key)).alreadyDelivered).toBe(true);
    await expect(log.record({ ...entry, attempt: 2 })).rejects.toThrow(/unique|duplicate/i);
    await log.record({ ...entry, attempt: 2, outcome: 'duplicate' });
    expect(await log.findTarget({ ...key, subjectId: 999999 })).toEqual({
      alreadyDelivered: true,
      attemptsMade: 0,
      subject: undefined,
    });
    expect(await log.findTarget({ ...key, eventId: 'msg_other', subjectId: 999999 })).toEqual({
      alreadyDelivered: false,
      attemptsMade: 0,
      subject: undefined,
    });
  });

  it('counts the attempts of one message: its retrying and failed rows only', async () => {
    const log = byDialect(stack.database, {
      mssql: (db) => createMssqlWebhookDeliveryLog(db, 'demo'),
      embedded: (db) => createEmbeddedWebhookDeliveryLog(db, 'demo'),
    });
    const row = {
      eventId: 'msg_attempt-count-test',
      subjectId: 1,
      documentId: 77001,
      attemptedAt: Date.now(),
    };
    const key = { eventId: row.eventId, subjectId: 1, documentId: 77001 };
    await log.record({ ...row, messageId: 'first', attempt: 1, outcome: 'retrying', httpStatus: 500 });
    await log.record({ ...row, messageId: 'first', attempt: 2, outcome: 'failed', httpStatus: 500 });
    await log.record({ ...row, messageId: 'second', attempt: 1, outcome: 'retrying', httpStatus: 500 });
    await log.record({ ...row, messageId: 'second', attempt: 2, outcome: 'refused', error: 'x' });
    expect((await log.findTarget({ ...key, messageId: 'first' })).attemptsMade).toBe(2);
    expect((await log.findTarget({ ...key, messageId: 'second' })).attemptsMade).toBe(1);
    expect((await log.findTarget({ ...key, messageId: 'redriven' })).attemptsMade).toBe(0);
  });
});
