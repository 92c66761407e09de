import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { FauxqsServer } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAwsEmulator } from '../../infra/local/aws-emulator.js';
import { startSqsPoller } from '../../infra/local/sqs-poller.js';

let emulator: FauxqsServer;
let sqs: SQSClient;
beforeAll(async () => {
  const started = await startAwsEmulator();
  emulator = started.emulator;
  sqs = new SQSClient({ endpoint: started.endpoint });
});
afterAll(async () => {
  sqs?.destroy();
  await emulator?.stop();
});

describe('local SQS poller: shutdown', () => {
  it('stops within its grace period while a handler still runs, and leaves that message on the queue', async () => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: 'poller-shutdown', Attributes: { VisibilityTimeout: '1' } }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'job-1' }));
    let started!: () => void;
    const handlerStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    let release!: () => void;
    const poller = startSqsPoller({
      client: sqs,
      queueUrl: QueueUrl!,
      queueArn: 'arn:aws:sqs:local:000000000000:poller-shutdown',
      functionName: 'hangingWorker',
      timeoutSeconds: 60,
      // A job that would run far longer than the shutdown may take.
      handler: async () => {
        started();
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return { batchItemFailures: [] };
      },
    });
    await handlerStarted;
    const stopping = Date.now();
    await poller.stop(300);
    expect(Date.now() - stopping).toBeLessThan(2000);
    // The interrupted job ends later (as a frozen Lambda would never): its message is not deleted.
    release();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const again = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 3 }));
    expect(again.Messages?.map((m) => m.Body)).toEqual(['job-1']);
  });
});

describe('local SQS poller: killed', () => {
  it('abandons the batch in hand as a crashed Lambda: its signal aborted, its result ignored, its message back later', async () => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: 'poller-killed', Attributes: { VisibilityTimeout: '1' } }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'job-1' }));
    let aborted!: (signal: AbortSignal | undefined) => void;
    const handlerAborted = new Promise<AbortSignal | undefined>((resolve) => {
      aborted = resolve;
    });
    let started!: () => void;
    const handlerStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const poller = startSqsPoller({
      client: sqs,
      queueUrl: QueueUrl!,
      queueArn: 'arn:aws:sqs:local:000000000000:poller-killed',
      functionName: 'killedWorker',
      timeoutSeconds: 60,
      // Answers "all done" once its signal is aborted: a live poller would delete the message.
      handler: async (_event, _context, invocation) => {
        started();
        await new Promise<void>((resolve) => invocation?.signal?.addEventListener('abort', () => resolve()));
        aborted(invocation?.signal);
        return { batchItemFailures: [] };
      },
    });
    await handlerStarted;
    expect(poller.busy).toBe(true);
    poller.kill();
    expect((await handlerAborted)?.aborted).toBe(true);
    const again = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl,
        WaitTimeSeconds: 5,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    expect(again.Messages?.map((m) => [m.Body, m.Attributes?.ApproximateReceiveCount])).toEqual([
      ['job-1', '2'],
    ]);
    expect(poller.busy).toBe(false);
  });
});

describe('local SQS poller: the Lambda context', () => {
  it("tells the handler the time really left of the function's time-out, counting down (issue 19: it said 60 s)", async () => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'poller-remaining-time' }));
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'job-1' }));
    const seen: number[] = [];
    let done!: () => void;
    const handled = new Promise<void>((resolve) => {
      done = resolve;
    });
    const poller = startSqsPoller({
      client: sqs,
      queueUrl: QueueUrl!,
      queueArn: 'arn:aws:sqs:local:000000000000:poller-remaining-time',
      functionName: 'timedWorker',
      timeoutSeconds: 7,
      handler: async (_event, context) => {
        seen.push(context.getRemainingTimeInMillis());
        await new Promise((resolve) => setTimeout(resolve, 400));
        seen.push(context.getRemainingTimeInMillis());
        done();
        return { batchItemFailures: [] };
      },
    });
    await handled;
    await poller.stop();
    const [atStart, later] = seen as [number, number];
    expect(atStart).toBeLessThanOrEqual(7_000);
    expect(atStart).toBeGreaterThan(6_000);
    // Time passes for the invocation as it does in Lambda.
    expect(atStart - later).toBeGreaterThanOrEqual(350);
  });
});
