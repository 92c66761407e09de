/**
 * CONTRACT 8a's span export through the local stack: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, the
 * stack's functions send their spans over OTLP/HTTP (JSON) to a receiver run here on loopback, as
 * a collector would get them: the request's server span in the caller's trace with the answer's
 * ids, a span per statement, the job queue's send and the worker's record in the same trace, a
 * batch's span with a link per message; the webhook admin's call a span in its invoker's trace,
 * the parent of the send of an event it sends again; unsampled traces not at all; and no
 * attribute with a parameter, a secret or a row's value.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENT_RECEIVED_QUEUE } from '../../infra/local/queues.js';
import { recentSpansRecorder } from '../../infra/local/recent-traces.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { traceLines } from '../../infra/tools/trace.js';
import { parseTraceparent } from '../../shared/core/trace-context.js';
import { noSpanRecorder, useSpanRecorder } from '../../shared/core/tracing.js';
import { documentReceivedMessage } from '../../shared/core/webhook/event.js';
import { DEMO_AUTH } from '../support/demo.js';
import { invokeLocal } from '../support/local-invoke.js';
import { until } from '../support/until.js';
import { envelope, postSigned } from '../support/web-api.js';
import { deliveredEvent } from '../support/webhook-deliveries.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/** A span as OTLP/HTTP's JSON encoding carries it (ids in hex, as the exporter writes them). */
interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes?: { key: string; value: Record<string, unknown> }[];
  readonly links?: { traceId: string; spanId: string }[];
}
/** OTLP's span kinds. */
const KIND = { server: 2, client: 3, producer: 4, consumer: 5 } as const;

let collector: Server;
let stack: LocalStack;
let receiver: WebhookReceiver;
let sqs: SQSClient;
const spans: OtlpSpan[] = [];
const contentTypes = new Set<string>();
const previousEndpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;

