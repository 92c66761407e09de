import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { deliverAttempt, type ReceiverStore } from '../../shared/core/delivery/engine.js';
import type { WebhookRequest } from '../../shared/core/delivery/sender.js';
import { continueTrace, parseTraceparent } from '../../shared/core/trace-context.js';
import { queueConsumer, type RecordInvocation } from '../../shared/lambda/queue-consumer.js';

const traceIdOf = (n: number) => n.toString(16).padStart(32, 'a');
const senderSpan = '00f067aa0ba902b7';

function record(n: number, attributes: Partial<SQSRecord['attributes']> = {}, traced = true): SQSRecord {
  return {
    messageId: `m${n}`,
    receiptHandle: `r${n}`,
    body: '{}',
    attributes: { ApproximateReceiveCount: '1', ...attributes } as SQSRecord['attributes'],
    messageAttributes: traced
      ? {
          traceparent: { dataType: 'String', stringValue: `00-${traceIdOf(n)}-${senderSpan}-01` },
          tracestate: { dataType: 'String', stringValue: `n=${n}` },
        }
      : {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:local:000000000000:q',
    awsRegion: 'local',
  } as SQSRecord;
}

describe('Function: queueConsumer', () => {
  it('runs each record of a batch of 10 in the trace of the span that sent it', async () => {
    // Prepare
    const seen = new Map<string, RecordInvocation['trace']>();
    const consume = queueConsumer({
      async handle(one, invocation) {
        seen.set(one.messageId, invocation.trace);
        return 'done';
      },
      failed: () => undefined,
    });
    const event: SQSEvent = { Records: Array.from({ length: 10 }, (_, n) => record(n + 1)) };
    // Act
    const answer = await consume(event);
    // Assess
    expect(answer.batchItemFailures).toEqual([]);
    for (let n = 1; n <= 10; n++) {
      const trace = seen.get(`m${n}`)!;
      expect(trace.traceId).toBe(traceIdOf(n));
      expect(trace.parentSpanId).toBe(senderSpan);
      expect(trace.tracestate).toBe(`n=${n}`);
    }
    expect(new Set([...seen.values()].map((trace) => trace.spanId)).size).toBe(10);
  });

  it("continues SQS's AWSTraceHeader where no traceparent came, and starts a trace where neither did", async () => {
    // Prepare
    const seen: RecordInvocation['trace'][] = [];
    const consume = queueConsumer({
      async handle(_one, invocation) {
        seen.push(invocation.trace);
        return 'done';
      },
      failed: () => undefined,
    });
    const xray = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
    // Act
    await consume({ Records: [record(1, { AWSTraceHeader: xray }, false)] });
    await consume({ Records: [record(2, {}, false)] });
    // Assess
    expect(seen[0]!.traceId).toBe('5759e988bd862e3fe1be46a994272793');
    expect(seen[0]!.parentSpanId).toBe('53995c3f42cd8ad8');
    expect(seen[1]!.parentSpanId).toBeUndefined();
    expect(parseTraceparent(seen[1]!.traceparent)).toBeDefined();
  });
});

describe('Function: deliverAttempt', () => {
  it("POSTs traceparent of a child of the delivery's span, in its trace, tracestate kept", async () => {
    // Prepare
    const delivery = continueTrace({
      traceparent: `00-${traceIdOf(7)}-${senderSpan}-01`,
      tracestate: 'vendor=x',
    });
    const sent: WebhookRequest[] = [];
    const store: ReceiverStore = {
      record: async () => undefined,
      delivered: async () => undefined,
      slow: async () => undefined,
      failed: async () => false,
    };
    // Act
    const decision = await deliverAttempt(
      {
        attempt: 1,
        url: 'http://127.0.0.1:9/hook',
        health: { failingSince: null, slowSince: null },
        request: (url) => ({ url, headers: { 'content-type': 'application/json' }, body: '{}' }),
      },
      store,
      {
        sender: {
          send: async (request) => {
            sent.push(request);
            return { kind: 'response', status: 200, durationMs: 1 };
          },
        },
        retrySchedule: [1],
        allowPrivateTargets: true,
        disableAfterMs: 1000,
        finalReceive: false,
        trace: delivery,
      },
      { refusalFails: true, goneDisables: true, disablingEnds: true, deliveredOutcome: 'delivered' },
    );
    // Assess
    expect(decision.action).toBe('done');
    const header = parseTraceparent(sent[0]!.headers.traceparent)!;
    expect(header.traceId).toBe(traceIdOf(7));
    expect(header.spanId).not.toBe(delivery.spanId);
    expect(header.spanId).not.toBe(senderSpan);
    expect(sent[0]!.headers.tracestate).toBe('vendor=x');
    expect(sent[0]!.headers['content-type']).toBe('application/json');
  });
});
