import type { MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';
import { ServiceError } from '../../core/errors.js';
import { childSpan, type TraceContext, traceHeaders } from '../../core/trace-context.js';
import { recording, recordSpan, spanClock } from '../../core/tracing.js';
import { sqsClient, sqsModule } from './client.js';

/** SQS holds a message back at most 15 minutes. */
export const MAX_DELAY_SECONDS = 900;

/**
 * Sends one message of a tenant's: its `MessageGroupId` the tenant, so that SQS fair queues keep
 * one tenant's burst from delaying the others' (CONTRACT 6). SQS unreachable or refusing: a 503
 * whose message says which queue (`unavailable`), as for a database, so the caller tries again;
 * without it, SQS's own error. Resolves to the message's id.
 */
export async function sendTenantMessage(
  message: {
    readonly queueUrl: string;
    readonly body: string;
    /** None only for a message whose tenant cannot be read (sent on to a dead-letter queue). */
    readonly tenant: string | undefined;
    /** Seconds SQS holds it back (at most 15 minutes). */
    readonly delaySeconds?: number;
    readonly attributes?: Record<string, MessageAttributeValue>;
    /**
     * The sender's span (CONTRACT 8a): the send is a producer span, its child, whose `traceparent`
     * (and the `tracestate`) go as message attributes, so that the consumer's work for the message
     * is a child of the send, in the trace (queue-consumer.ts).
     */
    readonly trace?: TraceContext;
  },
  unavailable?: string,
  client?: SQSClient,
): Promise<string | undefined> {
  const { SendMessageCommand } = await sqsModule();
  const delay = Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.round(message.delaySeconds ?? 0)));
  const send = message.trace && childSpan(message.trace);
  const attributes = send ? { ...traceAttributes(send), ...message.attributes } : message.attributes;
  const startTime = recording(send) ? spanClock() : 0;
  let failed = true;
  try {
    const sent = await (client ?? (await sqsClient())).send(
      new SendMessageCommand({
        QueueUrl: message.queueUrl,
        MessageBody: message.body,
        ...(message.tenant ? { MessageGroupId: message.tenant } : {}),
        ...(attributes ? { MessageAttributes: attributes } : {}),
        ...(delay > 0 ? { DelaySeconds: delay } : {}),
      }),
    );
    failed = false;
    return sent.MessageId;
  } catch (error) {
    if (unavailable === undefined) throw error;
    throw new ServiceError(503, 'queue_unavailable', unavailable, { cause: error });
  } finally {
    if (send && startTime) {
      const queue = message.queueUrl.slice(message.queueUrl.lastIndexOf('/') + 1);
      recordSpan({
        name: `send ${queue}`,
        kind: 'producer',
        context: send,
        startTime,
        endTime: spanClock(),
        attributes: {
          'messaging.system': 'aws_sqs',
          'messaging.operation.type': 'send',
          'messaging.destination.name': queue,
        },
        failed,
      });
    }
  }
}

/** A span's W3C headers as SQS message attributes (two of the ten a message may have). */
function traceAttributes(trace: TraceContext): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(traceHeaders(trace))) {
    attributes[name] = { DataType: 'String', StringValue: value };
  }
  return attributes;
}
