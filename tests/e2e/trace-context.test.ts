/**
 * CONTRACT 8a through the local stack, as an integrator and an operator meet it: the caller's W3C
 * `traceparent` comes back on the answer (same trace, the service's own span), is in the request's
 * log lines and the access line, crosses the job queue, the document-received queue and the
 * notifier's, and leaves on the receipt webhook's and the notifications' POSTs; the webhook admin
 * function, invoked with the Lambda Invoke API, continues its invoker's trace into the events it
 * sends again.
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENT_RECEIVED_QUEUE } from '../../infra/local/queues.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import type { LogFields } from '../../shared/core/log.js';
import { parseTraceparent } from '../../shared/core/trace-context.js';
import { documentReceivedMessage } from '../../shared/core/webhook/event.js';
import { serviceLog, useObservability } from '../../shared/lambda/observability.js';
import { DEMO_AUTH } from '../support/demo.js';
import { invokeLocal } from '../support/local-invoke.js';
import { until } from '../support/until.js';
import { envelope, postSigned } from '../support/web-api.js';
import { deliveredEvent } from '../support/webhook-deliveries.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

let stack: LocalStack;
let receiver: WebhookReceiver;
let sqs: SQSClient;
/** Every line the stack's functions and its server logged, at any level. */
const lines: { message: string; fields: LogFields }[] = [];

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startLocalStack({ port: 0 });
  sqs = new SQSClient({ endpoint: `http://127.0.0.1:${stack.emulator.port}` });
  const log = serviceLog();
  const keep =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (message: string, fields: LogFields = {}) => {
      lines.push({ message, fields });
      log[level](message, fields);
    };
  useObservability({
    log: { debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') },
  });
});
afterAll(async () => {
  sqs?.destroy();
  await stack?.stop();
  await receiver?.close();
});

/** A caller's trace: a new trace id each time, so that a test sees only its own lines. */
function callerTrace(flags = '01') {
  const traceId = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex');
  const spanId = Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-${flags}` };
}

/** The answer's traceparent, read: the service's span in the caller's trace. */
function answerTrace(response: { headers: Headers }) {
  const header = response.headers.get('traceparent');
  const parsed = parseTraceparent(header ?? undefined);
  expect(parsed, `traceparent "${header}"`).toBeDefined();
  return { ...parsed!, header: header! };
}

const linesOf = (traceId: string) => lines.filter((line) => line.fields.traceId === traceId);

/** Points demo subject `subjectId`'s webhook at `path` on the test receiver, as the ERP would. */
async function subjectWebhook(subjectId: number, path: string) {
  const response = await fetch(`${stack.url}/_local/subjects/${subjectId}/webhook`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${receiver.url}${path}`, secret: `secret-${subjectId}` }),
  });
  expect(response.status).toBe(200);
}

