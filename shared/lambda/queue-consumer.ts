import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import {
  continueTrace,
  startTrace,
  TRACEPARENT,
  TRACESTATE,
  type TraceContext,
  traceparentOfXRay,
} from '../core/trace-context.js';
import {
  recording,
  recordSpan,
  type SpanLink,
  spanClock,
  spanLinkOf,
  spanRecorder,
} from '../core/tracing.js';
import { flushSpans, startTracing } from './tracing.js';

/** Fields of an invocation that every log line of its records carries. */
export interface Invocation {
  readonly requestId: string | undefined;
  readonly function: string | undefined;
  readonly coldStart: boolean;
  /** The Lambda context, where one was given (the remaining time). */
  readonly context: Context | undefined;
  /** Aborted when the local stack kills the invocation (a fault test); Lambda passes none. */
  readonly signal: AbortSignal | undefined;
}

/** One record's share of the invocation: the invocation's fields, and the record's own span. */
export interface RecordInvocation extends Invocation {
  /**
   * The span of this record's work (CONTRACT 8a): a child of the span that sent the message (its
   * `traceparent` message attribute, else SQS's `AWSTraceHeader`), or a new trace. Its trace id is
   * on each of the record's log lines; what the work sends onwards continues it.
   */
  readonly trace: TraceContext;
  /** Adds links to this record's span (the notifier's pass: the writes it notifies of). */
  link(links: readonly SpanLink[]): void;
}

/** The invocation's fields of a record's log lines, the record's trace id among them. */
export const invocationFields = (invocation: RecordInvocation) => ({
  requestId: invocation.requestId,
  function: invocation.function,
  coldStart: invocation.coldStart,
  traceId: invocation.trace.traceId,
});

/** The `traceparent` a record came with: its message attribute, else SQS's `AWSTraceHeader`. */
function senderTraceparent(record: Pick<SQSRecord, 'messageAttributes' | 'attributes'>): string | undefined {
  return (
    record.messageAttributes?.[TRACEPARENT]?.stringValue ??
    traceparentOfXRay(record.attributes?.AWSTraceHeader)
  );
}

/** The span of a record's work, in the trace of whatever sent it. */
export function recordTrace(record: Pick<SQSRecord, 'messageAttributes' | 'attributes'>): TraceContext {
  const attribute = (name: string) => record.messageAttributes?.[name]?.stringValue;
  const traceparent = attribute(TRACEPARENT);
  return traceparent
    ? continueTrace({ traceparent, tracestate: attribute(TRACESTATE) })
    : continueTrace({ traceparent: traceparentOfXRay(record.attributes?.AWSTraceHeader) });
}

/** The queue's name, from the record's ARN (`arn:aws:sqs:<region>:<account>:<name>`). */
const queueName = (record: SQSRecord) => record.eventSourceARN?.split(':').pop() || 'sqs';

/**
 * The span of the whole batch (CONTRACT 8a): a trace of its own, as a batch mixes messages of
 * unrelated traces, with a link to each record's sender, the way OpenTelemetry's messaging
 * conventions join a batch to the messages it received.
 */
function recordBatchSpan(event: SQSEvent, startTime: number, failed: number): void {
  const links: SpanLink[] = [];
  for (const record of event.Records) {
    const sender = spanLinkOf(senderTraceparent(record));
    if (sender) links.push(sender);
  }
  const first = event.Records[0];
  recordSpan({
    name: `process ${first ? queueName(first) : 'sqs'}`,
    kind: 'consumer',
    context: startTrace(),
    startTime,
    endTime: spanClock(),
    attributes: {
      'messaging.system': 'aws_sqs',
      'messaging.operation.type': 'process',
      'messaging.batch.message_count': event.Records.length,
      ...(first ? { 'messaging.destination.name': queueName(first) } : {}),
    },
    links,
    failed: failed > 0,
  });
}

/** What became of a record: `done` is deleted from its queue; `kept` comes back after its visibility. */
export type RecordOutcome = 'done' | 'kept';