/** A collector's OTLP/HTTP traces endpoint, on loopback: keeps every span it is sent. */
function startCollector(): Promise<Server> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      contentTypes.add(String(request.headers['content-type']));
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[];
      };
      for (const resource of body.resourceSpans ?? []) {
        for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []));
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  // As `npm start` does (infra/local/main.ts): the last spans kept, for `npm run trace`.
  useSpanRecorder(recentSpansRecorder());
  collector = await startCollector();
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  receiver = await startWebhookReceiver();
  stack = await startLocalStack({ port: 0 });
  sqs = new SQSClient({ endpoint: `http://127.0.0.1:${stack.emulator.port}` });
});
afterAll(async () => {
  sqs?.destroy();
  await stack?.stop();
  await receiver?.close();
  await new Promise((resolve) => collector?.close(resolve));
  useSpanRecorder(noSpanRecorder);
  if (previousEndpoint === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = previousEndpoint;
});

function callerTrace(flags = '01') {
  const traceId = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex');
  const spanId = Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-${flags}` };
}

const spansOf = (traceId: string) => spans.filter((span) => span.traceId === traceId);
const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((found) => found.key === key)?.value;
  return value && Object.values(value)[0];
};
/** The database the stack runs on, as `db.system` names it. */
const DB_SYSTEM = process.env.LOCAL_DATABASE === 'tsql' ? 'mssql' : 'postgresql';

describe('span export over OTLP/HTTP (CONTRACT 8a)', () => {
  it("exports the request's server span with the answer's ids, in the caller's trace, and its statements", async () => {
    const caller = callerTrace();
    const response = await fetch(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
      headers: { authorization: DEMO_AUTH, traceparent: caller.traceparent },
    });
    expect(response.status).toBe(200);
    const answered = parseTraceparent(response.headers.get('traceparent') ?? undefined)!;
    expect(answered.traceId).toBe(caller.traceId);
    const exported = await until(
      'the request span and its statements',
      async () => spansOf(caller.traceId),
      (found) =>
        found.some((span) => span.kind === KIND.server) && found.some((span) => span.kind === KIND.client),
    );
    const server = exported.find((span) => span.kind === KIND.server)!;
    expect(server).toMatchObject({ spanId: answered.spanId, parentSpanId: caller.spanId });
    expect(server.name).toBe('GET /{tenant}/JsonAPI/Data/getRowsCount/{dataSource}');
    expect(attribute(server, 'http.response.status_code')).toEqual(expect.anything());
    const statements = exported.filter((span) => span.kind === KIND.client);
    for (const statement of statements) {
      expect(statement.parentSpanId).toBe(answered.spanId);
      expect(attribute(statement, 'db.system')).toBe(DB_SYSTEM);
      expect(statement.name).toMatch(/^(SELECT|EXEC \S+|INSERT|UPDATE|DELETE|MERGE|WITH|DECLARE|SET)$/);
    }
    expect([...contentTypes]).toEqual(['application/json']);
  });

  it("getDataAsync: the worker's record span is a child of the queue send, in the caller's trace", async () => {
    const caller = callerTrace();
    const call = await postSigned(stack.url, 'getDataAsync', envelope(1001, [{ ico: '25596641' }]), {
      headers: { traceparent: caller.traceparent },
    });
    expect(call.status).toBe(200);
    const answered = parseTraceparent(call.headers.get('traceparent') ?? undefined)!;
    const exported = await until(
      'the send and the record span',
      async () => spansOf(caller.traceId),
      (found) =>
        found.some((span) => span.kind === KIND.producer) &&
        found.some((span) => span.kind === KIND.consumer && span.name.startsWith('process')) &&
        found.some((span) => span.kind === KIND.server),
      20_000,
    );
    const server = exported.find((span) => span.kind === KIND.server)!;
    expect(server.spanId).toBe(answered.spanId);
    const send = exported.find((span) => span.kind === KIND.producer)!;
    expect(send.parentSpanId).toBe(server.spanId);
    expect(attribute(send, 'messaging.system')).toBe('aws_sqs');
    const record = exported.find((span) => span.kind === KIND.consumer)!;
    expect(record.parentSpanId).toBe(send.spanId);
    // The request's statements under the request, the worker's under the record.
    const statements = exported.filter((span) => span.kind === KIND.client);
    expect(statements.some((span) => span.parentSpanId === server.spanId)).toBe(true);
    const workerStatements = await until(
      "the worker's statements",
      async () =>
        spansOf(caller.traceId).filter(
          (span) => span.kind === KIND.client && span.parentSpanId === record.spanId,
        ),
      (found) => found.length > 0,
    );
    expect(workerStatements.some((span) => span.name.startsWith('EXEC ') || span.name === 'SELECT')).toBe(
      true,
    );
  });

  it("an unsampled caller's trace is propagated but not exported", async () => {
    const unsampled = callerTrace('00');
    const sampled = callerTrace();
    const first = await fetch(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
      headers: { authorization: DEMO_AUTH, traceparent: unsampled.traceparent },
    });
    expect(first.headers.get('traceparent')).toMatch(new RegExp(`^00-${unsampled.traceId}-[0-9a-f]{16}-00$`));
    await fetch(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
      headers: { authorization: DEMO_AUTH, traceparent: sampled.traceparent },
    });
    await until(
      'the sampled request span',
      async () => spansOf(sampled.traceId),
      (found) => found.some((span) => span.kind === KIND.server),
    );
    expect(spansOf(unsampled.traceId)).toEqual([]);
  });

  it('a batch of 10 SQS messages: a batch span with a link to each message, each POST a client span', async () => {
    const subject = await fetch(`${stack.url}/_local/subjects/7/webhook`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/spans`, secret: 'secret-of-subject-7' }),
    });
    expect(subject.status).toBe(200);
    const callers = Array.from({ length: 10 }, () => callerTrace());
    const sent = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: stack.queueUrls.get(DOCUMENT_RECEIVED_QUEUE),
        Entries: callers.map((caller, n) => ({
          Id: `e${n}`,
          MessageBody: documentReceivedMessage({ tenant: 'demo', subjectId: 7, documentId: 7001 + n }),
          MessageGroupId: 'demo',
          MessageAttributes: { traceparent: { DataType: 'String', StringValue: caller.traceparent } },
        })),
      }),
    );
    expect(sent.Failed ?? []).toEqual([]);
    const callerSpans = new Set(callers.map((caller) => `${caller.traceId}-${caller.spanId}`));
    const linksOf = (span: OtlpSpan) =>
      (span.links ?? []).filter((link) => callerSpans.has(`${link.traceId}-${link.spanId}`));
    const batches = await until(
      'the batch spans linking the 10 messages',
      async () => spans.filter((span) => span.kind === KIND.consumer && linksOf(span).length > 0),
      (found) => found.reduce((sum, span) => sum + linksOf(span).length, 0) >= 10,
      20_000,
    );
    // One receive of the 10 (the poller asks for up to 10): one batch span, 10 links.
    expect(batches.map((span) => linksOf(span).length)).toEqual([10]);
    expect(attribute(batches[0]!, 'messaging.batch.message_count')).toEqual(expect.anything());
    // Each record's span is a child of its message's sender, and its POST's span is the traceparent sent.
    const posts = await receiver.waitFor('/spans', 10, 20_000);
    for (const post of posts) {
      const header = parseTraceparent(String(post.headers.traceparent))!;
      const caller = callers.find((found) => found.traceId === header.traceId)!;
      expect(caller).toBeDefined();
      const traced = await until(
        `the spans of ${caller.traceId}`,
        async () => spansOf(caller.traceId),
        (found) => found.some((span) => span.spanId === header.spanId),
      );
      const postSpan = traced.find((span) => span.spanId === header.spanId)!;
      expect(postSpan.kind).toBe(KIND.client);
      const record = traced.find((span) => span.spanId === postSpan.parentSpanId)!;
      expect(record).toMatchObject({ kind: KIND.consumer, parentSpanId: caller.spanId });
    }
  });

  it("webhookAdmin resend: the call's server span, its send, and the resent delivery's record and POST, in the invoker's trace", async () => {
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
      { traceparent: caller.traceparent },
    );
    expect(await invoked.json()).toMatchObject({ ok: true, action: 'resend' });
    // The stack's span for the invoke (its answer's traceparent), as Lambda's service would be.
    const invokeSpan = parseTraceparent(invoked.headers.get('traceparent') ?? undefined)!;
    expect(invokeSpan.traceId).toBe(caller.traceId);
    const [, resent] = await receiver.waitFor('/resent', 2);
    const sent = parseTraceparent(String(resent!.headers.traceparent))!;
    expect(sent.traceId).toBe(caller.traceId);
    const traced = await until(
      'the call, its send, the record and the POST',
      async () => spansOf(caller.traceId),
      (found) =>
        [KIND.server, KIND.producer, KIND.consumer].every((kind) =>
          found.some((span) => span.kind === kind),
        ) && found.some((span) => span.spanId === sent.spanId),
      20_000,
    );
    const call = traced.find((span) => span.kind === KIND.server)!;
    expect(call).toMatchObject({ name: 'webhookAdmin resend', parentSpanId: invokeSpan.spanId });
    expect(attribute(call, 'tenant')).toBe('demo');
    // Its statements under it.
    expect(traced.some((span) => span.kind === KIND.client && span.parentSpanId === call.spanId)).toBe(true);
    const send = traced.find((span) => span.kind === KIND.producer)!;
    expect(send.parentSpanId).toBe(call.spanId);
    const record = traced.find((span) => span.kind === KIND.consumer)!;
    expect(record.parentSpanId).toBe(send.spanId);
    const post = traced.find((span) => span.spanId === sent.spanId)!;
    expect(post).toMatchObject({ kind: KIND.client, parentSpanId: record.spanId });
  });

  it("a change notification's pass span links the integrator's write it announces", async () => {
    const created = await fetch(`${stack.url}/demo/JsonAPI/Subscriptions`, {
      method: 'POST',
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'DOKUMENT', url: `${receiver.url}/document-changes` }),
    });
    expect(created.status).toBe(201);
    await receiver.waitFor('/document-changes', 1, 20_000);
    // An integrator's Web API call that writes a DOKUMENT (a recorded table), in its own trace.
    const caller = callerTrace();
    const cislo = `TRACE-${process.pid}-${Date.now().toString(36)}`;
    const call = await postSigned(
      stack.url,
      'getData',
      envelope(2001, [{ cislo, subject_id: 1, castka: 10 }]),
      { headers: { traceparent: caller.traceparent } },
    );
    expect(call.status).toBe(200);
    const answered = parseTraceparent(call.headers.get('traceparent') ?? undefined)!;
    const linksTheWrite = (span: OtlpSpan) =>
      (span.links ?? []).some((link) => link.traceId === caller.traceId && link.spanId === answered.spanId);
    // The pass that found the change: a span of a trace of its own, with a link to the write.
    const [pass] = await until(
      'a pass span linking the write',
      async () => spans.filter((span) => span.kind === KIND.consumer && linksTheWrite(span)),
      (found) => found.length > 0,
      20_000,
    );
    expect(pass!.traceId).not.toBe(caller.traceId);
    expect(pass!.name).toMatch(/^process .*pass/i);
    // Its table.changed POST is in the pass's trace, the child of a delivery span under the pass.
    const posts = await until(
      "the pass's table.changed POST",
      async () =>
        receiver
          .receivedOn('/document-changes')
          .filter((post) => JSON.parse(post.body).type === 'table.changed')
          .map((post) => parseTraceparent(String(post.headers.traceparent))!)
          .filter((sent) => sent.traceId === pass!.traceId),
      (found) => found.length > 0,
      20_000,
    );
    const postSpans = await until(
      "the POST's span",
      async () => spansOf(pass!.traceId).filter((span) => span.spanId === posts[0]!.spanId),
      (found) => found.length > 0,
    );
    expect(postSpans[0]!.kind).toBe(KIND.client);
  });

  it("npm start keeps the last spans: /_local/traces (npm run trace) shows a request's whole trace", async () => {
    const caller = callerTrace();
    const response = await fetch(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
      headers: { authorization: DEMO_AUTH, traceparent: caller.traceparent },
    });
    const answered = parseTraceparent(response.headers.get('traceparent') ?? undefined)!;
    // By the answer's traceparent, as a developer copies it.
    const kept = await fetch(`${stack.url}/_local/traces?traceId=${response.headers.get('traceparent')}`);
    expect(kept.status).toBe(200);
    const body = (await kept.json()) as { traceId: string; spans: Parameters<typeof traceLines>[0] };
    expect(body.traceId).toBe(caller.traceId);
    const server = body.spans.find((span) => span.kind === 'server');
    expect(server).toMatchObject({ spanId: answered.spanId, parentSpanId: caller.spanId });
    expect(body.spans.some((span) => span.kind === 'client' && span.parentSpanId === answered.spanId)).toBe(
      true,
    );
    const lines = traceLines(body.spans);
    expect(lines[0]).toMatch(/^GET \/\{tenant\}\/JsonAPI\/Data\/getRowsCount\/\{dataSource\} \[server\]/);
    expect(lines.slice(1).every((line) => line.startsWith('  '))).toBe(true);
    expect((await fetch(`${stack.url}/_local/traces?traceId=nope`)).status).toBe(400);
  });

  it('no exported attribute holds a parameter, a secret or a row value', async () => {
    const caller = callerTrace();
    const rows = (await (
      await fetch(`${stack.url}/demo/JsonAPI/Data/getData/SUBJECT`, {
        headers: { authorization: DEMO_AUTH, traceparent: caller.traceparent },
      })
    ).json()) as { SUBJECT: Record<string, unknown>[] };
    // The read's own spans among those checked: the rows it answered passed through them.
    await until(
      'the read and its statements',
      async () => spansOf(caller.traceId),
      (found) =>
        found.some((span) => span.kind === KIND.server) && found.some((span) => span.kind === KIND.client),
    );
    const rowValues = rows.SUBJECT.slice(0, 20)
      .flatMap((row) => Object.values(row))
      .filter((value): value is string => typeof value === 'string' && value.length >= 4);
    expect(rowValues.length).toBeGreaterThan(0);
    const forbidden = [
      'demo-password',
      DEMO_AUTH,
      DEMO_AUTH.slice('Basic '.length),
      'demo-api-hash',
      'secret-of-subject-7',
      '25596641',
      ...rowValues,
    ];
    expect(spans.length).toBeGreaterThan(2);
    for (const span of spans) {
      for (const { key, value } of span.attributes ?? []) {
        const text = JSON.stringify(value);
        for (const secret of forbidden) expect(text, `${span.name}: ${key}`).not.toContain(secret);
      }
      expect(span.name).not.toMatch(/'|@p\d|\bWHERE\b|\bFROM\b/i);
    }
  });
});
