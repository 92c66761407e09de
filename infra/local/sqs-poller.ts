import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { describeError } from '../../shared/core/log.js';
import { serviceLog } from '../../shared/lambda/observability.js';

/**
 * An SQS-triggered handler. The third argument follows middy's convention (`{ signal }`): the
 * local poller aborts that signal when a test kills the invocation; Lambda passes none.
 */
export type SqsLambda = (
  event: SQSEvent,
  context: Context,
  invocation?: { readonly signal?: AbortSignal },
) => Promise<SQSBatchResponse | undefined>;

export interface SqsPoller {
  /**
   * Stops polling and waits up to `graceMs` for the batch in hand; past that the handler is
   * left to its fate (the process is about to end) and its messages stay on the queue.
   */
  stop(graceMs?: number): Promise<void>;
  /** Whether a batch is in a handler's hands now. */
  readonly busy: boolean;
  /**
   * Ends this poller at once, as a crashed Lambda ends: the batch in hand is abandoned (its
   * invocation's signal aborted, its result ignored, its messages neither deleted nor changed,
   * so they come back after their visibility time-out). For fault tests.
   */
  kill(): void;
}

export interface SqsPollerOptions {
  readonly client: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly handler: SqsLambda;
  readonly functionName: string;
  /**
   * The function's time-out (serverless.yml): each invocation's `getRemainingTimeInMillis` counts
   * down from it, as Lambda's does, so that a worker plans with the time it really has.
   */
  readonly timeoutSeconds: number;
  readonly batchSize?: number;
  /** Long-poll wait; short so that stop() is quick. */
  readonly waitTimeSeconds?: number;
}

function toRecord(message: Message, queueArn: string, region: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        { dataType: value.DataType ?? 'String', stringValue: value.StringValue },
      ]),
    ),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/**
 * Feeds an SQS-triggered Lambda handler the way the Lambda event source mapping does: batches of
 * SQS-shaped records; messages listed in `batchItemFailures` (or the whole batch when the handler
 * throws) stay on the queue and come back after their visibility timeout, the rest are deleted.
 */
export function startSqsPoller(options: SqsPollerOptions): SqsPoller {
  const { client, queueUrl, queueArn, handler } = options;
  const region = process.env.AWS_REGION ?? 'eu-central-1';
  const abort = new AbortController();
  let running = true;
  /** Set when stop() gave up waiting or kill(): the batch in hand is left on the queue, not deleted. */
  let abandoned = false;
  /** The invocation in hand, if any. */
  let invocation: AbortController | undefined;

  async function pollOnce(): Promise<void> {
    const received = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: options.batchSize ?? 10,
        WaitTimeSeconds: options.waitTimeSeconds ?? 1,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
      { abortSignal: abort.signal },
    );
    const messages = received.Messages ?? [];
    if (messages.length === 0) return;
    const event: SQSEvent = { Records: messages.map((m) => toRecord(m, queueArn, region)) };
    const deadline = Date.now() + options.timeoutSeconds * 1000;
    const context = {
      awsRequestId: crypto.randomUUID(),
      functionName: options.functionName,
      functionVersion: '$LATEST',
      invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${options.functionName}`,
      memoryLimitInMB: '1024',
      logGroupName: `/aws/lambda/${options.functionName}`,
      logStreamName: 'local',
      callbackWaitsForEmptyEventLoop: false,
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    } satisfies Context;
    let failed: Set<string>;
    invocation = new AbortController();
    try {
      const result = await handler(event, context, { signal: invocation.signal });
      failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (error) {
      if (!abandoned) {
        serviceLog().error('batch failed', { function: options.functionName, ...describeError(error) });
      }
      return;
    } finally {
      invocation = undefined;
    }
    const done = messages.filter((m) => !failed.has(m.MessageId!));
    // Interrupted by shutdown or killed: as when Lambda ends an invocation, the messages come back later.
    if (done.length === 0 || abandoned) return;
    await client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }

  const loop = (async () => {
    while (running) {
      try {
        await pollOnce();
      } catch (error) {
        if (!running) break;
        serviceLog().error('poll failed', { function: options.functionName, ...describeError(error) });
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  })();

  return {
    get busy() {
      return invocation !== undefined;
    },
    kill() {
      running = false;
      abandoned = true;
      abort.abort();
      invocation?.abort();
    },
    async stop(graceMs = Number.POSITIVE_INFINITY) {
      running = false;
      abort.abort();
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<void>((resolve) => {
        if (Number.isFinite(graceMs)) timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([loop, gaveUp]);
      clearTimeout(timer);
      abandoned = true;
    },
  };
}