export interface QueueConsumer {
  /** One record: what became of it. A throw keeps it too (and `failed` is told). */
  handle(record: SQSRecord, invocation: RecordInvocation): Promise<RecordOutcome>;
  /** Records with the same key run one after another (copies of one event); others side by side. */
  inOrder?(record: SQSRecord): string | undefined;
  /** A record whose handling threw (it is kept): for the log. */
  failed(record: SQSRecord, error: unknown, invocation: RecordInvocation): void;
}

/** A kept record, as the batch processor learns of it. */
class KeptRecord extends Error {
  override readonly name = 'KeptRecord';
}

/**
 * The one loop of the service's SQS consumers (the change notifier, the receipt webhook, the Web
 * API's jobs): Powertools' `BatchProcessor` with `processPartialResponse`, the records side by
 * side, those kept reported as `batchItemFailures` (the event sources have
 * `ReportBatchItemFailures`), never the whole batch thrown back for a few (`throwOnFullBatchFailure`
 * off: a batch of kept records is answered like any other). A processor per invocation: the local
 * stack runs a function's invocations side by side in one process, and a processor holds its
 * batch's state. A handler names only what one record does.
 */
export function queueConsumer(consumer: QueueConsumer) {
  let coldStart = true;
  return async function consume(
    event: SQSEvent,
    context?: Context,
    // Lambda's runtime passes a callback here (no `signal`); the local stack's poller passes the
    // invocation's abort signal, which a fault test aborts to kill the function.
    options?: { readonly signal?: AbortSignal },
  ): Promise<SQSBatchResponse> {
    const invocation: Invocation = {
      requestId: context?.awsRequestId,
      function: context?.functionName,
      coldStart,
      context,
      signal: options?.signal instanceof AbortSignal ? options.signal : undefined,
    };
    coldStart = false;
    // The SDK comes in with the first batch when tracing is on (tracing.ts), else nothing.
    await startTracing();
    const startTime = spanClock();
    const queued = new Map<string, Promise<unknown>>();
    async function one(record: SQSRecord): Promise<void> {
      // Each record in its own trace: a batch mixes messages of unrelated requests.
      const links: SpanLink[] = [];
      const own: RecordInvocation = {
        ...invocation,
        trace: recordTrace(record),
        link: (more) => {
          links.push(...more);
        },
      };
      const recordStart = recording(own.trace) ? spanClock() : 0;
      let outcome: RecordOutcome | undefined;
      try {
        outcome = await consumer.handle(record, own);
      } catch (error) {
        consumer.failed(record, error, own);
        throw error;
      } finally {
        if (recordStart) recordRecordSpan(record, own.trace, recordStart, outcome !== 'done', links);
      }
      if (outcome === 'kept') throw new KeptRecord(record.messageId);
    }
    async function recordHandler(record: SQSRecord): Promise<void> {
      const key = consumer.inOrder?.(record);
      if (key === undefined) return one(record);
      const turn = (queued.get(key) ?? Promise.resolve()).catch(() => undefined).then(() => one(record));
      queued.set(key, turn);
      return turn;
    }
    const response = await processPartialResponse(event, recordHandler, new BatchProcessor(EventType.SQS), {
      context,
      throwOnFullBatchFailure: false,
    });
    if (spanRecorder().enabled) {
      recordBatchSpan(event, startTime, response.batchItemFailures.length);
      // Before the invocation ends: Lambda freezes the instance once the handler returns.
      await flushSpans();
    }
    return response;
  };
}

/** A record's span: a child of the span that sent its message, its ids those the record's lines carry. */
function recordRecordSpan(
  record: SQSRecord,
  trace: TraceContext,
  startTime: number,
  failed: boolean,
  links: readonly SpanLink[],
): void {
  recordSpan({
    name: `process ${queueName(record)}`,
    kind: 'consumer',
    context: trace,
    startTime,
    endTime: spanClock(),
    attributes: {
      'messaging.system': 'aws_sqs',
      'messaging.operation.type': 'process',
      'messaging.destination.name': queueName(record),
      'messaging.message.id': record.messageId,
    },
    ...(links.length > 0 ? { links } : {}),
    failed,
  });
}