describe('trace context (CONTRACT 8a)', () => {
  it("answers in the caller's trace with a span of its own, on success and error, logged on each line", async () => {
    const caller = callerTrace();
    const count = await fetch(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
      headers: { authorization: DEMO_AUTH, traceparent: caller.traceparent, tracestate: 'vendor=opaque' },
    });
    expect(count.status).toBe(200);
    const answered = answerTrace(count);
    expect(answered.traceId).toBe(caller.traceId);
    expect(answered.spanId).not.toBe(caller.spanId);
    expect(answered.flags).toBe(1);

    const refusedCaller = callerTrace('00');
    const refused = await fetch(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
      headers: { traceparent: refusedCaller.traceparent },
    });
    expect(refused.status).toBe(401);
    const refusedTrace = answerTrace(refused);
    expect(refusedTrace.traceId).toBe(refusedCaller.traceId);
    // Unsampled stays unsampled.
    expect(refusedTrace.header.endsWith('-00')).toBe(true);

    // The function's summary line and the stack's access line, each with the caller's trace id.
    const ofCount = await until(
      'the lines of the request',
      async () => linesOf(caller.traceId).map((line) => line.message),
      (messages) => messages.includes('request') && messages.includes('access'),
    );
    expect(ofCount).toEqual(expect.arrayContaining(['request', 'access']));
    const ofRefused = await until(
      'the lines of the refused request',
      async () => linesOf(refusedCaller.traceId),
      (found) => found.some((line) => line.message === 'access'),
    );
    expect(ofRefused.find((line) => line.message === 'request')?.fields).toMatchObject({
      status: 401,
      errorCode: expect.any(String),
    });
  });

  it('starts a fresh valid trace for a malformed traceparent, an absent one, and on the stack’s own routes', async () => {
    for (const traceparent of [
      'garbage',
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`,
      `00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01`,
    ]) {
      const response = await fetch(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
        headers: { authorization: DEMO_AUTH, traceparent },
      });
      expect(response.status).toBe(200);
      const answered = answerTrace(response);
      expect(answered.traceId).not.toBe('0'.repeat(32));
      expect(answered.traceId).not.toBe('4bf92f3577b34da6a3ce929d0e0e4736');
      expect(answered.flags).toBe(1);
    }
    const health = await fetch(`${stack.url}/health`);
    answerTrace(health);
    const caller = callerTrace();
    const docs = await fetch(`${stack.url}/openapi.json`, { headers: { traceparent: caller.traceparent } });
    expect(answerTrace(docs).traceId).toBe(caller.traceId);
    const unknown = await fetch(`${stack.url}/nowhere`, { headers: { traceparent: caller.traceparent } });
    expect(unknown.status).toBe(404);
    expect(answerTrace(unknown).traceId).toBe(caller.traceId);
  });

  it("getDataAsync: the job worker's lines carry the caller's trace id, beside the journal id", async () => {
    const caller = callerTrace();
    const call = await postSigned(stack.url, 'getDataAsync', envelope(1001, [{ ico: '25596641' }]), {
      headers: { traceparent: caller.traceparent },
    });
    expect(call.status).toBe(200);
    expect(answerTrace(call).traceId).toBe(caller.traceId);
    const journalId = (JSON.parse(call.text) as { id: number }).id;
    expect(journalId).toEqual(expect.any(Number));
    const job = await until(
      "the worker's job line",
      async () => linesOf(caller.traceId).find((line) => line.message === 'job'),
      (found) => found !== undefined,
    );
    expect(job!.fields).toMatchObject({ journalId, outcome: 'finished', tenant: 'demo' });
    // The request's own summary line joins the journal row to the trace too (docs/operations.md).
    expect(linesOf(caller.traceId).find((line) => line.message === 'request')?.fields).toMatchObject({
      journalId,
      route: 'POST /{tenant}/WebAPI/getDataAsync',
    });
  });

  it("a document-received event's traceparent reaches the receipt webhook's POST, as a child span", async () => {
    await subjectWebhook(5, '/receipt');
    const caller = callerTrace();
    const accepted = await fetch(`${stack.url}/_local/documents/received`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: caller.traceparent, tracestate: 'ap=1' },
      body: JSON.stringify({ subjectId: 5, documentId: 5001 }),
    });
    expect(accepted.status).toBe(202);
    const routeSpan = answerTrace(accepted);
    expect(routeSpan.traceId).toBe(caller.traceId);
    const [post] = await receiver.waitFor('/receipt', 1);
    const sent = parseTraceparent(String(post!.headers.traceparent));
    expect(sent?.traceId).toBe(caller.traceId);
    expect([caller.spanId, routeSpan.spanId]).not.toContain(sent?.spanId);
    expect(post!.headers.tracestate).toBe('ap=1');
    const delivered = await until(
      'the webhook line',
      async () => linesOf(caller.traceId).find((line) => line.message === 'webhook'),
      (found) => found !== undefined,
    );
    expect(delivered!.fields).toMatchObject({ outcome: 'delivered', documentId: 5001 });
  });

  it('a batch of 10 SQS messages: each delivery keeps the trace its message came with', async () => {
    await subjectWebhook(6, '/batch');
    const callers = Array.from({ length: 10 }, () => callerTrace());
    const sent = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: stack.queueUrls.get(DOCUMENT_RECEIVED_QUEUE),
        Entries: callers.map((caller, n) => ({
          Id: `e${n}`,
          MessageBody: documentReceivedMessage({ tenant: 'demo', subjectId: 6, documentId: 6001 + n }),
          MessageGroupId: 'demo',
          MessageAttributes: { traceparent: { DataType: 'String', StringValue: caller.traceparent } },
        })),
      }),
    );
    expect(sent.Failed ?? []).toEqual([]);
    const posts = await receiver.waitFor('/batch', 10, 20_000);
    const traceOfDocument = new Map(
      posts.map((post) => [
        // The receipt webhook's body is the bare document id.
        Number(post.body),
        parseTraceparent(String(post.headers.traceparent))?.traceId,
      ]),
    );
    expect(traceOfDocument).toEqual(new Map(callers.map((caller, n) => [6001 + n, caller.traceId])));
    // Each record's own line in its own trace.
    for (const [n, caller] of callers.entries()) {
      const line = await until(
        `the webhook line of document ${6001 + n}`,
        async () => linesOf(caller.traceId).find((found) => found.message === 'webhook'),
        (found) => found !== undefined,
      );
      expect(line!.fields.documentId).toBe(6001 + n);
    }
  });

  it("a new subscription's ping is POSTed in the trace of the request that created it", async () => {
    const caller = callerTrace();
    const created = await fetch(`${stack.url}/demo/JsonAPI/Subscriptions`, {
      method: 'POST',
      headers: {
        authorization: DEMO_AUTH,
        'content-type': 'application/json',
        traceparent: caller.traceparent,
      },
      body: JSON.stringify({ source: 'SUBJECT', url: `${receiver.url}/notifications` }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    expect(answerTrace(created).traceId).toBe(caller.traceId);
    const [ping] = await receiver.waitFor('/notifications', 1, 20_000);
    expect(JSON.parse(ping!.body)).toMatchObject({ type: 'subscription.ping' });
    const sent = parseTraceparent(String(ping!.headers.traceparent));
    expect(sent?.traceId).toBe(caller.traceId);
    expect(sent?.spanId).not.toBe(caller.spanId);
  });

  it("a change notification's POST is in the trace of the notifier's pass that found the change", async () => {
    const created = await fetch(`${stack.url}/demo/JsonAPI/Subscriptions`, {
      method: 'POST',
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'SUBJECT', url: `${receiver.url}/changes` }),
    });
    expect(created.status).toBe(201);
    await receiver.waitFor('/changes', 1, 20_000);
    const changed = () =>
      receiver.receivedOn('/changes').filter((post) => JSON.parse(post.body).type === 'table.changed');
    const before = changed().length;
    const id = 970_000 + Math.floor(Math.random() * 10_000);
    const write = await fetch(`${stack.url}/_local/erp/writes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        writes: [{ table: 'SUBJECT', op: 'insert', row: { ID: id, NAZEV: `Trace ${id}` } }],
      }),
    });
    expect(write.status).toBe(200);
    const [post] = (
      await until(
        'a table.changed POST',
        async () => changed().slice(before),
        (found) => found.length > 0,
        20_000,
      )
    ).slice(-1);
    const sent = parseTraceparent(String(post!.headers.traceparent));
    expect(sent).toBeDefined();
    // The pass that found the change, and the delivery of its notification, in one trace.
    const traced = await until(
      'the pass and the notification lines',
      async () => linesOf(sent!.traceId).map((line) => line.message),
      (messages) => messages.includes('change notifier pass') && messages.includes('notification'),
    );
    expect(traced).toEqual(expect.arrayContaining(['change notifier pass', 'notification']));
  });

  it("webhookAdmin: a resend continues the invoker's traceparent, on the admin's line and the receiver's POST", async () => {
    // Resend finds the event by its WEBHOOK_DELIVERY row.
    const webhookId = await deliveredEvent(stack.url, receiver, {
      subjectId: 8,
      documentId: 8001,
      path: '/resent',
    });

    const caller = callerTrace();
    const invoked = await invokeLocal(
      stack.url,
      'webhookAdmin',
      { action: 'resend', tenant: 'demo', eventId: webhookId },
      { traceparent: caller.traceparent, tracestate: 'ops=1' },
    );
    expect(invoked.status).toBe(200);
    expect(await invoked.json()).toMatchObject({ ok: true, action: 'resend', eventId: webhookId });
    const invokeSpan = answerTrace(invoked);
    expect(invokeSpan.traceId).toBe(caller.traceId);
    // The function's own line, and the stack's access line, in the caller's trace.
    const ofCall = await until(
      "the admin's line and the access line",
      async () => linesOf(caller.traceId),
      (found) =>
        found.some((line) => line.message === 'webhook admin') &&
        found.some((line) => line.message === 'access'),
    );
    expect(ofCall.find((line) => line.message === 'webhook admin')!.fields).toMatchObject({
      function: 'webhookAdmin',
      action: 'resend',
      tenant: 'demo',
      ok: true,
    });

    // The event sent again is delivered in that trace: a POST of a span of its own, tracestate kept.
    const [, resent] = await receiver.waitFor('/resent', 2);
    expect(resent!.headers['webhook-id']).toBe(webhookId);
    const sent = parseTraceparent(String(resent!.headers.traceparent));
    expect(sent?.traceId).toBe(caller.traceId);
    expect([caller.spanId, invokeSpan.spanId]).not.toContain(sent?.spanId);
    expect(resent!.headers.tracestate).toBe('ops=1');
    const delivered = await until(
      'the webhook line of the resend',
      async () => linesOf(caller.traceId).find((line) => line.message === 'webhook'),
      (found) => found !== undefined,
    );
    expect(delivered!.fields).toMatchObject({ outcome: 'resent', documentId: 8001, eventId: webhookId });
  });

  it("webhookAdmin: the SDK's ClientContext (Custom.traceparent, as OpenTelemetry's instrumentation sends it) is continued", async () => {
    const lambda = new LambdaClient({
      endpoint: stack.url,
      region: 'eu-central-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      const caller = callerTrace();
      const context = { Custom: { traceparent: caller.traceparent } };
      const result = await lambda.send(
        new InvokeCommand({
          FunctionName: 'webhookAdmin',
          ClientContext: Buffer.from(JSON.stringify(context)).toString('base64'),
          Payload: new TextEncoder().encode(
            JSON.stringify({ action: 'status', tenant: 'demo', subjectId: 1 }),
          ),
        }),
      );
      expect(JSON.parse(new TextDecoder().decode(result.Payload))).toMatchObject({ ok: true });
      const line = await until(
        "the admin's line",
        async () => linesOf(caller.traceId).find((found) => found.message === 'webhook admin'),
        (found) => found !== undefined,
      );
      expect(line!.fields).toMatchObject({ action: 'status', ok: true });
      // A client context that is not base64 JSON is refused, as Lambda refuses it.
      const refused = await fetch(`${stack.url}/2015-03-31/functions/webhookAdmin/invocations`, {
        method: 'POST',
        headers: { 'x-amz-client-context': 'not base64 json!' },
        body: JSON.stringify({ action: 'status', tenant: 'demo', subjectId: 1 }),
      });
      expect(refused.status).toBe(400);
      expect(refused.headers.get('x-amzn-errortype')).toBe('InvalidRequestContentException');
    } finally {
      lambda.destroy();
    }
  });
});
